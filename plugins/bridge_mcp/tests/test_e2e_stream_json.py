"""End to end on the stream-json engine with real subprocesses: ``agy-host
run`` drives the fake ``agy`` CLI, which finds the bridge the way agy does
(the host's entry in ``~/.gemini/config/mcp_config.json``) and calls host
tools over real HTTP; the turn parks, the host runs the tool, the CLI gets
the result and finishes its turn.

The same scenarios as the ACP end-to-end tests, so both engines are held to
one round trip; what is particular to stream-json is the registration: the
entry is there while the CLI runs, carries the token, and is gone after."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from ._e2e import AGY_HOST, Run, e2e_env, run_cli, write_config

if not any(ep.name == "stream-json" for ep in metadata.entry_points(group="agy_host.engines")):
    pytest.skip("the stream-json engine (agy-host-stream-json) is not installed", allow_module_level=True)
if not AGY_HOST.exists():
    pytest.skip(f"console script not installed next to {sys.executable}", allow_module_level=True)

Agy = Any  # agy_host.testing.fake_agy.FakeAgyBin


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return e2e_env(tmp_path, "stream-json")


def run(env: dict[str, str], agy: Agy, *args: str, timeout: float = 90) -> Run:
    return run_cli({**env, **agy.env}, *args, timeout=timeout)


def turn(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"turns": [[{"say": "calling. "}, *steps, {"say": " done."}]]}


def mcp_config(env: dict[str, str]) -> Path:
    return Path(env["HOME"]) / ".gemini" / "config" / "mcp_config.json"


def test_a_bridge_tool_round_trip_completes_the_turn(env: dict[str, str], fake_agy: Callable[..., Agy]) -> None:
    agy = fake_agy(turn({"mcp_call": {"tool": "host_echo", "arguments": {"x": 1}}}))
    result = run(env, agy, "go")
    ctx = result.context()
    assert result.proc.returncode == 0, ctx
    [tool_use] = result.of("tool_use")
    assert (tool_use["name"], tool_use["args"]) == ("host_echo", {"x": 1}), ctx
    assert result.text == 'calling. tool result: echo {"x": 1} done.', ctx
    assert [e["stop_reason"] for e in result.of("turn_end")] == ["stop"], ctx
    assert len(result.of("turn_start")) == 1, ctx  # one agent turn, re-entered after the tool
    assert len(agy.argvs()) == 1 and len(agy.received()) == 1, ctx  # one CLI process, one stdin line
    [listed] = agy.events("mcp-tools")
    assert {"host_echo", "slow_tool", "guarded", "ask_user", "bridge_poll_result"} <= set(listed["names"])


def test_the_registration_exists_only_while_the_host_runs(env: dict[str, str], fake_agy: Callable[..., Agy]) -> None:
    path = mcp_config(env)
    path.parent.mkdir(parents=True)
    foreign = {"mcpServers": {"theirs": {"serverUrl": "http://127.0.0.1:1/mcp", "disabled": False}}}
    path.write_text(json.dumps(foreign))
    # the fake logs the entry it found in the file when it made the call
    agy = fake_agy(turn({"mcp_call": {"tool": "host_echo", "arguments": {}}}))
    result = run(env, agy, "go")
    assert result.proc.returncode == 0, result.context()
    assert "tool result: echo {}" in result.text
    # while the CLI ran: the host's own entry (named for its pid, the CLI's parent), with the token, 0600
    [seen] = agy.events("mcp-server")
    [argv_note] = agy.events("argv")
    assert seen["entry"].startswith("agy-host-bridge-") and seen["headers"] == ["x-bridge-token"], seen
    assert seen["mode"] == 0o600 and seen["all"] == sorted(["theirs", seen["entry"]]), seen
    assert argv_note["pid"] != int(seen["entry"].rsplit("-", 1)[1])
    # afterwards: our entry removed, the user's entry kept as it was
    assert json.loads(path.read_text()) == foreign
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_refusing_host_tool_answers_the_cli_with_an_error(env: dict[str, str], fake_agy: Callable[..., Agy]) -> None:
    result = run(env, fake_agy(turn({"mcp_call": {"tool": "guarded"}})), "go")
    assert result.proc.returncode == 0, result.context()
    assert "tool error: refused by host policy" in result.text


def test_a_slow_tool_is_escalated_and_polled(env: dict[str, str], fake_agy: Callable[..., Agy]) -> None:
    write_config(env, "[bridge]\nescalate_after_seconds = 0.3\npark_ttl_seconds = 30\n")
    step = {"mcp_call": {"tool": "slow_tool", "arguments": {"seconds": 1.5}, "poll_interval": 0.2}}
    agy = fake_agy(turn(step))
    result = run(env, agy, "go")
    ctx = result.context()
    assert result.proc.returncode == 0, ctx
    assert "tool result: slow done after 1.5 done." in result.text, ctx
    [call] = agy.events("mcp-call")
    assert call["polls"] >= 1 and not call["is_error"], ctx
    assert any("still running" in n["message"] for n in result.of("notice")), ctx


def test_a_result_after_the_park_ttl_goes_out_in_a_follow_up_turn(
    env: dict[str, str], fake_agy: Callable[..., Agy]
) -> None:
    write_config(env, "[bridge]\nescalate_after_seconds = 0\npark_ttl_seconds = 0.5\n")
    scenario = {
        "turns": [
            [{"mcp_call": {"tool": "slow_tool", "arguments": {"seconds": 1.5}}}, {"say": " first turn over."}],
            [{"echo": True}],
        ]
    }
    agy = fake_agy(scenario)
    result = run(env, agy, "go")
    ctx = result.context()
    assert result.proc.returncode == 0, ctx
    assert "tool error: Error: host tool round-trip timed out after 0.5s first turn over." in result.text, ctx
    assert len(result.of("turn_start")) == 2, ctx  # the follow-up turn carried the late result
    follow_up = result.text.split("first turn over.")[1]
    assert "[Late tool delivery]" in follow_up and "slow done after 1.5" in follow_up, ctx
    # the follow-up went to the same CLI conversation (one process, a second stdin line)
    assert len(agy.argvs()) == 1 and len(agy.received()) == 2, ctx


def test_the_cli_hanging_up_aborts_the_park(env: dict[str, str], fake_agy: Callable[..., Agy]) -> None:
    write_config(env, "[bridge]\nescalate_after_seconds = 0\npark_ttl_seconds = 30\n")
    hang_up = {"mcp_call": {"tool": "slow_tool", "arguments": {"seconds": 4}, "timeout": 2.0}}
    agy = fake_agy({"turns": [[hang_up, {"say": " first over."}], [{"echo": True}]]})
    result = run(env, agy, "go")
    ctx = result.context()
    assert result.proc.returncode == 0, ctx
    assert "tool error: MCP request timed out after 2s" in result.text, ctx
    notices = [n["message"] for n in result.of("notice")]
    assert any("the agent disconnected before the tool result arrived" in n for n in notices), ctx
    follow_up = result.text.split("first over.")[1]
    assert "[Late tool delivery]" in follow_up and "slow done after 4" in follow_up, ctx


def test_ask_user_without_a_terminal_tells_the_cli(env: dict[str, str], fake_agy: Callable[..., Agy]) -> None:
    agy = fake_agy(turn({"mcp_call": {"tool": "ask_user", "arguments": {"question": "Anyone?"}}}))
    result = run(env, agy, "go")
    assert result.proc.returncode == 0, result.context()
    assert "tool error: ask_user: there is no terminal attached to agy-host" in result.text
