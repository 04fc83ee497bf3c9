"""``chat`` with its input piped: every slash command, the model/mode settings
reaching the agent, ``/new``, and ``/engine`` switching to the other engine
and back to the same ACP conversation (each engine keeps its own)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

AGY_HOST = Path(sys.executable).with_name("agy-host")
ENGINES = {ep.name for ep in metadata.entry_points(group="agy_host.engines")}

pytestmark = [
    pytest.mark.skipif(not AGY_HOST.exists(), reason=f"console script not installed next to {sys.executable}"),
    pytest.mark.skipif("acp" not in ENGINES, reason="the ACP engine is not installed"),
]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    out = {k: v for k, v in os.environ.items() if not k.startswith(("AGY_", "PYTEST", "XDG_"))}
    out.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "c"), XDG_STATE_HOME=str(home / "s"))
    out["AGY_HOST_KEEP_ALIVE_MINUTES"] = "0"  # cold: no keeper outlives the test
    return out


def chat(env: dict[str, str], cwd: Path, lines: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(AGY_HOST), "chat", *args],
        input="".join(line + "\n" for line in lines),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_slash_commands(env: dict[str, str], tmp_path: Path, fake_acp_agent: Callable[..., Any]) -> None:
    agent = fake_acp_agent("echo", session_id="generate")
    script = [
        "first",
        "/model",
        "/model fake-model-low",
        "/mode",
        "/mode yolo",
        "/mode bogus",
        "/effort high",
        "second",
        "//literally slash",
        "/bogus",
        "/session",
        "/new side",
        "third",
        "/sessions",
        "/doctor",
        "/digest on",
        "/thinking",
        "/engine",
        "/exit",
        "never sent",
    ]
    proc = chat(env, tmp_path, script, "--engine", "acp", "--agent", agent.command_line, "--session", "main")
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr
    assert "agy-host chat · acp" in out and "session main (new)" in out
    assert "* fake-model-high" in out and "fake-model-low" in out, "/model lists the agent's models"
    assert "model: fake-model-low (from the next turn)" in out
    assert "* default  Default: Default permission prompt flow" in out, "/mode lists the agent's modes"
    assert "  auto_edit  Auto Edit: Auto-approve file edit tools" in out and "  yolo  YOLO" in out
    assert "mode: yolo (from the next turn)" in out
    assert "has no mode 'bogus'; it offers: default, auto_edit, yolo" in out, "a mode the agent lacks is refused"
    assert "mode: yolo (unchanged)" in out
    assert "effort: high" in out
    assert "\n/literally slash\n" in out, "//text is sent to the agent as /text"
    assert "unknown command /bogus" in out
    assert "session main: 3 turn(s)" in out
    assert "session side (new)" in out
    assert "* side" in out and "main" in out
    assert "agy-host doctor (no tokens spent)" in out and "session id:" in out
    assert "digest: on" in out and "no thinking seen yet" in out
    assert "engine: acp" in out
    assert "never sent" not in out
    prompts = agent.requests("session/prompt")
    assert [p["params"]["prompt"][0]["text"] for p in prompts] == ["first", "second", "/literally slash", "third"]
    models = [m["params"] for m in agent.requests("session/set_config_option") if m["params"]["configId"] == "model"]
    assert models and models[-1]["value"] == "fake-model-low", "the model switch reached the agent"
    modes = [m["params"] for m in agent.requests("session/set_config_option") if m["params"]["configId"] == "mode"]
    assert modes and modes[-1]["value"] == "yolo", "the mode switch reached the agent"
    sessions = {p["params"]["sessionId"] for p in prompts[:3]}
    assert len(sessions) == 1 and prompts[3]["params"]["sessionId"] not in sessions, "/new is a new conversation"


def test_resume_requires_an_existing_session(
    env: dict[str, str], tmp_path: Path, fake_acp_agent: Callable[..., Any]
) -> None:
    agent = fake_acp_agent("echo")
    proc = chat(env, tmp_path, ["hi"], "--engine", "acp", "--agent", agent.command_line, "--session", "x", "--resume")
    assert proc.returncode == 4 and "no such session 'x'" in proc.stderr
    assert (
        chat(env, tmp_path, ["hi"], "--engine", "acp", "--agent", agent.command_line, "--session", "x").returncode == 0
    )
    proc = chat(
        env, tmp_path, ["again"], "--engine", "acp", "--agent", agent.command_line, "--session", "x", "--resume"
    )
    assert proc.returncode == 0 and "session x (continued)" in proc.stdout


@pytest.mark.skipif("stream-json" not in ENGINES, reason="the stream-json engine is not installed")
def test_engine_switch_keeps_each_engines_conversation(
    env: dict[str, str], tmp_path: Path, fake_acp_agent: Callable[..., Any]
) -> None:
    from agy_host.testing.agy_cli.agent import make_fake_agy

    agent = fake_acp_agent("echo")
    agy = make_fake_agy(tmp_path / "fake-agy", "echo")
    script = ["on acp", "/engine stream-json", "on cli", "/engine acp", "acp again", "/engine nope", "/exit"]
    proc = chat(env | agy.env, tmp_path, script, "--engine", "acp", "--agent", agent.command_line, "--session", "sw")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "session 'sw' has no stream-json conversation yet (it has one on acp)" in out
    assert "engine: acp" in out and "session sw continues conversation fake-session-" in out
    assert "unknown engine 'nope'" in out
    acp_sessions = [p["params"]["sessionId"] for p in agent.requests("session/prompt")]
    assert len(acp_sessions) == 2 and len(set(acp_sessions)) == 1, "back on ACP, the same conversation"
    assert [m["message"]["content"] for m in agy.received() if m.get("event") == "user"] == ["on cli"]


ALWAYS_ASKING = {
    "prompt": [
        {
            "permission": {
                "options": [
                    {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
                    {"optionId": "once", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
                ],
                "branches": {"allow": [{"chunk": "RAN"}], "reject": [{"chunk": "REFUSED"}], "*": [{"chunk": "NONE"}]},
            }
        },
        {"stop": "end_turn"},
    ]
}


def test_always_is_remembered_for_the_session_and_forgotten_on_request(
    env: dict[str, str], tmp_path: Path, fake_acp_agent: Callable[..., Any]
) -> None:
    """The person picks "Always allow" once: the next turn's request is
    answered without asking; ``/always`` shows it, ``/always forget`` drops
    it and the request after that is asked again (here: refused)."""
    from agy_host.testing.terminal import Pty

    agent = fake_acp_agent(ALWAYS_ASKING)
    script = ["one", "two", "/always", "/always forget", "/always", "three", "/exit"]
    with Pty() as tty:
        tty.type("1\n3\n")  # always allow; later, reject
        proc = chat(
            env | {"AGY_HOST_TTY": tty.path},
            tmp_path,
            script,
            *("--engine", "acp", "--agent", agent.command_line, "--session", "s", "--permissions", "ask"),
        )
        screen = tty.screen()
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr
    assert screen.count("asks for permission") == 2, screen
    answers = [m["result"]["outcome"].get("optionId") for m in agent.received() if "outcome" in str(m.get("result"))]
    assert answers == ["always", "always", "no"], out
    assert ": allow ('Always allow')" in out, out
    assert "forgot 1 remembered answer(s) of session s" in out
    assert "nothing remembered for session s" in out
    assert out.count("RAN") == 2 and "REFUSED" in out
