"""Permission policies through ``agy-host run`` in a subprocess against the
fake ACP agent: every request is answered (by a person on a pseudo-terminal,
by a rule, by the fallback), questions are never auto-answered, an abort
answers ``cancelled``, and a turn whose every request was refused exits 5."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from agy_host.testing.isolation import isolated_env

AGY_HOST = Path(sys.executable).with_name("agy-host")

if not any(ep.name == "acp" for ep in metadata.entry_points(group="agy_host.engines")):
    pytest.skip("the ACP engine (agy-host-acp) is not installed", allow_module_level=True)
if not AGY_HOST.exists():
    pytest.skip(f"console script not installed next to {sys.executable}", allow_module_level=True)

Agent = Any


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    out = isolated_env(home, AGY_HOST_ENGINE="acp", AGY_HOST_TTY="none")
    return out


@pytest.fixture
def terminal() -> Iterator[tuple[int, str]]:
    master, slave = pty.openpty()
    yield master, os.ttyname(slave)
    os.close(master)
    os.close(slave)


def screen(master: int) -> str:
    os.set_blocking(master, False)
    try:
        return os.read(master, 65536).decode(errors="replace")
    except OSError:
        return ""


def run(env: dict[str, str], agent: Agent, *args: str) -> tuple[int, list[dict[str, Any]], str]:
    proc = subprocess.run(
        [str(AGY_HOST), "run", "--agent", agent.command_line, "--format", "json", *args, "go"],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip().startswith("{")]
    return proc.returncode, events, f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


def answers(agent: Agent) -> list[Any]:
    return [e.get("optionId", e.get("outcome")) for e in agent.events("permission-answer")]


def text(events: list[dict[str, Any]]) -> str:
    return "".join(e.get("delta", "") for e in events if e["type"] == "text")


def test_deny_exits_5(env: dict[str, str], fake_acp_agent: Callable[..., Agent]) -> None:
    agent = fake_acp_agent("permission")
    code, events, ctx = run(env, agent, "--permissions", "deny")
    assert code == 5, ctx
    assert answers(agent) == ["deny"] and text(events) == "DENIED"
    assert events[-1]["exit_code"] == 5


def test_ask_without_a_terminal_uses_the_fallback(env: dict[str, str], fake_acp_agent: Callable[..., Agent]) -> None:
    agent = fake_acp_agent("permission")
    code, events, ctx = run(env, agent, "--permissions", "ask")
    assert code == 5, ctx
    [perm] = [e for e in events if e["type"] == "permission"]
    assert perm["policy"] == "ask" and "fallback deny" in perm["reason"]
    env["AGY_HOST_ASK_FALLBACK"] = "allow"
    agent = fake_acp_agent("permission")
    code, events, ctx = run(env, agent, "--permissions", "ask")
    assert code == 0 and text(events) == "PERMIS", ctx


def test_ask_with_fail_and_no_terminal_refuses_to_start(
    env: dict[str, str], fake_acp_agent: Callable[..., Agent]
) -> None:
    env["AGY_HOST_ASK_FALLBACK"] = "fail"
    agent = fake_acp_agent("permission")
    code, events, ctx = run(env, agent, "--permissions", "ask")
    assert code == 2, ctx
    assert "needs a terminal" in ctx and events[-1]["type"] == "done"
    assert agent.log_entries() == []  # no agent was started


def test_the_person_answers_on_the_terminal(
    env: dict[str, str], fake_acp_agent: Callable[..., Agent], terminal: tuple[int, str]
) -> None:
    master, path = terminal
    env["AGY_HOST_TTY"] = path
    os.write(master, b"1\n")
    agent = fake_acp_agent("permission")
    code, events, ctx = run(env, agent, "--permissions", "ask")
    assert code == 0, ctx
    assert answers(agent) == ["allow"] and text(events) == "PERMIS"
    shown = screen(master)
    assert (
        "session 'run-" in shown
        and "asks for permission" in shown
        and "Run fake_tool?" in shown
        and "1) Allow" in shown
    )
    assert "(the agent waits up to 5m for this answer, then it is cancelled)" in shown, shown


def test_a_question_is_asked_never_auto_answered(
    env: dict[str, str], fake_acp_agent: Callable[..., Agent], terminal: tuple[int, str]
) -> None:
    agent = fake_acp_agent("question")
    code, events, ctx = run(env, agent)  # the auto policy
    [perm] = [e for e in events if e["type"] == "permission"]
    assert perm["is_question"] and perm.get("selected") is None, ctx
    assert answers(agent) == ["cancelled"]
    master, path = terminal
    env["AGY_HOST_TTY"] = path
    os.write(master, b"2\n")
    agent = fake_acp_agent("question")
    code, events, ctx = run(env, agent, "--permissions", "rules")  # a question always goes to a person
    assert code == 0, ctx
    assert answers(agent) == ["2"]
    assert "asks you a question" in screen(master)


def test_rules_from_the_config_file(env: dict[str, str], fake_acp_agent: Callable[..., Agent]) -> None:
    config = Path(env["XDG_CONFIG_HOME"]) / "agy-host" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        '[permissions]\npolicy = "rules"\nrules_default = "deny"\n'
        '[[permissions.rules]]\nkind = "edit"\naction = "allow"\n'
        '[[permissions.rules]]\ntitle = "*fake*"\naction = "deny"\n'
    )
    agent = fake_acp_agent("permission")
    code, events, ctx = run(env, agent)
    assert code == 5, ctx  # deny wins over the matching allow
    [perm] = [e for e in events if e["type"] == "permission"]
    assert perm["policy"] == "rules" and "rule 2" in perm["reason"]


def test_an_abort_answers_an_open_question_cancelled(
    env: dict[str, str], fake_acp_agent: Callable[..., Agent], terminal: tuple[int, str]
) -> None:
    master, path = terminal
    env["AGY_HOST_TTY"] = path  # a terminal, but nobody types
    agent = fake_acp_agent("permission")
    proc = subprocess.Popen(
        [str(AGY_HOST), "run", "--agent", agent.command_line, "--permissions", "ask", "go"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        shown, deadline = "", time.monotonic() + 60
        while "choose [" not in shown and time.monotonic() < deadline:  # the policy waits on the terminal
            time.sleep(0.05)
            shown += screen(master)
        assert "choose [" in shown
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    # the request was answered (the agent may already have stopped waiting for it)
    replies = [m["result"] for m in agent.received() if "result" in m and "method" not in m]
    assert replies == [{"outcome": {"outcome": "cancelled"}}], agent.log_entries()
