"""End to end on the ACP engine with real subprocesses: ``agy-host run``
drives the scripted fake ACP agent, which calls bridge tools over real HTTP
(the server it was given in ``mcpServers``); the turn parks, the host runs
the tool, the agent gets the result and finishes its turn.

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


def test_a_bridge_tool_round_trip_completes_the_turn(env: dict[str, str], fake_acp_agent: Callable[..., Agent]) -> None:
    agent = fake_acp_agent(prompt({"mcp_call": {"tool": "host_echo", "arguments": {"x": 1}}}))
    result = run(env, agent, "go")
    ctx = result.context()
    assert result.proc.returncode == 0, ctx
    [tool_use] = result.of("tool_use")
    assert (tool_use["name"], tool_use["args"]) == ("host_echo", {"x": 1}), ctx
    assert result.text == 'calling. tool result: echo {"x": 1} done.', ctx
    assert [e["stop_reason"] for e in result.of("turn_end")] == ["stop"], ctx
    assert len(result.of("turn_start")) == 1  # one agent turn, re-entered after the tool
    # the agent was given the bridge with its token, as ACP headers
    [new] = agent.requests("session/new")
    [server] = new["params"]["mcpServers"]
    assert server["type"] == "http" and server["url"].startswith("http://127.0.0.1:")
    assert [h["name"] for h in server["headers"]] == ["x-bridge-token"] and server["headers"][0]["value"]
    [listed] = agent.events("mcp-tools")
    assert {"host_echo", "slow_tool", "guarded", "ask_user", "bridge_poll_result"} <= set(listed["names"])


def test_session_load_passes_the_bridge_again(env: dict[str, str], fake_acp_agent: Callable[..., Agent]) -> None:
    agent = fake_acp_agent(prompt({"mcp_call": {"tool": "host_echo", "arguments": {"n": 2}}}))
    assert run(env, agent, "first").proc.returncode == 0
    second = run(env, agent, "second")
    assert second.proc.returncode == 0, second.context()
    [load] = agent.requests("session/load")
    assert load["params"]["mcpServers"][0]["headers"][0]["name"] == "x-bridge-token"
    assert 'tool result: echo {"n": 2}' in second.text  # the new bridge (new port, new token) served it


def test_a_refusing_host_tool_answers_the_agent_with_an_error(
    env: dict[str, str], fake_acp_agent: Callable[..., Agent]
) -> None:
    result = run(env, fake_acp_agent(prompt({"mcp_call": {"tool": "guarded"}})), "go")
    assert result.proc.returncode == 0, result.context()
    assert "tool error: refused by host policy" in result.text


def test_a_slow_tool_is_escalated_and_polled(env: dict[str, str], fake_acp_agent: Callable[..., Agent]) -> None:
    write_config(env, "[bridge]\nescalate_after_seconds = 0.3\npark_ttl_seconds = 30\n")
    agent = fake_acp_agent(
        prompt({"mcp_call": {"tool": "slow_tool", "arguments": {"seconds": 1.5}, "poll_interval": 0.2}})
    )
    result = run(env, agent, "go")
    ctx = result.context()
    assert result.proc.returncode == 0, ctx
    assert "tool result: slow done after 1.5 done." in result.text, ctx
    [call] = agent.events("mcp-call")
    assert call["polls"] >= 1 and not call["is_error"], ctx
    assert any("still running" in n["message"] for n in result.of("notice")), ctx


def test_a_result_after_the_park_ttl_goes_out_in_a_follow_up_turn(
    env: dict[str, str], fake_acp_agent: Callable[..., Agent]
) -> None:
    write_config(env, "[bridge]\nescalate_after_seconds = 0\npark_ttl_seconds = 0.5\n")
    scenario = {
        "prompts": [
            [{"mcp_call": {"tool": "slow_tool", "arguments": {"seconds": 1.5}}}, {"chunk": " first turn over."}],
            [{"echo": "second turn got: "}],
        ]
    }
    agent = fake_acp_agent(scenario)
    result = run(env, agent, "go")
    ctx = result.context()
    assert result.proc.returncode == 0, ctx
    assert "tool error: Error: host tool round-trip timed out after 0.5s first turn over." in result.text, ctx
    assert len(result.of("turn_start")) == 2, ctx  # the follow-up turn carried the late result
    assert "second turn got: [Late tool delivery]" in result.text, ctx
    assert "slow done after 1.5" in result.text.split("second turn got:")[1], ctx
    prompts = agent.requests("session/prompt")
    assert len(prompts) == 2 and prompts[1]["params"]["sessionId"] == prompts[0]["params"]["sessionId"]


def test_the_agent_hanging_up_aborts_the_park(env: dict[str, str], fake_acp_agent: Callable[..., Agent]) -> None:
    write_config(env, "[bridge]\nescalate_after_seconds = 0\npark_ttl_seconds = 30\n")
    # generous enough that a busy machine still delivers the call before the agent hangs up
    hang_up = {"mcp_call": {"tool": "slow_tool", "arguments": {"seconds": 4}, "timeout": 2.0}}
    agent = fake_acp_agent({"prompts": [[hang_up, {"chunk": " first over."}], [{"echo": "second: "}]]})
    result = run(env, agent, "go")
    ctx = result.context()
    assert result.proc.returncode == 0, ctx
    assert "tool error: MCP request timed out after 2s" in result.text, ctx
    notices = [n["message"] for n in result.of("notice")]
    assert any("the agent disconnected before the tool result arrived" in n for n in notices), ctx
    # the tool kept running; its result reaches the agent in the follow-up turn
    assert "second: [Late tool delivery]" in result.text and "slow done after 4" in result.text, ctx
    assert len(agent.requests("session/prompt")) == 2, ctx


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


def test_ask_user_without_a_terminal_tells_the_agent(env: dict[str, str], fake_acp_agent: Callable[..., Agent]) -> None:
    agent = fake_acp_agent(prompt({"mcp_call": {"tool": "ask_user", "arguments": {"question": "Anyone?"}}}))
    result = run(env, agent, "go")
    assert result.proc.returncode == 0, result.context()
    assert "tool error: ask_user: there is no terminal attached to agy-host" in result.text
