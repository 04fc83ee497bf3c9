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
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from ._e2e import AGY_HOST, Run, e2e_env, run_cli

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
