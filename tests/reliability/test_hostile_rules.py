"""Hostile answer rules, answers files and answers (issue 28 items 4, 9, 10):
the real ``agy-host run`` against the kit's fake ACP agent.

* item 4: a glob bomb or too many rules in ``--answers``, ``[[answer]]`` or
  ``[[permissions.rules]]`` is a usage error (exit 2) before any agent
  starts, and long matching never makes SIGTERM wait;
* item 9: ``--answers`` reads a regular file of bounded size only, and says
  why it refuses anything else (exit 2);
* item 10: an answer that breaks the form's schema is never sent: the
  question is unanswered, with the reason, and the turn exits 5.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from acp_cli import agy_host, asking, run_turn

from agy_host.service.globs import MAX_MATCHED_CHARS
from agy_host.testing.agents import FakeAgent, fake_acp_agent_command
from agy_host.testing.isolation import isolated_env

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")

HAPPY = {"prompt": [{"chunk": "HELLO"}, {"stop": "end_turn"}]}

FORM = {
    "sessionId": "<session>",
    "mode": "form",
    "message": "Push now?",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "force": {"type": "boolean", "title": "Force push"},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 5},
        },
        "required": ["force"],
    },
}


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "home" / ".config" / "agy-host" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def elicited(agent: FakeAgent) -> list[dict[str, Any]]:
    """What the agent got back for its elicitations, in order."""
    return [m["result"] for m in agent.received() if isinstance(m.get("result"), dict) and "action" in m["result"]]


def started(agent: FakeAgent) -> bool:
    return bool(agent.requests("initialize"))


# -- item 4: glob bombs and rule floods ----------------------------------------------------------


def test_a_glob_bomb_in_an_answers_file_is_exit_2_before_the_agent_starts(tmp_path: Path) -> None:
    agent = fake_acp_agent_command(HAPPY, workdir=tmp_path / "agents")
    rules = tmp_path / "answers.json"
    rules.write_text(json.dumps([{"field": "x", "value": 1}, {"title": "[" * 100_000, "value": "y"}]))
    started_at = time.monotonic()
    proc = run_turn(tmp_path, agent, "--answers", str(rules))
    assert proc.returncode == 2, proc.stderr
    assert f"the answers file {rules}: rule 2: title: a glob of 100,000 characters (at most 1,000" in proc.stderr
    assert not started(agent), "no agent starts for rules that cannot be used"
    assert time.monotonic() - started_at < 30  # sanity: compiling it is linear now


def test_a_glob_bomb_in_the_configs_rules_is_exit_2_before_the_agent_starts(tmp_path: Path) -> None:
    agent = fake_acp_agent_command(HAPPY, workdir=tmp_path / "agents")
    config = write_config(
        tmp_path,
        f'[permissions]\npolicy = "rules"\n\n[[permissions.rules]]\naction = "deny"\nkind = "{"[" * 100_000}"\n',
    )
    proc = run_turn(tmp_path, agent)
    assert proc.returncode == 2, proc.stderr
    assert f"[[permissions.rules]] in {config}: rule 1: kind: a glob of 100,000 characters" in proc.stderr
    assert not started(agent)
    config.write_text(f'[[answer]]\ntitle = ["ok", "{"*?" * 600}"]\nvalue = "y"\n')
    proc = run_turn(tmp_path, agent, "--format", "json")
    assert proc.returncode == 2, proc.stderr
    assert f"[[answer]] in {config}: rule 1: title: 2 globs of 1,202 characters" in proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1])["exit_code"] == 2, "a JSON consumer still gets its closing line"
    assert not started(agent)


def test_a_hundred_thousand_rules_are_refused_with_the_bound_and_a_thousand_work(tmp_path: Path) -> None:
    agent = fake_acp_agent_command(asking(FORM), workdir=tmp_path / "agents")
    config = write_config(tmp_path, '[[permissions.rules]]\naction = "allow"\nname = "t*"\n' * 100_000)
    proc = run_turn(tmp_path, agent)
    assert proc.returncode == 2, proc.stderr
    assert f"[[permissions.rules]] in {config}: 100,000 rules (at most 1,000" in proc.stderr
    assert not started(agent)
    config.unlink()
    # at the bound the list works: the last of 1,000 rules answers the form
    rules = [{"title": f"Other question {i}*", "field": "force", "value": False} for i in range(999)]
    rules.append({"title": "Push*", "field": "force", "value": True})
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(rules))
    proc = run_turn(tmp_path, agent, "--answers", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "GOT ACCEPT" in proc.stdout and "answers rule 1000" in proc.stderr


def test_sigterm_never_waits_behind_matching(tmp_path: Path) -> None:
    """60 worst-case title globs against a title at the length cap (4,096
    characters; a longer one is matched by no rule, see below) cost a
    fraction of a second of matching (a 400 KB title cost seconds before the
    cap); SIGTERM is acted on at once anyway: the matching yields to the
    event loop between rules."""
    heavy = "*" + "a?" * 499 + "b"
    write_config(
        tmp_path,
        '[permissions]\npolicy = "rules"\nrules_default = "deny"\n'
        + f'[[permissions.rules]]\naction = "allow"\ntitle = "{heavy}"\n' * 60,
    )
    call = {"toolCallId": "t1", "title": "a" * MAX_MATCHED_CHARS, "kind": "edit", "status": "pending"}
    scenario = {"prompt": [{"permission": {"tool_call": call, "branches": {}}}, {"hang": True}]}
    agent = fake_acp_agent_command(scenario, workdir=tmp_path / "agents")
    proc = subprocess.Popen(
        [sys.executable, "-m", "agy_host.cli.main", "run", "--agent", agent.command_line, "go"],
        env=isolated_env(tmp_path / "home", AGY_HOST_ENGINE="acp", AGY_HOST_TTY="none"),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not agent.requests("session/prompt"):
            assert time.monotonic() < deadline and proc.poll() is None, "the turn never started"
            time.sleep(0.05)
        time.sleep(0.5)  # the request is on the wire; the host is matching it
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        waited = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, err
    assert waited < 5.0, f"SIGTERM waited {waited:.1f}s behind the rules"


#: 59 worst-case title globs (within every bound) and one that allows every title.
HEAVY_RULES = (
    '[permissions]\npolicy = "rules"\nrules_default = "deny"\n'
    + f'[[permissions.rules]]\naction = "allow"\ntitle = "{"*" + "a?" * 499 + "b"}"\n' * 59
    + '[[permissions.rules]]\naction = "allow"\ntitle = "*"\n'
)
HUGE_TITLE = "a" * 400_000


def huge_permission(tmp_path: Path, name: str) -> FakeAgent:
    call = {"toolCallId": "t1", "title": HUGE_TITLE, "kind": "edit", "status": "pending"}
    branches = {"allow": [{"chunk": "ALLOWED"}], "reject": [{"chunk": "REFUSED"}]}
    scenario = {"prompt": [{"permission": {"tool_call": call, "branches": branches}}, {"stop": "end_turn"}]}
    return fake_acp_agent_command(scenario, workdir=tmp_path / name)


def test_a_huge_title_is_decided_by_no_rule_and_clipped_on_every_line(tmp_path: Path) -> None:
    """Issue 28 item 4, retest: the agent chooses its title's length (up to
    the 64 MiB line limit), and matching costs that length times the
    glob's: 60 legal rules against a 400 KB title took 23.6 s to decide one
    request, and the title was printed whole, twice, on stderr. A title
    longer than rules are matched against (4,096 characters) is decided by
    no rule, so padding cannot slip past a deny rule either: nobody to ask,
    it is refused, the reason naming the cap (an ``allow`` of every title
    did allow it); a person at the terminal is asked. Every line a person
    reads clips it; ``--format json`` keeps it whole."""
    from agy_host.testing.terminal import Pty

    write_config(tmp_path, HEAVY_RULES)
    started_at = time.monotonic()
    proc = run_turn(tmp_path, huge_permission(tmp_path, "nobody"))
    took = time.monotonic() - started_at
    tail = proc.stderr[-3000:]
    assert proc.returncode == 5 and "REFUSED" in proc.stdout, tail
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("[permission] ")]
    assert "its title has 400,000 characters, more than rules are matched against (at most 4,096)" in line
    assert took < 15, f"{took:.1f}s to decide one request"
    assert line.startswith("[permission] " + "a" * 300 + "… (400,000 characters) -> deny"), line[:400]
    [closing] = [x for x in proc.stderr.splitlines() if x.startswith("[exit 5] ")]
    assert "'… (400,000 characters)" in closing, closing[:400]
    assert len(proc.stderr) < 5_000, tail

    proc = run_turn(tmp_path, huge_permission(tmp_path, "json"), "--format", "json")
    [event] = [e for e in map(json.loads, proc.stdout.splitlines()) if e["type"] == "permission"]
    assert event["title"] == HUGE_TITLE, "--format json keeps the whole title"

    with Pty() as tty:
        tty.type("1\n")  # a person is asked: 1) Allow
        agent = huge_permission(tmp_path, "person")
        proc = agy_host(tmp_path, "run", "--agent", agent.command_line, "go", tty=tty.path)
        screen = tty.screen()
    assert proc.returncode == 0 and "ALLOWED" in proc.stdout, proc.stderr[-3000:]
    assert "a" * 4000 + "… (400,000 characters)" in screen and len(screen) < 10_000, screen[-2000:]


# -- item 9: answers files that are not files ------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda d: Path("/dev/zero"), "is a character device"),
        (lambda d: (os.mkfifo(d / "fifo"), d / "fifo")[1], "is a pipe (FIFO)"),
        (lambda d: d, "is a directory"),
        (lambda d: (d / "big.toml").write_bytes(b"#" * (2 << 20)) and d / "big.toml", "is 2,097,152 bytes"),
    ],
    ids=["dev-zero", "fifo", "directory", "two-mib"],
)
def test_answers_that_are_not_a_small_regular_file_are_refused_with_why(tmp_path: Path, make: Any, said: str) -> None:
    agent = fake_acp_agent_command(HAPPY, workdir=tmp_path / "agents")
    place = tmp_path / "given"
    place.mkdir()
    path = make(place)
    started_at = time.monotonic()
    proc = run_turn(tmp_path, agent, "--answers", str(path))
    assert proc.returncode == 2, proc.stderr
    assert f"the answers file {path} {said}: refused, --answers reads a regular file of at most 1,048,576" in (
        proc.stderr
    )
    assert not started(agent)
    assert time.monotonic() - started_at < 30  # it used to read /dev/zero without end (6 GB in 20 s)


# -- item 10: answers that break the form ---------------------------------------------------------------


def test_a_rule_answer_that_breaks_the_schema_is_unanswered_with_the_reason(tmp_path: Path) -> None:
    """``"maybe"`` for a boolean reached the agent as ``false``, accepted."""
    agent = fake_acp_agent_command(asking(FORM), workdir=tmp_path / "agents")
    rules = tmp_path / "answers.toml"
    rules.write_text('[[answer]]\nfield = "force"\nvalue = "maybe"\n')
    proc = run_turn(tmp_path, agent, "--answers", str(rules))
    assert proc.returncode == 5, proc.stderr
    assert "GOT CANCEL" in proc.stdout
    assert elicited(agent) == [{"action": "cancel"}], "nothing of the bad answer reached the agent"
    why = "its answer does not fit the form: field 'force' wants true or false, not 'maybe'"
    assert f"-> UNANSWERED, cancel (answers rule 1: {why})" in proc.stderr


def test_an_out_of_bounds_answer_is_unanswered_in_the_json_events(tmp_path: Path) -> None:
    agent = fake_acp_agent_command(asking(FORM), workdir=tmp_path / "agents")
    rules = tmp_path / "answers.json"
    rules.write_text(json.dumps([{"field": "force", "value": "yes"}, {"field": "replicas", "value": 9}]))
    proc = run_turn(tmp_path, agent, "--answers", str(rules), "--format", "json")
    assert proc.returncode == 5, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    [question] = [e for e in events if e["type"] == "question"]
    assert question["unanswered"] is True and question["action"] == "cancel"
    assert question["reason"] == "its answer does not fit the form: field 'replicas' wants at most 5, not 9"
    assert events[-1]["exit_code"] == 5
    rules.write_text(json.dumps([{"field": "force", "value": "yes"}, {"field": "replicas", "value": "4"}]))
    proc = run_turn(tmp_path, agent, "--answers", str(rules))
    assert proc.returncode == 0, proc.stderr  # a value TOML or JSON wrote another way still counts
    assert elicited(agent)[-1] == {"action": "accept", "content": {"force": True, "replicas": 4}}


def test_the_python_api_callback_answer_that_breaks_the_schema_fails_closed(tmp_path: Path) -> None:
    import agy_host as api

    agent = fake_acp_agent_command(asking(FORM), workdir=tmp_path / "agents")
    env = isolated_env(tmp_path / "home", AGY_HOST_ENGINE="acp", AGY_HOST_TTY="none")
    result = api.run("go", agent=agent.command_line, env=env, cwd=tmp_path, on_question=lambda q: {"force": "maybe"})
    assert result.exit_code == 5
    assert elicited(agent) == [{"action": "cancel"}]
