"""The parity checklist against real, signed-in agents: ``AGY_HOST_LIVE=1
nox -s parity-live`` (``conftest.py`` collects this module only with
``--live``, and only then finds the targets, :mod:`parity.live`).

Each test is the item of ``test_parity.py`` with the same number, reshaped
for an agent that cannot be scripted: the prompt asks for what the fake was
told to do (say a code word back, call a bridge tool, run ``ls``), and the
assertions read only what the agent answered and what agy-host reported,
never the agent's side of the wire. Each declares the turns it spends
(``live_turns``), counted before the run starts.

Item 16 (spawn, auth and protocol failures) is not here: a healthy,
signed-in agent cannot be made to fail that way without breaking the
user's install or sign-in; the fakes prove it. Item 6 checks the deadline
only (a real agent cannot be made to fall silent), item 14 whichever of
"mapped" and "absent" the agent does.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from parity import test_parity as fake
from parity.live import PONG, LiveAgent, LiveHome, QuotaStop, Target, quota_message
from parity.rigs import OTHER_ENGINE, Run
from parity.test_parity import (
    EXIT_INTERRUPTED,
    EXIT_TIMEOUT,
    _pairs,
    _slug,
    engine_for,
    failed,
    minutes,
    ok,
    run_with_a_human,
    turn_request,
    two_runs_in_a_row,
    two_turns_at_once,
)

LONG = "Write a 3000-word story about a lighthouse keeper, in plain prose."


def said(run: Run) -> str:
    return str(run.end.get("response", ""))


async def drive(home: LiveHome, agent: LiveAgent, requests: list[dict[str, Any]]) -> tuple[list[Any], Any]:
    """Turns of one conversation through the engine's driver in this process
    (item 11): each outcome, and the driver's snapshot at the end."""
    from agy_host.testing.contract import collect, open_driver, outcome_of

    outcomes: list[Any] = []
    async with open_driver(engine_for(home, agent)) as driver:
        for fields in requests:
            conversation = outcomes[-1].conversation_id if outcomes else None
            request = turn_request(home, **fields, conversation_id=conversation)
            outcome = outcome_of(await collect(await driver.run(request), seconds=300))
            stop_on_quota(outcome)
            outcomes.append(outcome)
        return outcomes, driver.snapshot()


def stop_on_quota(outcome: Any) -> None:
    found = quota_message(outcome.error) if outcome.status == "error" else None
    if found:
        raise QuotaStop(found)


def decision(event: dict[str, Any]) -> str:
    """``allowed`` or ``denied``: the kind of the option the policy chose."""
    kinds = {o.get("option_id"): str(o.get("kind", "")) for o in event.get("options", [])}
    return "allowed" if kinds.get(event.get("selected"), "").startswith("allow") else "denied"


@pytest.fixture
def agent(live: Target) -> LiveAgent:
    return LiveAgent(live)


# -- 1 ---------------------------------------------------------------------------


@pytest.mark.live_turns(1)
def test_01_text_streams_as_deltas(live_home: LiveHome, agent: LiveAgent) -> None:
    run = live_home.run("s1", "Count from 1 to 30, one number per line, and nothing else.", agent=agent)
    end = ok(run)
    deltas = [e["delta"] for e in run.of("text")]
    assert len(deltas) >= 2, f"the answer must stream, not arrive whole: {deltas}"
    assert "".join(deltas) == end["response"], run
    assert sum(map(len, deltas)) == len(end["response"]), f"a delta repeated earlier text: {deltas}"


# -- 2 ---------------------------------------------------------------------------


@pytest.mark.live_turns(2)
def test_02_the_next_turn_continues_the_same_agent_conversation(live_home: LiveHome, agent: LiveAgent) -> None:
    remember, ask = (
        "Remember the code word HERON-5518. Reply with just: OK",
        "What was the code word? Reply with just it.",
    )
    _first, second = two_runs_in_a_row(live_home, agent, "s2", remember, ask)
    assert "HERON-5518" in second["response"], "a second host process resumed the conversation, memory and all"


# -- 3 ---------------------------------------------------------------------------


@pytest.mark.live_turns(2)
async def test_03_two_concurrent_turns_on_one_session_never_interleave(live_home: LiveHome, agent: LiveAgent) -> None:
    await two_turns_at_once(
        live_home,
        agent,
        lambda tag: f"Reply with exactly the word {tag.upper()}-TURN.",
        seconds=300,
        check=stop_on_quota,
    )


# -- 4 ---------------------------------------------------------------------------


@pytest.mark.live_turns(1)
def test_04_a_bridge_tool_call_parks_and_its_result_resumes_the_same_turn(
    live_home: LiveHome, agent: LiveAgent
) -> None:
    prompt = (
        'Call the tool host_echo with the arguments {"x": 1}. Then reply with exactly the text it returned, '
        "and nothing else."
    )
    run = live_home.run("s4", prompt, agent=agent)
    end = ok(run)
    uses = run.of("tool_use")
    assert [(u["name"], u["args"]) for u in uses] == [("host_echo", {"x": 1})], run
    assert len(run.of("turn_start")) == len(run.of("turn_end")) == 1, "one agent turn, re-entered after the tool"
    assert "echo" in end["response"] and '"x": 1' in end["response"], run


# -- 5 ---------------------------------------------------------------------------

#: Item 5 and 6's park outlasts this inactivity budget (seconds).
INACTIVE = 30.0


@pytest.mark.live_turns(1)
def test_05_inactivity_is_suspended_while_parked(live_home: LiveHome, agent: LiveAgent) -> None:
    park = int(INACTIVE + 15)
    live_home.configure(
        turn={"inactivity_minutes": minutes(INACTIVE), "timeout_minutes": 10.0},
        bridge={"escalate_after_seconds": park + 60},  # one plain park, no polling
    )
    prompt = (
        f'Call the tool slow_tool with the arguments {{"seconds": {park}}} and wait for it. Then reply with '
        "exactly the text it returned, and nothing else."
    )
    run = live_home.run("s5", prompt, agent=agent)
    end = ok(run)
    assert [u["name"] for u in run.of("tool_use")] == ["slow_tool"], run
    assert f"slow done after {park}" in end["response"], run
    assert end["duration_s"] >= park, "the park outlasted the inactivity budget, and the turn lived"


# -- 6 ---------------------------------------------------------------------------


@pytest.mark.live_turns(1)
def test_06_the_deadline_fails_the_turn_visibly(live_home: LiveHome, agent: LiveAgent) -> None:
    deadline = 8.0
    live_home.configure(turn={"timeout_minutes": minutes(deadline), "inactivity_minutes": 10.0})
    run = live_home.run("s6", LONG, agent=agent)
    end = failed(run, "timeout")
    assert run.returncode == EXIT_TIMEOUT, run
    assert deadline - 0.5 <= end["duration_s"] < deadline + 30, run


# -- 7 ---------------------------------------------------------------------------


@pytest.mark.live_turns(2)
def test_07_the_users_abort_gives_aborted_and_the_next_turn_works(live_home: LiveHome, agent: LiveAgent) -> None:
    aborted = live_home.interrupt(
        ["run", "--format", "json", "--session", "s7", LONG], agent=agent, when=lambda out: '"type":"text"' in out
    )
    assert aborted.returncode == EXIT_INTERRUPTED, aborted
    end = aborted.end
    assert end.get("stop_reason") == "aborted" and not end.get("error_kind"), aborted
    assert end.get("conversation_id"), "the aborted turn's conversation stays bound"
    nxt = ok(live_home.run("s7", PONG, agent=agent))
    assert nxt["conversation_id"] == end["conversation_id"], nxt
    assert "pong" in nxt["response"].lower(), nxt


# -- 8 ---------------------------------------------------------------------------


@pytest.mark.live_turns(4)
def test_08_a_host_restart_resumes_the_right_agent_conversation(live_home: LiveHome, agent: LiveAgent) -> None:
    remember = "Remember the code word {}. Reply with just: OK"
    alpha = ok(live_home.run("alpha", remember.format("ALPHA-1147"), agent=agent))["conversation_id"]
    beta = ok(live_home.run("beta", remember.format("BETA-2290"), agent=agent))["conversation_id"]
    assert alpha and beta and alpha != beta
    ask = "What was the code word? Reply with just the code word."
    # every `agy-host run` is a new host process: these are restarts
    again_beta = ok(live_home.run("beta", ask, agent=agent))
    again_alpha = ok(live_home.run("alpha", ask, agent=agent))
    assert (again_beta["conversation_id"], again_alpha["conversation_id"]) == (beta, alpha)
    assert "BETA-2290" in again_beta["response"] and "ALPHA-1147" in again_alpha["response"]


# -- 9 ---------------------------------------------------------------------------


@pytest.mark.live_turns(2)
def test_09_switching_engine_and_back_keeps_each_engines_binding(live_home: LiveHome, agent: LiveAgent) -> None:
    mine = ok(live_home.run("s9", "Remember the code word NINE-0909. Reply with just: OK", agent=agent))
    other = ok(live_home.run("s9", "elsewhere", "--engine", OTHER_ENGINE, agent=agent))["conversation_id"]
    assert other and other != mine["conversation_id"]
    back = ok(live_home.run("s9", "What was the code word? Reply with just the code word.", agent=agent))
    assert back["conversation_id"] == mine["conversation_id"], "back on the engine: its own conversation"
    assert "NINE-0909" in back["response"], back
    again = ok(live_home.run("s9", "and again", "--engine", OTHER_ENGINE, agent=agent))
    assert again["conversation_id"] == other


# -- 10 --------------------------------------------------------------------------

#: Antigravity's catalog as each engine lists it (item 10 compares them).
_CATALOGS: dict[str, set[tuple[str, str]]] = {}


@pytest.mark.live_turns(1)
def test_10_the_model_catalog_resolves_the_same_ids_and_effort_tiers(
    live: Target, live_home: LiveHome, agent: LiveAgent
) -> None:
    listed = live_home.cli("models", "--format", "json", agent=agent)
    assert listed.returncode == 0, listed
    pairs = _pairs(listed.json())
    assert pairs, f"the agent lists no model: {listed!r}"
    if live.antigravity:
        _CATALOGS[live.name] = pairs
        for name, other in _CATALOGS.items():
            assert other == pairs, f"{name} and {live.name} list Antigravity's models differently"
    model, effort = sorted(pairs, key=lambda p: (not p[1], p))[0]  # a tiered one when there is one
    args = ["--model", model, *(["--effort", effort] if effort else [])]
    ok(live_home.run("s10", PONG, *args, agent=agent))


# -- 11 --------------------------------------------------------------------------


@pytest.mark.live_turns(2)
async def test_11_a_model_or_effort_switch_takes_effect_on_the_next_turn(live_home: LiveHome, agent: LiveAgent) -> None:
    listed = live_home.cli("models", "--format", "json", agent=agent)
    pairs = sorted(_pairs(listed.json()))
    by_model: dict[str, list[str]] = {}
    for model, effort in pairs:
        by_model.setdefault(model, []).append(effort)
    tiered = [(m, e) for m, e in by_model.items() if len(e) > 1]
    if tiered:  # an effort switch on one model
        (model, efforts), *_ = tiered
        first, second = (model, efforts[0]), (model, efforts[1])
    elif len(pairs) > 1:  # a model switch
        first, second = pairs[0], pairs[1]
    else:
        pytest.skip(f"the agent offers one model only ({pairs}): there is nothing to switch to")
    turns = [
        {"text": PONG, "model": first[0], "effort": first[1] or None},
        {"text": PONG, "model": second[0], "effort": second[1] or None},
    ]
    outcomes, snapshot = await drive(live_home, agent, turns)
    assert [o.status for o in outcomes] == ["ok", "ok"], outcomes
    assert outcomes[0].conversation_id == outcomes[1].conversation_id, "the switch kept the conversation"
    applied = " ".join(entry.format() for entry in snapshot.lifecycle)
    assert _slug(*second) in applied or '"reason":"model"' in applied or '"reason":"effort"' in applied, applied


# -- 12 --------------------------------------------------------------------------


@pytest.mark.live_turns(2)
def test_12_the_digest_and_the_system_prompt_reach_the_agent(live_home: LiveHome, agent: LiveAgent) -> None:
    system = "When the user asks for the project code, answer PARITY-7731."
    first = ok(
        live_home.run(
            "s12", "What is the project code? Reply with just the code.", "--system-prompt", system, agent=agent
        )
    )
    assert "PARITY-7731" in first["response"], first
    ok(live_home.run("s12", "The colour of the day is teal.", "--engine", OTHER_ENGINE, agent=agent))
    third = ok(
        live_home.run(
            "s12",
            "Which colour of the day did I mention while you were away? Reply with one word.",
            "--digest",
            agent=agent,
        )
    )
    assert "teal" in third["response"].lower(), "the digest told the agent what happened elsewhere"


# -- 13 --------------------------------------------------------------------------


@pytest.mark.live_turns(1)
def test_13_activate_skill_is_answered_by_the_bridge(live_home: LiveHome, agent: LiveAgent) -> None:
    skill = live_home.cwd / ".agy-host" / "skills" / "parity"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: parity-review\ndescription: how we review\n---\nStep 1: read the diff.\n"
    )
    live_home.configure(bridge={"trusted_projects": [str(live_home.cwd)]})
    prompt = "Use the activate_skill tool to load the skill named parity-review, then reply with its Step 1, verbatim."
    run = live_home.run("s13", prompt, agent=agent)
    end = ok(run)
    assert "read the diff" in end["response"].lower(), run
    assert not run.of("tool_use"), "answered by the bridge itself: the turn never parked"


# -- 14 --------------------------------------------------------------------------


@pytest.mark.live_turns(1)
def test_14_usage_is_mapped_where_reported_and_absent_where_not(live_home: LiveHome, agent: LiveAgent) -> None:
    run = live_home.run("s14", PONG, agent=agent)
    end = ok(run)
    usage = end.get("usage")
    if usage is None:
        assert run.done.get("usage") is None and not run.of("usage"), run
    else:
        assert (usage.get("input_tokens") or 0) > 0 or (usage.get("output_tokens") or 0) > 0, usage
        assert run.of("usage"), "usage is also an event of its own"
        assert run.done.get("usage") == usage, run


# -- 15 --------------------------------------------------------------------------


@pytest.mark.live_turns(1)
def test_15_doctor_shows_connection_state_session_id_stats_and_lifecycle(
    live: Target, live_home: LiveHome, agent: LiveAgent
) -> None:
    cid = ok(live_home.run("s15", PONG, agent=agent))["conversation_id"]
    doctor = live_home.cli("doctor", "--format", "json", agent=agent)
    [last] = [s for s in doctor.json()["sections"] if s["title"] == "last run"]
    rows = {r["label"]: str(r["value"]) for r in last["rows"]}
    assert rows["driver"].startswith(f"{live.engine}: "), rows
    assert rows["session id"] == cid, rows
    assert "turns=1" in rows["stats"], rows
    assert any("lifecycle" in json.dumps(r).lower() for r in last["rows"]), last


# -- 17 --------------------------------------------------------------------------


@pytest.mark.live_turns(4)
def test_17_ask_returns_text_duration_abort_and_timeout_states_and_a_resumable_session(
    live_home: LiveHome, agent: LiveAgent
) -> None:
    answer = live_home.cli("ask", "--format", "json", PONG, agent=agent)
    assert answer.returncode == 0, answer
    doc = answer.json()
    assert doc["status"] == "ok" and "pong" in doc["text"].lower(), answer
    assert doc["duration_s"] > 0 and doc["session"] and doc["conversation_id"], answer
    follow = ok(live_home.run(doc["session"], PONG, "--resume", agent=agent))
    assert follow["conversation_id"] == doc["conversation_id"], "the ask session resumes"

    hung = live_home.cli("ask", "--format", "json", "--timeout", str(minutes(8)), LONG, agent=agent)
    assert hung.json()["status"] == "timeout" and hung.returncode == EXIT_TIMEOUT, hung

    started = time.monotonic()
    aborted = live_home.interrupt(
        ["ask", "--format", "json", LONG], agent=agent, when=lambda _out: time.monotonic() - started > 12
    )
    doc = json.loads(aborted.stdout[aborted.stdout.index("{") :])
    assert doc["status"] == "aborted" and aborted.returncode == EXIT_INTERRUPTED, aborted


# -- 18 --------------------------------------------------------------------------


@pytest.mark.live_turns(1)
def test_18_a_slow_human_answer_to_a_parked_tool_call_cannot_kill_the_turn(
    live_home: LiveHome, agent: LiveAgent
) -> None:
    deadline = 90.0  # room for a cold agent and the model; the human answers after all of it
    live_home.configure(turn={"timeout_minutes": minutes(deadline), "inactivity_minutes": minutes(INACTIVE)})
    prompt = "Use the ask_user tool to ask me exactly this question: Red or blue? Then reply with my answer only."
    run = run_with_a_human(live_home, "s18", prompt, agent, question=b"Red or blue?", after=deadline, answer=b"blue\n")
    end = ok(run)
    assert "blue" in end["response"].lower(), run
    assert end["duration_s"] > deadline, f"the turn outlived its deadline only because it was parked: {run!r}"


# -- 19 --------------------------------------------------------------------------


#: Item 19's policies and the answer each gives, as the fake suite has them.
POLICIES = next(
    m for m in fake.test_19_the_permission_policy_always_answers_and_never_hangs.pytestmark if m.name == "parametrize"
)


@pytest.mark.live_turns(1)
@pytest.mark.parametrize(*POLICIES.args, **POLICIES.kwargs)
def test_19_the_permission_policy_always_answers_and_never_hangs(
    live_home: LiveHome, agent: LiveAgent, args: list[str], answer: str
) -> None:
    prompt = "Run the shell command `ls` in the current directory, then tell me what it printed."
    started = time.monotonic()
    run = live_home.run("s19", prompt, *args, agent=agent)
    assert time.monotonic() - started < COMMAND_SECONDS_19, run
    assert run.end.get("stop_reason") in ("stop", "error"), run
    asked = [e for e in run.of("permission") if e.get("policy")]
    tools = [e for e in run.of("tool") if e.get("status")]
    assert asked or tools, f"the agent ran no command and asked nothing: {run!r}"
    assert all(decision(e) == answer for e in asked), (answer, asked)


#: Item 19's bound: the policy answers at once, so a turn ends within a real turn's time.
COMMAND_SECONDS_19 = 300.0
