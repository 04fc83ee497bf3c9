"""``agy-host run`` in a subprocess against the scripted fake ACP agent:
streamed text, JSON events, exit codes, resuming with --session, and Ctrl-C
(SIGINT to the agy-host process mid-turn) keeping the binding."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from agy_host.testing.isolation import isolated_env
from agy_host.testing.store import read_bindings

AGY_HOST = Path(sys.executable).with_name("agy-host")

if not any(ep.name == "acp" for ep in metadata.entry_points(group="agy_host.engines")):
    pytest.skip("the ACP engine (agy-host-acp) is not installed", allow_module_level=True)
pytest.importorskip("agy_host_acp.engine", reason="the ACP engine package cannot be imported")
if not AGY_HOST.exists():
    pytest.skip(f"console script not installed next to {sys.executable}", allow_module_level=True)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    out = isolated_env(home, AGY_HOST_ENGINE="acp")
    return out


Agent = Any  # agy_host.testing.agents.FakeAgent


def run(env: dict[str, str], agent: Agent, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(AGY_HOST), "run", "--agent", agent.command_line, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def bindings(env: dict[str, str]) -> dict[str, Any]:
    return read_bindings(Path(env["XDG_STATE_HOME"]) / "agy-host")


def binding_of(env: dict[str, str], session: str) -> dict[str, Any]:
    [value] = [v for k, v in bindings(env).items() if k.split("@", 1)[0] == session]
    return value


def test_text_is_streamed_with_a_closing_line(env: dict[str, str], fake_acp_agent: Callable[..., Agent]) -> None:
    proc = run(env, fake_acp_agent("happy"), "--session", "t1", "hi")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "HELLO\n"
    closing = proc.stderr.strip().splitlines()[-1]
    assert closing.startswith("[done] stop in ")
    assert closing.endswith("session: t1")
    assert binding_of(env, "t1")["engine"] == "acp"


def test_json_events_end_with_done(env: dict[str, str], fake_acp_agent: Callable[..., Agent]) -> None:
    proc = run(env, fake_acp_agent("usage"), "--format", "json", "--session", "j", "hi")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "turn_start"
    assert types[-2:] == ["turn_end", "done"]
    done = events[-1]
    assert done["version"] == 1 and done["exit_code"] == 0 and done["stop_reason"] == "stop"
    assert done["session"] == "j"
    assert done["conversation_id"] == binding_of(env, "j")["conversation_id"]
    assert done["usage"] is not None


def test_resume_with_session_loads_the_same_conversation(
    env: dict[str, str], fake_acp_agent: Callable[..., Agent]
) -> None:
    agent = fake_acp_agent("echo")
    first = run(env, agent, "--session", "r", "first")
    assert first.returncode == 0, first.stderr
    cid = binding_of(env, "r")["conversation_id"]
    second = run(env, agent, "--session", "r", "--resume", "second")
    assert second.returncode == 0, second.stderr
    assert "second" in second.stdout
    loads = agent.requests("session/load")
    assert [m["params"]["sessionId"] for m in loads] == [cid]
    assert binding_of(env, "r")["conversation_id"] == cid


def test_resume_of_an_unknown_session_exits_4(env: dict[str, str], fake_acp_agent: Callable[..., Agent]) -> None:
    proc = run(env, fake_acp_agent("happy"), "--session", "nobody", "--resume", "hi")
    assert proc.returncode == 4
    assert "no such session 'nobody'" in proc.stderr


@pytest.mark.parametrize(
    ("scenario", "args", "code", "expect"),
    [
        ("permission", ["--permissions", "deny"], 5, "DENIED"),
        ("permission", ["--permissions", "auto"], 0, "PERMIS"),
        ("permission", [], 5, "DENIED"),  # the default, with nobody to ask
        ("prompt-error", [], 1, "Internal error"),
        ("crash-mid-turn", [], 1, "PARTIAL"),
        ("slow", ["--timeout", "0.02"], 3, "[done] error"),
        ("auth-required", [], 1, "needs a sign-in"),
    ],
)
def test_exit_codes(  # noqa: PLR0917 - pytest passes fixtures and parameters positionally
    env: dict[str, str],
    fake_acp_agent: Callable[..., Agent],
    scenario: str,
    args: list[str],
    code: int,
    expect: str,
) -> None:
    proc = run(env, fake_acp_agent(scenario), *args, "hi")
    assert proc.returncode == code, proc.stderr
    assert expect in proc.stdout + proc.stderr


def _wait_for(predicate: Callable[[], bool], what: str, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def _read_until(proc: subprocess.Popen[str], marker: str) -> str:
    """What ``proc`` printed on stdout up to and including ``marker`` (read
    from the pipe itself, so ``communicate`` still gets the rest)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    got = bytearray()

    def seen() -> bool:
        if select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                raise AssertionError(f"stdout closed before {marker!r}; got {bytes(got)!r}")
            got.extend(chunk)
        return marker.encode() in got

    _wait_for(seen, f"{marker!r} on stdout", limit=30)
    return got.decode()


def _interrupt(env: dict[str, str], agent: Agent, *args: str, prompts_before: int) -> tuple[int, str, str]:
    """Start ``agy-host run``, wait until its prompt reached the agent and the
    agent's first text ("C1") is on stdout, send SIGINT to the agy-host
    process only."""
    proc = subprocess.Popen(
        [str(AGY_HOST), "run", "--agent", agent.command_line, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(lambda: len(agent.requests("session/prompt")) > prompts_before, "the prompt to reach the agent")
        head = _read_until(proc, "C1")
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=60)
        out = head + rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err


@pytest.mark.parametrize("scenario", ["cancel-graceful", "cancel-unsupported"])
def test_ctrl_c_aborts_the_turn_and_keeps_the_binding(
    env: dict[str, str], fake_acp_agent: Callable[..., Agent], scenario: str
) -> None:
    agent = fake_acp_agent(scenario)
    code, out, err = _interrupt(env, agent, "--session", "ctl", "go", prompts_before=0)
    assert code == 130, err
    assert out.startswith("C1")
    assert "interrupting the turn" in err
    assert "[done] aborted" in err
    assert agent.requests("session/cancel")  # graceful: honoured; unsupported: probed, then killed
    cid = binding_of(env, "ctl")["conversation_id"]
    # The next turn on the session continues the same agent conversation.
    code, _, err = _interrupt(env, agent, "--session", "ctl", "--resume", "more", prompts_before=1)
    assert code == 130, err
    assert agent.requests("session/load")[-1]["params"]["sessionId"] == cid
    assert binding_of(env, "ctl")["conversation_id"] == cid
