"""The parity checklist (``shared/spec/README.md``), one test per item, run
against each engine by name (``conftest.py``).

Each test drives the engine the way a user does: the real ``agy-host`` CLI
in a subprocess with ``--format json``, its config in a private home, the
engine pointed at a fake Antigravity that plays a :class:`~parity.rigs.Script`
(items 3 and 11 drive the engine's driver in-process, because two turns at
once on one session, or two turns on one live agent, are not something one
CLI command does). Nothing here knows which engine it runs; where an engine
cannot do a thing for a genuine reason, the test asserts what the engine
documents instead, never skips.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import trio
from parity.rigs import MODELS, OTHER_ENGINE, Home, Rig, Run, Script

A = "The quick brown fox jumps over the lazy dog. "  # 45 characters: past the resend guard's threshold
B = "Then it rests."
HELLO = [{"say": "HE"}, {"sleep": 0.05}, {"say": "LLO"}]
TICK = {"tick": {"every": 0.1, "text": "tick "}}
EXIT_TIMEOUT = 3
EXIT_INTERRUPTED = 130


def ok(run: Run) -> dict[str, Any]:
    assert run.returncode == 0, run
    assert run.end.get("stop_reason") == "stop", run
    assert run.done.get("exit_code") == 0, run
    return run.end


def failed(run: Run, kind: str | None = None) -> dict[str, Any]:
    end = run.end
    assert run.returncode != 0, run
    assert end.get("stop_reason") == "error", run
    assert end.get("error", "").strip(), f"an error must say what happened: {run!r}"
    if kind is not None:
        assert end.get("error_kind") == kind, run
    assert run.done.get("error"), run
    return end


def minutes(seconds: float) -> float:
    return seconds / 60.0


# -- 1 ---------------------------------------------------------------------------


def test_01_text_streams_as_deltas_and_a_cumulative_resend_is_sliced(rig: Rig, home: Home) -> None:
    agent = rig.agent(Script([[{"say": "Hi. "}, {"sleep": 0.1}, {"resend": [A, A + B]}]]))
    run = home.run("s1", "go", agent=agent)
    end = ok(run)
    deltas = [e["delta"] for e in run.of("text")]
    assert "".join(deltas) == "Hi. " + A + B, run
    assert end["response"] == "Hi. " + A + B, run
    assert len(deltas) >= 2, f"the answer must stream, not arrive whole: {deltas}"
    assert sum(map(len, deltas)) == len(end["response"]), f"a delta repeated earlier text: {deltas}"


# -- 2 ---------------------------------------------------------------------------


def test_02_the_next_turn_continues_the_same_agent_conversation(rig: Rig, home: Home) -> None:
    agent = rig.agent(Script([[{"echo": True}]]))
    first, _second = two_runs_in_a_row(home, agent, "s2", "one", "two")
    # cold, the second host process resumes the conversation; warm, it runs on the live agent
    assert agent.resumed() == resumed(home, first["conversation_id"]), agent.resumed()
    assert [p.rstrip().endswith(w) for p, w in zip(agent.prompts(), ("one", "two"), strict=True)] == [True, True]


def resumed(home: Home, *conversations: str) -> list[str]:
    """What the agent is asked to resume when each of ``conversations`` is
    continued by a new command: each of them cold, none warm (the live agent
    still has them open)."""
    return [] if home.warm else list(conversations)


def two_runs_in_a_row(
    home: Home, agent: Any, session: str, first_prompt: str, second_prompt: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Item 2: two ``agy-host run`` on one session, so two host processes; the
    second continues the first's conversation and its ``turn_start`` says so.
    Both ``turn_end`` events."""
    first = ok(home.run(session, first_prompt, agent=agent))
    second_run = home.run(session, second_prompt, agent=agent)
    second = ok(second_run)
    assert first["conversation_id"] and second["conversation_id"] == first["conversation_id"], second_run
    [start] = second_run.of("turn_start")
    assert start.get("conversation_id") == first["conversation_id"], second_run
    return first, second


# -- 3 ---------------------------------------------------------------------------


async def test_03_two_concurrent_turns_on_one_session_never_interleave(rig: Rig, home: Home) -> None:
    agent = rig.agent(Script([[{"say": "A1 "}, {"sleep": 0.4}, {"say": "A2"}]]))
    await two_turns_at_once(home, agent)
    assert len(agent.prompts()) == 2


async def two_turns_at_once(
    home: Home,
    agent: Any,
    prompt: Callable[[str], str] = str,
    *,
    seconds: float = 60.0,
    check: Callable[[Any], None] = lambda _outcome: None,
) -> None:
    """Item 3 on ``agent``: turns ``a`` and ``b`` (``prompt(tag)``) through one
    driver on one session, ``b`` sent while ``a`` runs; both end ``ok``
    (``check`` sees each outcome first) and ``b`` streams only after ``a`` ended."""
    from agy_host.testing.contract import collect, open_driver, outcome_of

    order: list[str] = []
    async with open_driver(engine_for(home, agent)) as driver:

        async def one(tag: str) -> None:
            acts = await collect(await driver.run(turn_request(home, prompt(tag))), seconds=seconds)
            check(outcome_of(acts))
            order.extend(f"{tag}:{type(act).__name__}" for act in acts)
            assert outcome_of(acts).status == "ok", acts

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, "a")
            await trio.sleep(0.05)
            nursery.start_soon(one, "b")
    texts_b = [i for i, o in enumerate(order) if o == "b:TextActivity"]
    assert texts_b, order
    assert order.index("a:OutcomeActivity") < texts_b[0], f"the second turn streamed before the first ended: {order}"
    assert order.count("a:OutcomeActivity") == order.count("b:OutcomeActivity") == 1, order


def engine_for(home: Home, agent: Any) -> Any:
    """The selected engine, built as the host builds it (by name, from the
    home's config and environment plus the agent's), in this process."""
    from agy_host import config
    from agy_host.engine.base import EngineContext, load_engine_class
    from agy_host.testing.contract import allow_once

    env = home.environ(agent, None)
    warnings: list[str] = []
    cfg = config.load(env=env, warn=warnings.append)
    assert not warnings, warnings
    state = config.state_dir(env)
    state.mkdir(parents=True, exist_ok=True)
    ctx = EngineContext(config=cfg, state_dir=state, decide_permission=allow_once, agent=None, env=env)
    return load_engine_class(home.engine)(ctx)


def turn_request(home: Home, text: str, **fields: Any) -> Any:
    from agy_host.contract.prompt import TextBlock
    from agy_host.engine.driver import TurnRequest

    values: dict[str, Any] = {
        "session": "parity",
        "prompt": [TextBlock(text=text)],
        "cwd": str(home.cwd),
        "timeout_s": 60.0,
        "inactivity_s": 30.0,
    }
    values.update(fields)
    return TurnRequest(**values)


# -- 4 ---------------------------------------------------------------------------


def test_04_a_bridge_tool_call_parks_and_its_result_resumes_the_same_turn(rig: Rig, home: Home) -> None:
    call = {"mcp_call": {"tool": "host_echo", "arguments": {"x": 1}}}
    agent = rig.agent(Script([[{"say": "calling. "}, call, {"say": " done."}]]))
    run = home.run("s4", "go", agent=agent)
    ok(run)
    [tool_use] = run.of("tool_use")
    assert (tool_use["name"], tool_use["args"]) == ("host_echo", {"x": 1}), run
    assert run.text == 'calling. tool result: echo {"x": 1} done.', run
    assert len(run.of("turn_start")) == len(run.of("turn_end")) == 1, "one agent turn, re-entered after the tool"
    assert len(agent.prompts()) == 1, "the result went back into the same agent turn, not a new prompt"


# -- 5 ---------------------------------------------------------------------------


def test_05_inactivity_is_suspended_while_parked_and_rearmed_after(rig: Rig, home: Home) -> None:
    # the bridge's first connection costs seconds (it imports the MCP SDK then);
    # the turn's clocks are held meanwhile, so 3 s is a fair budget even so
    home.configure(turn={"inactivity_minutes": minutes(INACTIVE), "timeout_minutes": minutes(60)})
    slow = {"mcp_call": {"tool": "slow_tool", "arguments": {"seconds": PARK}}}
    agent = rig.agent(Script([[{"say": "a "}, slow, {"say": " b"}, {"hang": True}]]))
    run = home.run("s5", "go", agent=agent)
    end = failed(run, "inactivity")
    assert run.returncode == EXIT_TIMEOUT, run
    assert f"tool result: slow done after {PARK}" in run.text, f"the park tripped the inactivity timer: {run!r}"
    assert end["response"].endswith(" b"), run
    assert end["duration_s"] >= PARK + INACTIVE, "re-armed after the park: it fired a full budget after ' b'"


#: Seconds of the inactivity budget and of the park that outlasts it (items 5 and 18).
INACTIVE = 3.0
PARK = 5


# -- 6 ---------------------------------------------------------------------------


def test_06_deadline_and_inactivity_fail_the_turn_visibly_and_parked_time_does_not_count(rig: Rig, home: Home) -> None:
    from agy_host.config import Config

    assert (Config().turn.timeout_minutes, Config().turn.inactivity_minutes) == (10.0, 5.0), "the documented defaults"
    # 4 s: the agent's start is inside the deadline (a real binary's first start
    # on a loaded runner), and the answer must have begun before it fires
    home.configure(turn={"timeout_minutes": minutes(4.0), "inactivity_minutes": minutes(30)})
    deadline = home.run("s6a", "go", agent=rig.agent(Script([[{"say": "partial "}, TICK]])))
    end = failed(deadline, "timeout")
    assert deadline.returncode == EXIT_TIMEOUT and end.get("response", "").startswith("partial "), deadline
    assert 3.9 <= end["duration_s"] < 17, deadline

    home.configure(turn={"timeout_minutes": minutes(30), "inactivity_minutes": minutes(0.8)})
    silent = home.run("s6b", "go", agent=rig.agent(Script([[{"say": "x"}, {"hang": True}]])))
    failed(silent, "inactivity")
    assert silent.returncode == EXIT_TIMEOUT, silent

    # The unparked part of this turn counts: the agent's start and the bridge's
    # first connection, which imports the MCP SDK (about 1.8 s in all on a quiet
    # machine, over 4 s seen on a loaded CI runner). A park as long as the
    # deadline outlasts whatever budget is left, so the deadline can be the
    # whole 8 s: all of it is room for the unparked part.
    home.configure(turn={"timeout_minutes": minutes(8.0), "inactivity_minutes": minutes(30)})
    slow = {"mcp_call": {"tool": "slow_tool", "arguments": {"seconds": 8}}}
    parked = home.run("s6c", "go", agent=rig.agent(Script([[{"say": "a "}, slow, {"say": " b"}]])))
    end = ok(parked)
    assert end["duration_s"] > 8, "the turn outlived its 8 s deadline only because parked time did not count"
    assert "slow done after 8" in parked.text, parked


# -- 7 ---------------------------------------------------------------------------


def test_07_the_users_abort_gives_aborted_and_the_next_turn_works(rig: Rig, home: Home) -> None:
    agent = rig.agent(Script([[{"say": "working "}, TICK], [{"echo": True}]]))
    aborted = home.interrupt(
        ["run", "--format", "json", "--session", "s7", "go"], agent=agent, when=lambda out: '"type":"text"' in out
    )
    assert aborted.returncode == EXIT_INTERRUPTED, aborted
    end = aborted.end
    assert end.get("stop_reason") == "aborted" and not end.get("error_kind"), aborted
    assert end.get("conversation_id"), "the aborted turn's conversation stays bound"
    after = home.run("s7", "next", agent=agent)
    nxt = ok(after)
    assert nxt["conversation_id"] == end["conversation_id"], after
    assert after.text.rstrip().endswith("next"), after


# -- 8 ---------------------------------------------------------------------------


def test_08_a_host_restart_resumes_the_right_agent_conversation(rig: Rig, home: Home) -> None:
    agent = rig.agent(Script([[{"echo": True}]]))
    alpha = ok(home.run("alpha", "a1", agent=agent))["conversation_id"]
    beta = ok(home.run("beta", "b1", agent=agent))["conversation_id"]
    assert alpha and beta and alpha != beta
    # every `agy-host run` is a new host process: these are restarts
    assert ok(home.run("beta", "b2", agent=agent))["conversation_id"] == beta
    assert ok(home.run("alpha", "a2", agent=agent))["conversation_id"] == alpha
    assert agent.resumed() == resumed(home, beta, alpha), agent.resumed()
    listing = home.cli("sessions", "list", "--format", "json", agent=agent)
    assert listing.returncode == 0, listing
    assert {"alpha", "beta"} <= set(json.dumps(listing.json()).replace('"', " ").split()), listing


# -- 9 ---------------------------------------------------------------------------


def test_09_switching_engine_and_back_keeps_each_engines_binding(rig: Rig, home: Home) -> None:
    agent = rig.agent(Script([[{"echo": True}]]))
    mine = ok(home.run("s9", "one", agent=agent))["conversation_id"]
    other_run = home.run("s9", "two", "--engine", OTHER_ENGINE, agent=agent)
    other = ok(other_run)["conversation_id"]
    assert other and other != mine, other_run
    back = ok(home.run("s9", "three", agent=agent))
    assert back["conversation_id"] == mine, "back on the engine: its own conversation"
    assert agent.resumed() == [mine]
    again = ok(home.run("s9", "four", "--engine", OTHER_ENGINE, agent=agent))
    assert again["conversation_id"] == other
    assert [r["conversation_id"] for r in home.other_requests()] == [None, other]


# -- 10 --------------------------------------------------------------------------


def _pairs(catalog: dict[str, Any]) -> set[tuple[str, str]]:
    """(model, effort) pairs a catalog offers, ``""`` for a model without tiers."""
    out: set[tuple[str, str]] = set()
    for model in catalog["models"]:
        efforts = model.get("efforts") or []
        out |= {(model["id"], e) for e in efforts} if efforts else {(model["id"], "")}
    return out


def _slug(model: str, effort: str) -> str:
    return f"{model}-{effort}" if effort else model


def test_10_the_model_catalog_resolves_the_same_ids_and_effort_tiers(rig: Rig, home: Home) -> None:
    agent = rig.agent(Script([[{"echo": True}]]))
    listed = home.cli("models", "--format", "json", agent=agent)
    assert listed.returncode == 0, listed
    offered = {_slug(m, e) for m, e in _pairs(listed.json())}
    assert offered == {m[0] for m in MODELS}, f"the catalog differs from Antigravity's: {listed!r}"
    for args, slug in (
        (["--model", "gemini-3.7-flash", "--effort", "low"], "gemini-3.7-flash-low"),
        (["--model", "gemini-3.1-pro-high"], "gemini-3.1-pro-high"),
        (["--model", "claude-sonnet-4-6"], "claude-sonnet-4-6"),
    ):
        run = home.run("s10-" + slug, "hi", *args, agent=agent)
        ok(run)
        assert agent.models()[-1] == slug, (args, agent.models(), run)


def test_10_the_model_catalog_lists_ids_and_effort_tiers_in_the_same_shape(rig: Rig, home: Home) -> None:
    listed = home.cli("models", "--format", "json", agent=rig.agent(Script([[{"echo": True}]])))
    assert listed.returncode == 0, listed
    # a model is tiered when Antigravity offers it at more than one effort
    bases = [m[0].rsplit("-", 1)[0] for m in MODELS if m[0].endswith(("-low", "-medium", "-high"))]
    tiered = {b for b in bases if bases.count(b) > 1}
    expected = {
        (m[0].rsplit("-", 1)[0], m[0].rsplit("-", 1)[1]) if m[0].rsplit("-", 1)[0] in tiered else (m[0], "")
        for m in MODELS
    }
    assert _pairs(listed.json()) == expected, f"`agy-host models` differs: {listed.stdout}"


# -- 11 --------------------------------------------------------------------------


async def test_11_a_model_or_effort_switch_takes_effect_on_the_next_turn(rig: Rig, home: Home) -> None:
    from agy_host.testing.contract import collect, open_driver, outcome_of

    agent = rig.agent(Script([[{"echo": True}]]))
    engine = engine_for(home, agent)
    turns = [("gemini-3.8-flash", "high"), ("gemini-3.8-flash", "low"), ("claude-sonnet-4-6", None)]
    conversation = None
    async with open_driver(engine) as driver:
        for i, (model, effort) in enumerate(turns):
            request = turn_request(home, f"turn {i}", model=model, effort=effort, conversation_id=conversation)
            outcome = outcome_of(await collect(await driver.run(request), seconds=60))
            assert outcome.status == "ok", outcome
            conversation = outcome.conversation_id
    assert agent.models() == ["gemini-3.8-flash-high", "gemini-3.8-flash-low", "claude-sonnet-4-6"]
    assert len(set(agent.resumed()) | {conversation}) == 1, "the switches kept the conversation"


# -- 12 --------------------------------------------------------------------------


SYSTEM = "PARITY SYSTEM PROMPT: answer in haiku."


def test_12_the_digest_and_the_system_prompt_reach_the_agent_identically(rig: Rig, home: Home) -> None:
    from agy_host.builtins.digest import DIGEST_PREAMBLE

    agent = rig.agent(Script([[{"echo": True}]]))
    ok(home.run("s12", "first question", "--system-prompt", SYSTEM, agent=agent))
    ok(home.run("s12", "asked elsewhere", "--engine", OTHER_ENGINE, agent=agent))
    ok(home.run("s12", "third question", "--digest", agent=agent))
    first, third = agent.prompts()
    assert first.count(SYSTEM) == 1 and first.rstrip().endswith("first question"), first
    assert first.index(SYSTEM) < first.index("first question"), f"the system prompt leads the first prompt: {first!r}"
    assert SYSTEM not in third, "the system prompt is sent once, at the start of the conversation"
    assert DIGEST_PREAMBLE in third, third
    digest = third[third.index(DIGEST_PREAMBLE) :]
    assert "asked elsewhere" in digest and "other engine answer: asked elsewhere" in digest, third
    assert "first question" not in digest, "the agent's own turns are not in its digest"
    assert third.rstrip().endswith("third question"), third
    _PROMPTS[home.engine] = [first, third]
    for engine, seen in _PROMPTS.items():  # when several engines run in this process
        assert seen == [first, third], f"{engine} and {home.engine} sent different prompts: {seen!r}"


#: The prompts item 12 saw, per engine, for the cross-engine comparison.
_PROMPTS: dict[str, list[str]] = {}


def test_12_a_slash_command_goes_alone_and_the_system_prompt_and_digest_follow(rig: Rig, home: Home) -> None:
    """Agents run a prompt as a command only when its text starts with it:
    nothing of the host's goes in front of ``/context``. The system prompt
    and the digest follow with the next plain prompt (the system prompt may
    ride the engine's own config instead)."""
    from agy_host.builtins.digest import DIGEST_PREAMBLE

    agent = rig.agent(Script([[{"echo": True}]]))
    ok(home.run("s12c", "asked elsewhere", "--engine", OTHER_ENGINE, agent=agent))
    ok(home.run("s12c", "/context", "--system-prompt", SYSTEM, "--digest", agent=agent))
    ok(home.run("s12c", "then this", "--system-prompt", SYSTEM, "--digest", agent=agent))
    ok(home.run("s12c", "/compact keep it short", "--digest", agent=agent))
    command, _, compact = agent.user_texts()
    assert (command, compact) == ("/context", "/compact keep it short"), agent.user_texts()
    prompts = agent.prompts()
    plain = prompts[1]
    assert plain.rstrip().endswith("then this") and DIGEST_PREAMBLE in plain, plain
    assert "asked elsewhere" in plain[plain.index(DIGEST_PREAMBLE) :], "what the command did not carry comes next"
    everything = "".join(prompts)
    assert everything.count(SYSTEM) == 1, f"the system prompt is sent once per conversation: {prompts!r}"
    assert everything.index(SYSTEM) < everything.index("then this"), prompts


# -- 13 --------------------------------------------------------------------------


def test_13_activate_skill_is_answered_by_the_bridge(rig: Rig, home: Home) -> None:
    skill = home.config_dir / "skills" / "parity"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: parity-review\ndescription: how we review\n---\nStep 1: read the diff.\n"
    )
    call = {"mcp_call": {"tool": "activate_skill", "arguments": {"name": "parity-review"}}}
    run = home.run("s13", "go", agent=rig.agent(Script([[call]])))
    ok(run)
    assert run.text.startswith("tool result: Step 1: read the diff."), run
    assert str(skill) in run.text, run
    assert not run.of("tool_use"), "answered by the bridge itself: the turn never parked"


# -- 14 --------------------------------------------------------------------------


def test_14_usage_is_mapped_where_reported_and_absent_where_not(rig: Rig, home: Home) -> None:
    reported = home.run(
        "s14a", "go", agent=rig.agent(Script([[{"say": "U"}, {"usage": {"input": 1200, "output": 34}}]]))
    )
    end = ok(reported)
    usage = end.get("usage") or {}
    assert (usage.get("input_tokens"), usage.get("output_tokens")) == (1200, 34), reported
    assert reported.done.get("usage", {}).get("input_tokens") == 1200, reported
    assert reported.of("usage"), "usage is also an event of its own"
    quiet = Script([[{"say": "no usage here"}]], reports_usage=False)
    plain = home.cli("run", "--session", "s14b", "go", agent=rig.agent(quiet))
    assert plain.returncode == 0, plain
    silent = home.run("s14c", "go", agent=rig.agent(quiet))
    end = ok(silent)
    if end.get("usage") is None:
        assert silent.done.get("usage") is None and not silent.of("usage"), silent
        assert "usage not reported" in plain.stderr, plain
    else:
        pytest.fail(f"an agent that reported no usage got usage {end['usage']!r}: {silent!r}")


# -- 15 --------------------------------------------------------------------------


def test_15_doctor_shows_connection_state_session_id_stats_and_lifecycle(rig: Rig, home: Home) -> None:
    agent = rig.agent(Script([HELLO]))
    cid = ok(home.run("s15", "hi", agent=agent))["conversation_id"]
    doctor = home.cli("doctor", "--format", "json", agent=agent)
    report = doctor.json()
    [last] = [s for s in report["sections"] if s["title"] == "last run"]
    rows = {r["label"]: str(r["value"]) for r in last["rows"]}
    assert rows["driver"].startswith(f"{home.engine}: "), rows  # the connection state
    assert rows["session id"] == cid, rows
    assert "turns=1" in rows["stats"].replace(" ", " "), rows
    assert "s15" in rows["when"], rows
    lifecycle = [label for label in rows if "lifecycle" in label.lower()] + [
        r for r in last["rows"] if "lifecycle" in json.dumps(r).lower()
    ]
    assert lifecycle, f"the lifecycle log is shown: {last!r}"


# -- 16 --------------------------------------------------------------------------


def test_16_spawn_auth_and_protocol_failures_are_visible_with_the_agents_own_message(rig: Rig, home: Home) -> None:
    spawn = home.run("s16a", "go", agent=rig.agent(Script([HELLO], installed=False)))
    end = failed(spawn, "spawn")
    assert "not-installed" in end["error"] and not end.get("response"), spawn

    unsigned = rig.agent(Script([HELLO], signed_in=False))
    auth = home.run("s16b", "go", agent=unsigned)
    end = failed(auth, "auth")
    assert unsigned.auth_message in end["error"], auth
    assert not end.get("response"), auth

    message = "fake agent: the frame was refused (parity)"
    broken = home.run("s16c", "go", agent=rig.agent(Script([[{"say": "E"}, {"fail": message}]])))
    end = failed(broken)
    assert message in end["error"], broken


# -- 17 --------------------------------------------------------------------------


def test_17_ask_returns_text_duration_abort_and_timeout_states_and_a_resumable_session(rig: Rig, home: Home) -> None:
    agent = rig.agent(Script([HELLO, [{"echo": True}]]))
    answer = home.cli("ask", "--format", "json", "question", agent=agent)
    assert answer.returncode == 0, answer
    doc = answer.json()
    assert (doc["status"], doc["text"]) == ("ok", "HELLO"), answer
    assert doc["duration_s"] > 0 and doc["session"] and doc["conversation_id"], answer
    follow = ok(home.run(doc["session"], "follow up", "--resume", agent=agent))
    assert follow["conversation_id"] == doc["conversation_id"], "the ask session resumes"

    home.configure(turn={"inactivity_minutes": minutes(30)})
    hung = home.cli(
        "ask", "--format", "json", "--timeout", str(minutes(1.5)), "q", agent=rig.agent(Script([[{"hang": True}]]))
    )
    assert hung.json()["status"] == "timeout" and hung.returncode == EXIT_TIMEOUT, hung

    ticking = rig.agent(Script([[{"say": "busy "}, TICK]]))
    aborted = home.interrupt(["ask", "--format", "json", "q"], agent=ticking, when=lambda _out: bool(ticking.prompts()))
    doc = json.loads(aborted.stdout[aborted.stdout.index("{") :])
    assert doc["status"] == "aborted" and aborted.returncode == EXIT_INTERRUPTED, aborted


# -- 18 --------------------------------------------------------------------------


def test_18_a_slow_human_answer_to_a_parked_tool_call_cannot_kill_the_turn(rig: Rig, home: Home) -> None:
    deadline = 8.0  # all of it room for the unparked part (agent start, the bridge's first connection), as in item 6
    home.configure(
        turn={"timeout_minutes": minutes(deadline), "inactivity_minutes": minutes(INACTIVE)},
        bridge={"escalate_after_seconds": 0.5},  # the agent is told "still running" and polls
    )
    ask = {"mcp_call": {"tool": "ask_user", "arguments": {"question": "Red or blue?"}, "poll_interval": 0.2}}
    agent = rig.agent(Script([[{"say": "asking. "}, ask]]))
    # The human answers once both timers would have fired had the park counted:
    # the wait is timed from the question on the terminal, not from the start.
    run = run_with_a_human(home, "s18", "go", agent, question=b"Red or blue?", after=deadline, answer=b"blue\n")
    end = ok(run)
    assert "tool result: The user answered: blue" in run.text, run
    assert end["duration_s"] > deadline, f"the turn outlived its deadline only because it was parked: {run!r}"


def run_with_a_human(
    home: Home, session: str, prompt: str, agent: Any, *, question: bytes, after: float, answer: bytes
) -> Run:
    """One turn with a person at its terminal (a pseudo-terminal) who answers
    ``answer`` ``after`` seconds once ``question`` shows."""
    master, slave = pty.openpty()
    human = threading.Thread(target=answer_when_asked, args=(master, question, after, answer))
    try:
        human.start()
        return home.run(session, prompt, agent=agent, env={"AGY_HOST_TTY": os.ttyname(slave)})
    finally:
        os.close(slave)
        os.close(master)  # ends the human's read if the question never came
        human.join(timeout=30)


def answer_when_asked(master: int, question: bytes, after: float, answer: bytes) -> None:
    """Read the terminal until ``question`` shows, then answer ``after`` seconds later."""
    seen = b""
    while question not in seen:
        try:
            data = os.read(master, 4096)
        except OSError:
            return
        if not data:
            return
        seen = (seen + data)[-4096:]
    time.sleep(after)
    with contextlib.suppress(OSError):
        os.write(master, answer)


# -- 19 --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "answer"),
    [
        (["--permissions", "deny"], "denied"),
        (["--permissions", "ask"], "denied"),  # no terminal: the ask policy cannot ask, so it says no
        (["--permissions", "auto"], "allowed"),
        (["--skip-permissions"], "allowed"),
    ],
    ids=["deny", "ask-without-terminal", "auto", "skip-permissions"],
)
def test_19_the_permission_policy_always_answers_and_never_hangs(
    rig: Rig, home: Home, args: list[str], answer: str
) -> None:
    agent = rig.agent(Script([[{"permission": True}, {"say": " end"}]]))
    started = time.monotonic()
    run = home.run("s19", "go", *args, agent=agent, timeout=40)
    assert time.monotonic() - started < 30, run
    assert run.end.get("stop_reason") in ("stop", "error"), run
    answers = agent.permission_answers()
    assert answers, f"the agent's permission request went unanswered: {run!r}"
    if home.engine == "stream-json" and args == ["--permissions", "auto"]:
        # documented (docs/engines/stream-json.md): agy cannot ask in stream-json mode, so
        # without --skip-permissions it denies such tools itself, whatever the host's policy
        answer = "denied"
    assert answers == [answer], (answers, run)
    shown = [e for e in run.of("permission") if e.get("policy")] + [e for e in run.of("tool") if e.get("status")]
    assert shown, f"the decision is shown to the user (a permission or tool card): {run!r}"
    assert run.text.endswith(" end"), f"the agent went on after the answer: {run!r}"


# -- 20 --------------------------------------------------------------------------


def test_20_a_conversation_the_agent_lost_fails_under_resume_and_is_replaced_without(rig: Rig, home: Home) -> None:
    """Resume or fail, the same on every engine: ``--resume`` of a conversation
    the agent no longer has exits 4 (``no_session``, the agent's reason);
    without it the turn runs on a new conversation and says which it lost."""
    from agy_host.testing.acp.scenario import FORGOTTEN_CONVERSATION as LOST

    agent = rig.agent(Script([[{"echo": True}]]))
    ok(home.run("s20", "one", agent=agent))
    home.rebind("s20", LOST)
    refused = home.run("s20", "two", "--resume", agent=agent)
    assert refused.returncode == 4 and refused.done.get("exit_code") == 4, refused
    assert refused.end.get("error_kind") == "no_session" and LOST in refused.end.get("error", ""), refused
    assert not refused.text, f"nothing ran on another conversation: {refused!r}"
    fresh = home.run("s20", "three", agent=agent)
    end = ok(fresh)
    assert end.get("replaced_conversation_id") == LOST and end.get("conversation_id") not in (None, LOST), fresh
    replaced = [n for n in fresh.of("notice") if n.get("code") == "conversation-replaced"]
    assert len(replaced) == 1 and LOST in replaced[0]["message"], fresh
    assert fresh.text.endswith("three"), fresh
    again = ok(home.run("s20", "four", "--resume", agent=agent))
    assert again["conversation_id"] == end["conversation_id"], "the new conversation is the session's now"
