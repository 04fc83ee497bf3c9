"""The docs' shell examples, run as written on the real agents
(``catalogue.BLOCKS`` says which block runs where): the harness page's
offline recipe, install check and commands; the sessions page's warm
session, its steering commands and its list and prune; the JSON events
page's stream and ``jq`` lines; the busy-session notice of the usage page;
the ACP page's commands on the sandbox and the Gemini CLI; the bridge
page's question on fast-agent, answered by a person at a terminal.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from doc_blocks import REPO_ROOT, blocks
from interop.provision import FastAgent
from interop.provision_gemini import GeminiCli
from newcomer.place import Place, missing
from newcomer.shell import commands, find, installed, without_comment

Places = Callable[..., Place]
HARNESS_INSTALL = ("docs/engines/harness.md", "pip install ./core ./plugins/harness_engine")
ECHO = {"turns": [[[{"echo": True}]]]}


def harness_place(place: Places, binary: str, script: dict[str, Any], *, warm: bool = False) -> Place:
    """A place with the harness as its page installs it, and ``script`` for its model."""
    home = place(installed(find(*HARNESS_INSTALL)), warm=warm)
    home.harness(binary, home.model(script))
    return home


def agy_lines(page: str, first: str) -> list[str]:
    """The block's ``agy-host`` command lines, as written."""
    return [line for line in commands(find(page, first)) if line.startswith("agy-host ")]


def status(home: Place) -> dict[str, dict[str, Any]]:
    """``sessions status --format json``'s sessions, by name."""
    shown = json.loads(home.ok("agy-host sessions status --format json").stdout)
    return {s["session"]: s for s in shown["sessions"]}


def keeper_log(home: Place) -> str:
    """What the keeper said (why it started an agent cold)."""
    log = home.home / ".local" / "state" / "agy-host" / "keeper.log"
    return log.read_text() if log.exists() else "(no keeper log)"


def wait_until(what: str, check: Callable[[], bool], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {seconds:.0f}s"
        time.sleep(0.1)


# ---------------------------------------------------------------------------
# docs/engines/harness.md
# ---------------------------------------------------------------------------


def test_the_harness_runs_offline_as_its_page_shows(place: Places, harness_binary: str) -> None:
    """The whole block, pasted into a shell: the scripted model starts in
    the background, its port is configured, the real harness answers
    "hello", and the model API is stopped."""
    block = find("docs/engines/harness.md", "port=$(mktemp)")
    home = place(installed(find(*HARNESS_INSTALL)))
    home.env["ANTIGRAVITY_HARNESS_PATH"] = harness_binary  # where `agy-host harness install` puts it
    ran = home.run(block.code)
    assert ran.returncode == 0, ran
    assert ran.stdout.splitlines()[-1] == "hello", ran
    assert "harness.base_url = http://127.0.0.1:" in ran.stdout, ran


def test_the_harness_install_block(place: Places, harness_binary: str) -> None:
    """``agy-host harness status`` names the binary the engine runs and where it came from."""
    home = harness_place(place, harness_binary, ECHO)
    [status_line] = [line for line in agy_lines(*HARNESS_INSTALL) if "harness install" not in line]
    ran = home.run(status_line)
    assert ran.returncode == 0 and harness_binary in ran.stdout and "ANTIGRAVITY_HARNESS_PATH" in ran.stdout, ran


def test_the_harness_pages_commands(place: Places, harness_binary: str) -> None:
    """A turn; a turn on another model and effort, which the model API is
    asked for; and the configured models, folded by effort tier."""
    home = harness_place(place, harness_binary, ECHO)
    turn, other_model, models = (
        home.run(line)
        for line in agy_lines("docs/engines/harness.md", 'agy-host run --engine harness "fix the failing test"')
    )
    assert turn.returncode == 0 and turn.stdout.strip() == "fix the failing test", turn
    assert other_model.returncode == 0 and other_model.stdout.strip() == "explain this module", other_model
    [asked] = [r for r in home.models[0].requests() if r["user_text"] == "explain this module"]
    assert asked["model"] == "gemini-3.8-pro", asked
    assert "high" in json.dumps(asked["body"].get("generationConfig", {})).lower(), asked["body"]
    assert models.returncode == 0 and "gemini-3.8-flash  efforts: low, medium, high" in models.stdout, models


# ---------------------------------------------------------------------------
# docs/sessions.md
# ---------------------------------------------------------------------------


def test_a_warm_session_as_the_sessions_page_shows_it(place: Places, harness_binary: str) -> None:
    """Each line does what its comment says: the first starts the agent and
    it stays warm, the next runs on the same one, ``--keep-alive 30`` keeps
    it 30 minutes, ``--keep-alive 0`` ends it, ``chat`` (at a terminal) and
    ``ask`` run on the new warm one, and an unnamed run keeps nothing."""
    home = harness_place(place, harness_binary, ECHO, warm=True)
    read, fix, keep, cold, chat, ask, one_off = agy_lines(
        "docs/sessions.md", 'agy-host run --session work "read the failing test"'
    )
    assert home.run(read).returncode == 0
    first = status(home)["work"]
    assert first["warm"], first
    assert home.run(fix).returncode == 0
    assert status(home)["work"]["agent_pid"] == first["agent_pid"], "not the same live agent"
    assert home.run(keep).returncode == 0
    assert status(home)["work"]["keep_alive_s"] == 1800, status(home)
    ran = home.run(cold)
    assert ran.returncode == 0 and ran.stdout.strip() == "...", ran
    assert not status(home).get("work", {}).get("warm"), "--keep-alive 0 left a warm agent"
    pane = home.pane(chat)
    home.shows(pane, r"Ctrl-D leaves")
    pane.type("are the tests green?")
    home.shows(pane, r"(?m:^are the tests green\?$)")
    pane.type("/exit")
    pane.wait_for(r"\[exit 0\]")
    warm = status(home)["work"]
    assert warm["warm"], "the chat's agent did not stay warm"
    ran = home.run(ask)
    assert ran.returncode == 0 and "is it fixed?" in ran.stdout, ran
    again = status(home)["work"]
    assert again["agent_pid"] == warm["agent_pid"], f"ask did not run on the warm agent\n{keeper_log(home)}"
    assert home.run(one_off).returncode == 0
    assert list(status(home)) == ["work"], "the unnamed run kept something"


def test_warm_agents_are_seen_and_steered_as_the_sessions_page_shows(place: Places, harness_binary: str) -> None:
    """While ``work`` runs a long turn: ``sessions status`` shows it running,
    its JSON form says so, ``sessions cancel work`` ends that turn (its
    command exits 130), ``sessions stop work`` ends the warm agent and
    ``stop --all`` the rest."""
    script = {"rules": [{"match": "long story", "replies": [[{"text": "Once"}, {"hang": True}]]}], **ECHO}
    home = harness_place(place, harness_binary, script, warm=True)
    long_turn = 'agy-host run --session work "write a long story"'
    running = home.start(long_turn)
    wait_until("the long turn runs", lambda: status(home).get("work", {}).get("turn_running") is True)
    show, show_json, cancel, stop, stop_all = agy_lines("docs/sessions.md", "agy-host sessions status")
    ran = home.run(show)
    assert ran.returncode == 0 and re.search(r"work: warm, harness .*running", ran.stdout), ran
    ran = home.run(show_json)
    assert ran.returncode == 0, ran
    [work] = json.loads(ran.stdout)["sessions"]
    assert (work["session"], work["warm"], work["turn_running"]) == ("work", True, True), work
    ran = home.run(cancel)
    assert ran.returncode == 0, ran
    ended = running.finish()
    assert ended.returncode == 130 and ended.stdout.startswith("Once"), ended
    ran = home.run(stop)
    assert ran.returncode == 0 and not status(home).get("work", {}).get("warm"), ran
    assert home.run(stop_all).returncode == 0


def test_sessions_are_listed_and_pruned_as_the_sessions_page_shows(place: Places, harness_binary: str) -> None:
    """After a named session and six unnamed runs: the list shows the
    named one and the 5 latest unnamed, ``--all`` every one, ``--cwd .``
    those run here, ``--agent gemini`` none (this is the harness); prune
    finds nothing a week, or a day, old."""
    home = harness_place(place, harness_binary, ECHO)
    home.ok('agy-host run --session work "hi"')
    for n in range(6):
        home.ok(f'agy-host run "run {n}"')
    listed, every, here, gemini, dry, prune = (
        home.run(line) for line in agy_lines("docs/sessions.md", "agy-host sessions list")
    )
    rows = [line.split()[0] for line in listed.stdout.splitlines()[1:]]
    assert listed.returncode == 0 and "work" in rows and len(rows) == 6, listed
    assert "1 older unnamed" in listed.stderr, listed
    assert every.returncode == 0 and len(every.stdout.splitlines()) == 8, every
    assert here.returncode == 0 and sorted(here.stdout.splitlines()) == sorted(listed.stdout.splitlines()), here
    assert gemini.returncode == 0 and gemini.stdout.strip() == "no sessions match", gemini
    assert dry.returncode == 0 and "more than 7d ago; nothing to remove" in dry.stdout, dry
    assert prune.returncode == 0 and "more than 1d ago; nothing to remove" in prune.stdout, prune
    assert len(home.ok("agy-host sessions list --all").stdout.splitlines()) == 8, "prune removed what was not old"


# ---------------------------------------------------------------------------
# docs/json-events.md and docs/usage.md
# ---------------------------------------------------------------------------


def test_the_json_events_are_the_ones_shown(place: Places, harness_binary: str) -> None:
    """The page's example stream: the same events in the same order, each
    with at least the fields shown (values are the run's own). Then its two
    ``jq`` lines print the answer and the exit code."""
    script = {"turns": [[[{"text": ["Hi", " there."]}, {"usage": {"input": 1000, "output": 4}}]]]}
    home = harness_place(place, harness_binary, script)
    block = find("docs/json-events.md", 'agy-host run --format json --session demo "say hi"')
    shown = [json.loads(line) for line in block.code.splitlines() if line.startswith("{")]
    [line] = commands(block)
    ran = home.run(line)
    assert ran.returncode == 0, ran
    events = joined([json.loads(line) for line in ran.stdout.splitlines()])
    assert [e["type"] for e in events] == [e["type"] for e in joined(shown)], ran
    for mine, doc in zip(events, joined(shown), strict=True):
        assert set(doc) <= set(mine), f"{doc['type']}: the page shows {sorted(set(doc) - set(mine))} it lacks\n{ran}"
    no_jq = missing("jq")
    if no_jq:
        pytest.skip(f"{no_jq} (the stream matched the page's)")
    answer, exit_code = (home.run(line) for line in agy_lines(*_JQ))
    assert answer.returncode == 0 and answer.stdout == "Hi there.", answer
    assert exit_code.returncode == 0 and exit_code.stdout == "0\n", exit_code


def joined(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``events`` with each run of text deltas as one: how an answer is cut
    into deltas is the agent's (the harness computes its own)."""
    out: list[dict[str, Any]] = []
    for event in events:
        if event["type"] == "text" and out and out[-1]["type"] == "text":
            out[-1] = {**out[-1], "delta": out[-1]["delta"] + event["delta"]}
        else:
            out.append(event)
    return out


_JQ = ("docs/json-events.md", 'agy-host run --format json "…" | jq -j \'select(.type == "text") | .delta\'')


def test_a_busy_session_says_what_it_waits_for(place: Places, harness_binary: str) -> None:
    """A second command on a session whose turn runs says what it waits
    for, in the words the usage page shows, then runs once the first ends."""
    script = {"rules": [{"match": "fix the test", "replies": [[{"text": "Fixing"}, {"hang": True}]]}], **ECHO}
    home = harness_place(place, harness_binary, script)
    block = find("docs/usage.md", 'agy-host run --session work "and the docs"')
    [line] = commands(block)
    holder = home.start("agy-host run --session work 'fix the test'")
    model = home.models[0]
    wait_until(
        "the first turn reaches the model", lambda: any(r["user_text"] == "fix the test" for r in model.requests())
    )
    second = home.start(line)
    wait_until("the second command says it waits", lambda: "is busy" in second.stderr())
    holder.interrupt()
    first = holder.finish()
    ran = second.finish()
    assert first.returncode == 130, first
    shown = next(out for out in block.code.splitlines() if out.startswith("agy-host: "))
    pattern = re.escape(shown).replace("41230", r"\d+").replace(r"12\.4", r"[\d.]+")
    assert re.search(pattern, ran.stderr), f"the page shows:\n{shown}\n{ran}"
    assert ran.returncode == 0 and ran.stdout.strip() == "and the docs", ran


# ---------------------------------------------------------------------------
# docs/engines/acp.md and docs/bridge.md
# ---------------------------------------------------------------------------


def test_the_acp_pages_commands(place: Places, gemini_cli: GeminiCli) -> None:
    """After the page's install: a turn on the sandbox (no ACP agent
    installed), the Gemini CLI named by its command and by the page's own
    profile (its TOML block, pasted into the config), and a named session."""
    block = find("docs/engines/acp.md", "pip install ./core ./plugins/acp_engine")
    home = place(installed(block))
    model = home.model({"rules": [{"match": "(?m)^hi$", "replies": [[{"text": "Hello from Gemini."}]]}]})
    home.gemini(gemini_cli.script, model)
    [profiles] = [b for b in blocks(REPO_ROOT / "docs" / "engines" / "acp.md") if "[acp.profiles.gemini]" in b.code]
    config = home.home / ".config" / "agy-host" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(profiles.code + "\n")
    readme_line = 'agy-host run --agent "gemini --acp" "hi"'
    assert readme_line in {without_comment(line) for line in commands(block)}, "the README's line, run here"
    sandbox, by_command, by_profile, session = (
        home.run(line) for line in agy_lines(block.where.rsplit(":", 1)[0], "pip install ./core ./plugins/acp_engine")
    )
    assert sandbox.returncode == 0 and "sandbox agent" in sandbox.stderr, sandbox
    for ran in (by_command, by_profile):
        assert ran.returncode == 0 and ran.stdout.strip() == "Hello from Gemini.", ran
    assert session.returncode == 0 and "session: work" in session.stderr, session


def test_the_bridges_question_reaches_the_person_at_the_terminal(place: Places, fast_agent: FastAgent) -> None:
    """The bridge page's install and command, fast-agent the agent: its
    model calls the bridge's ``agy_host_ask_user``; fast-agent's permission
    request for it goes to no policy (a question is not a tool permission);
    the person answers at the terminal; the model is told the answer."""
    block = find("docs/bridge.md", "pip install ./core ./plugins/acp_engine ./plugins/bridge_mcp")
    home = place(installed(block))
    question = {"question": "Which branch should I use?"}
    call = {"call": {"name": "agy-host-bridge__agy_host_ask_user", "args": question}}
    model = home.model({"rules": [{"match": "which branch", "replies": [[call], [{"tool_result": True}]]}]})
    home.fast_agent(fast_agent.executable, model)
    home.ok('agy-host config set acp.agent "fast-agent --no-update-check acp"')
    [line] = agy_lines("docs/bridge.md", "pip install ./core ./plugins/acp_engine ./plugins/bridge_mcp")
    pane = home.pane(line)
    home.shows(pane, "Which branch should I use\\?", timeout=90)
    pane.type("release-2")
    shown = pane.wait_for(r"\[exit \d+\]", timeout=60)
    assert "[exit 0]" in shown and "release-2" in shown.split("Which branch should I use?", 1)[1], shown
    assert "asks for permission" not in shown, f"the question was put to the permission policy\n{shown}"
