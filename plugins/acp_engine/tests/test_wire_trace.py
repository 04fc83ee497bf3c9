"""``--trace`` on the ACP engine: the real CLI (and the Python API) against
the kit's fake ACP agent, a real subprocess over real pipes. Both
directions, both read paths (the ``session/update`` fast path, its batches,
and the generic path), a line that is not JSON, the agent's stderr, and no
secret in the file: not the bridge's token, not an API key from the
environment, not one the agent printed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agy_host.testing.agents import FakeAgent, fake_acp_agent_command
from agy_host.testing.isolation import isolated_env
from agy_host.testing.trace import Trace, read_trace

ENV_KEY = "env-gemini-key-0123456789"  # GEMINI_API_KEY: agy-host knows it is a secret
GOOGLE_KEY = "AIzaSyZ9y8X7w6V5u4T3s2R1q0PoNmLkJiHgFeD"  # the shape of one, not a real key
BEARER = "eyJhbGciOiJub25lIn0.agent-printed-token"

SCENARIO: dict[str, Any] = {
    "stderr_lines": [f"fake-acp: starting with {ENV_KEY}"],
    "prompt": [
        {"stderr": f"Authorization: Bearer {BEARER}"},
        {"raw_stdout": "Open the following link to sign in: https://example.com/x"},
        {"chunk": f"your key is {GOOGLE_KEY}"},
        {
            "tool_call": {
                "toolCallId": "t1",
                "title": "call",
                "kind": "fetch",
                "rawInput": {"apiKey": "raw-input-key-1"},
            }
        },
        {"flood": {"count": 40, "text": "x"}},
        {"stop": "end_turn"},
    ],
}


def agy_host(tmp_path: Path, *args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agy_host.cli.main", *args],
        env=isolated_env(tmp_path / "home", AGY_HOST_ENGINE="acp", AGY_HOST_TTY="none", GEMINI_API_KEY=ENV_KEY, **env),
        cwd=tmp_path,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
    )


def bridge_token(agent: FakeAgent) -> str:
    """The token the agent was really given for the bridge (its own log)."""
    [new] = agent.requests("session/new")
    [server] = new["params"]["mcpServers"]
    [header] = [h for h in server["headers"] if h["name"] == "x-bridge-token"]
    token: str = header["value"]
    assert len(token) > 20
    return token


def check(trace_file: Path, agent: FakeAgent) -> Trace:
    """What every traced ACP turn shows."""
    trace = read_trace(trace_file, secrets=[bridge_token(agent), ENV_KEY, GOOGLE_KEY, BEARER, "raw-input-key-1"])
    assert {e.engine for e in trace} == {"acp"}
    sent = [f.get("method") for f in trace.objects("out")]
    assert sent[:3] == ["initialize", "session/new", "session/prompt"], sent
    [new] = [f for f in trace.objects("out") if f.get("method") == "session/new"]
    assert new["params"]["mcpServers"][0]["headers"] == [{"name": "x-bridge-token", "value": "[redacted]"}]
    got = trace.objects("in")
    updates = [f["params"]["update"] for f in got if f.get("method") == "session/update"]
    chunks = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert chunks.count("x") == 40, "every frame of the flood (the batched fast path) is traced"
    assert "your key is [redacted]" in chunks
    [tool] = [u for u in updates if u["sessionUpdate"] == "tool_call"]
    assert tool["rawInput"] == {"apiKey": "[redacted]"}
    assert any(f.get("result", {}).get("stopReason") == "end_turn" for f in got), "the generic path is traced too"
    assert "Open the following link to sign in: https://example.com/x" in trace.frames("in")
    stderr = trace.frames("stderr")
    assert "fake-acp: starting with [redacted]" in stderr and "Authorization: [redacted]" in stderr
    times = [e.time for e in trace]
    assert times == sorted(times)
    return trace


def test_run_with_trace_writes_both_directions_redacted(tmp_path: Path) -> None:
    agent = fake_acp_agent_command(SCENARIO, workdir=tmp_path / "agents")
    target = tmp_path / "trace.jsonl"
    proc = agy_host(tmp_path, "run", "--agent", agent.command_line, "--trace", str(target), "hello")
    assert proc.returncode == 0, proc.stderr
    trace = check(target, agent)
    [prompt] = [f for f in trace.objects("out") if f.get("method") == "session/prompt"]
    assert prompt["params"]["prompt"] == [{"type": "text", "text": "hello"}]


@pytest.mark.parametrize("command", ["ask", "chat"])
def test_ask_and_chat_trace_with_the_environment_variable(tmp_path: Path, command: str) -> None:
    agent = fake_acp_agent_command(SCENARIO, workdir=tmp_path / "agents")
    target = tmp_path / "trace.jsonl"
    if command == "ask":
        proc = agy_host(tmp_path, "ask", "--agent", agent.command_line, "hello", AGY_HOST_TRACE=str(target))
    else:
        proc = agy_host(tmp_path, "chat", "--agent", agent.command_line, stdin="hello\n", AGY_HOST_TRACE=str(target))
    assert proc.returncode == 0, proc.stderr
    check(target, agent)


def test_the_python_api_takes_trace(tmp_path: Path) -> None:
    import agy_host

    agent = fake_acp_agent_command(SCENARIO, workdir=tmp_path / "agents")
    target = tmp_path / "api-trace.jsonl"
    env = isolated_env(tmp_path / "home", AGY_HOST_ENGINE="acp", AGY_HOST_TTY="none", GEMINI_API_KEY=ENV_KEY)
    result = agy_host.run("hello", agent=agent.command_line, env=env, cwd=tmp_path, trace=target)
    assert result.exit_code == 0, result.error
    check(target, agent)
