"""The official MCP client lists and calls bridge tools over real HTTP; a
call parks the turn until the host delivers the result."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from agy_host.contract.tools import ToolResult
from agy_host.engine.driver import TurnHandle
from agy_host.service.roundtrips import DISCONNECTED, NO_ACTIVE_TURN, RoundTripSettings
from agy_host_bridge_mcp.testing import host_tool, mcp_client, running_bridge

PNG = "iVBORw0KGgo="


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_sdk_client_lists_and_calls_host_tools(tmp_path: Path, mode: str) -> None:
    tools = [host_tool("host_echo"), host_tool("snap", ToolResult(text="a picture", images=[(PNG, "image/png")]))]
    async with running_bridge(tmp_path, tools) as bridge, mcp_client(bridge, mode) as client:
        listed = await client.list_tools()
        names = [t.name for t in listed.tools]
        assert names == ["host_echo", "snap", "bridge_poll_result"]
        echo = next(t for t in listed.tools if t.name == "host_echo")
        assert echo.description == "the host_echo test tool"
        assert echo.input_schema["properties"] == {"x": {"type": "integer"}}

        result = await client.call_tool("host_echo", {"x": 1})
        assert not result.is_error
        assert [c.text for c in result.content] == ["host_echo got {'x': 1}"]
        [parked] = bridge.turns.calls
        assert (parked.name, parked.args) == ("host_echo", {"x": 1})  # the real name and arguments

        pic = await client.call_tool("snap", {})
        assert [c.type for c in pic.content] == ["image", "text"]
        assert (pic.content[0].data, pic.content[0].mime_type) == (PNG, "image/png")
    assert bridge.turns.unparks == 2


async def test_a_call_without_an_active_turn_fails_closed(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, [host_tool("host_echo")], host_loop=False) as bridge:
        bridge.turns.handle = None
        async with mcp_client(bridge) as client:
            result = await client.call_tool("host_echo", {})
    assert result.is_error
    assert NO_ACTIVE_TURN in result.content[0].text


async def test_an_unknown_tool_is_an_error_result(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, mcp_client(bridge) as client:
        result = await client.call_tool("no_such_tool", {})
    assert result.is_error and "unknown tool: no_such_tool" in result.content[0].text


async def test_a_slow_call_is_acknowledged_and_polled(tmp_path: Path) -> None:
    settings = RoundTripSettings(park_ttl_s=5.0, escalate_after_s=0.3, escalated_ttl_s=30.0)
    tools = [host_tool("review", ToolResult(text="LGTM"), delay=1.5)]
    async with running_bridge(tmp_path, tools, settings=settings) as bridge, mcp_client(bridge) as client:
        ack = await client.call_tool("review", {})
        text = ack.content[0].text
        assert not ack.is_error and text.startswith("STILL RUNNING")
        call_id = text.split("callId ")[1].split(")")[0]
        answers = []
        with trio.fail_after(20):
            while True:
                polled = await client.call_tool("bridge_poll_result", {"callId": call_id})
                answers.append(polled.content[0].text)
                if not answers[-1].startswith("STILL RUNNING"):
                    break
                await trio.sleep(0.2)
    assert answers[-1] == "LGTM" and len(answers) > 1


async def test_a_disconnect_aborts_the_park(tmp_path: Path) -> None:
    import httpx2

    async with running_bridge(tmp_path, [host_tool("slow")], host_loop=False) as bridge:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow", "arguments": {}}}
        headers = {**bridge.headers, "accept": "application/json, text/event-stream"}
        async with httpx2.AsyncClient() as http:
            with trio.move_on_after(0.5):  # the agent gives up and hangs up
                await http.post(bridge.url, json=body, headers=headers)
        with trio.fail_after(10):
            while not bridge.rt.tombstone_ids:
                await trio.sleep(0.02)
        assert bridge.rt.pending_ids == []
        assert bridge.turns.unparks == 1
        assert any(DISCONNECTED in e.message for e in bridge.turns.events if hasattr(e, "message"))


async def test_the_first_connections_start_up_holds_the_turns_clocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK import on the first connection takes seconds on a busy machine:
    the agent waits on the host then, so its turn must not go "inactive"."""
    import time

    from agy_host.engine.timers import TurnTimers
    from agy_host_bridge_mcp import service

    real_import = service._import_server

    def slow_import() -> object:
        time.sleep(3.0)  # in the worker thread, like the real import: three budgets of silence
        return real_import()

    monkeypatch.setattr(service, "_import_server", slow_import)
    async with running_bridge(tmp_path) as warm, mcp_client(warm):
        pass  # the client's own imports, in this process, must not count either
    # 1 s: more than the gaps between a real handshake's held requests on a loaded runner
    timers = TurnTimers(overall_s=60, inactivity_s=1.0)
    names: list[str] = []
    fired_while_served: list[str | None] = []
    async with running_bridge(tmp_path, [host_tool("host_echo")]) as bridge:
        bridge.turns.handle = TurnHandle(timers=timers)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(timers.watch)
            with timers.scope:  # inactivity cancels this scope when it fires
                timers.arm()
                async with mcp_client(bridge) as client:
                    names += [t.name for t in (await client.list_tools()).tools]
                fired_while_served.append(timers.fired)
                await trio.sleep(2.0)  # past 9/8 of the budget: the watcher fires by then
            timers.stop()
    assert fired_while_served == [None] and "host_echo" in names, (
        f"the bridge's start-up was charged to the agent as silence: {timers.fired=}, {names=}"
    )
    assert timers.expired() == "inactivity", "the clocks run again once the bridge has answered"
