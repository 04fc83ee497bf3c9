"""End to end on the ACP engine, what is particular to it: the bridge handed
to the agent in ``mcpServers`` on ``session/new`` and again on
``session/load``, and ``ask_user`` answered on a pseudo-terminal. The round
trip itself, on every engine, is ``test_e2e_bridge.py``.

The host tools come from a throw-away installed plugin (a real entry point
on the child's ``PYTHONPATH``), plus the bridge's own ``ask_user`` answered
on a pseudo-terminal."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from ._e2e import AGY_HOST, Run, e2e_env, run_cli, write_config

if not any(ep.name == "acp" for ep in metadata.entry_points(group="agy_host.engines")):
    pytest.skip("the ACP engine (agy-host-acp) is not installed", allow_module_level=True)
if not AGY_HOST.exists():
    pytest.skip(f"console script not installed next to {sys.executable}", allow_module_level=True)

Agent = Any  # agy_host.testing.agents.FakeAgent


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return e2e_env(tmp_path, "acp")


def run(env: dict[str, str], agent: Agent, *args: str, timeout: float = 90) -> Run:
    return run_cli(env, "--agent", agent.command_line, *args, timeout=timeout)


def prompt(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"prompt": [{"chunk": "calling. "}, *steps, {"chunk": " done."}]}


def test_the_agent_is_given_the_bridge_in_mcp_servers(
    env: dict[str, str], fake_acp_agent: Callable[..., Agent]
) -> None:
    agent = fake_acp_agent(prompt({"mcp_call": {"tool": "host_echo", "arguments": {"x": 1}}}))
    result = run(env, agent, "go")
    assert result.proc.returncode == 0, result.context()
    assert result.text == 'calling. tool result: echo {"x": 1} done.', result.context()
    # the agent was given the bridge with its token, as ACP headers
    [new] = agent.requests("session/new")
    [server] = new["params"]["mcpServers"]
    assert server["type"] == "http" and server["url"].startswith("http://127.0.0.1:")
    assert [h["name"] for h in server["headers"]] == ["x-bridge-token"] and server["headers"][0]["value"]


def test_session_load_passes_the_bridge_again(env: dict[str, str], fake_acp_agent: Callable[..., Agent]) -> None:
    agent = fake_acp_agent(prompt({"mcp_call": {"tool": "host_echo", "arguments": {"n": 2}}}))
    assert run(env, agent, "first").proc.returncode == 0
    second = run(env, agent, "second")
    assert second.proc.returncode == 0, second.context()
    [load] = agent.requests("session/load")
    assert load["params"]["mcpServers"][0]["headers"][0]["name"] == "x-bridge-token"
    assert 'tool result: echo {"n": 2}' in second.text  # the new bridge (new port, new token) served it


def test_ask_user_asks_the_person_at_the_terminal(env: dict[str, str], fake_acp_agent: Callable[..., Agent]) -> None:
    master, slave = pty.openpty()
    try:
        env["AGY_HOST_TTY"] = os.ttyname(slave)
        os.write(master, b"blue\n")  # the person answers (the terminal holds the line until it is read)
        agent = fake_acp_agent(prompt({"mcp_call": {"tool": "ask_user", "arguments": {"question": "Red or blue?"}}}))
        result = run(env, agent, "go")
        os.set_blocking(master, False)
        screen = os.read(master, 65536).decode(errors="replace")
    finally:
        os.close(master)
        os.close(slave)
    assert result.proc.returncode == 0, result.context()
    assert "tool result: The user answered: blue" in result.text
    assert "Red or blue?" in screen


def test_ctrl_c_stops_waiting_for_a_tool_that_outlived_its_park(
    env: dict[str, str], fake_acp_agent: Callable[..., Agent]
) -> None:
    """Issue 28 item 2: the turn is over and ``run`` waits for a host tool
    that outlived its park (its result would go to the agent in a follow-up
    turn); Ctrl-C cancels it and the command ends with the turn's answer."""
    write_config(env, "[bridge]\nescalate_after_seconds = 0\npark_ttl_seconds = 0.5\n")
    agent = fake_acp_agent(prompt({"mcp_call": {"tool": "slow_tool", "arguments": {"seconds": 600}}}))
    argv = [str(AGY_HOST), "run", "--format", "json", "--session", "e2e", "--agent", agent.command_line, "go"]
    pipe = subprocess.PIPE
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=pipe, stderr=pipe, text=True)
    assert proc.stdout is not None
    watchdog = threading.Timer(60, proc.kill)  # a turn that waits for the tool never says so
    watchdog.start()
    seen = ""
    while "waiting for host tool 'slow_tool'" not in seen:
        line = proc.stdout.readline()
        if not line:
            break
        seen += line
    watchdog.cancel()
    assert "waiting for host tool 'slow_tool'" in seen, (seen, proc.poll())
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, (seen + out, err)
    assert "'slow_tool' was cancelled as the user stopped waiting for it" in out, out
    assert '"turn_start"' not in out, out  # no follow-up turn: there is no result to carry
