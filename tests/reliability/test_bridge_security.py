"""The bridge lets nobody in but the agent, and keeps answering under load
and abuse: real HTTP on the real server (hypercorn + the official ``mcp``
SDK), the official client where a client is needed, raw sockets where the
abuse is below HTTP."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx2
import pytest
import trio

from agy_host.contract.tools import ToolResult
from agy_host_bridge_mcp.testing import host_tool, mcp_client, running_bridge

LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
ACCEPT = "application/json, text/event-stream"


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"x-bridge-token": None}, 403),
        ({"x-bridge-token": ""}, 403),
        ({"x-bridge-token": "short"}, 403),
        ({"x-bridge-token": "x" * 43}, 403),  # the right length, the wrong token
        ({"origin": "http://evil.example"}, 403),
        ({"origin": "null"}, 403),
        ({"host": "evil.example:{port}"}, 403),  # DNS rebinding sends its own name
        ({"host": "127.0.0.1:1"}, 403),
        ({"origin": "http://127.0.0.1:{port}"}, 200),
        ({}, 200),
    ],
)
async def test_only_the_token_holder_on_loopback_gets_in(
    tmp_path: Path, change: dict[str, str | None], status: int
) -> None:
    async with running_bridge(tmp_path) as bridge:
        headers = {"accept": ACCEPT, "content-type": "application/json", **bridge.headers}
        for key, value in change.items():
            if value is None:
                headers.pop(key)
            else:
                headers[key] = value.format(port=bridge.service.port)
        async with httpx2.AsyncClient() as http:
            resp = await http.post(bridge.url, content=json.dumps(LIST), headers=headers)
    assert resp.status_code == status, resp.text
    if status == 403:
        assert resp.json() == {"error": "forbidden"} and "bridge_poll_result" not in resp.text


def _listening_addresses(port: int) -> set[str]:
    """Local addresses of the listening TCP sockets on ``port`` (``/proc/net/tcp*``)."""
    found: set[str] = set()
    for name in ("tcp", "tcp6"):
        table = Path(f"/proc/net/{name}")
        if not table.exists():
            continue
        for line in table.read_text().splitlines()[1:]:
            local, _remote, state = line.split()[1:4]
            addr, port_hex = local.rsplit(":", 1)
            if int(port_hex, 16) == port and state == "0A":  # LISTEN
                found.add(addr)
    return found


def _outward_address() -> str | None:
    """This machine's non-loopback address, if it has one (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.254.254.254", 1))
        except OSError:
            return None
        addr = probe.getsockname()[0]
    return None if addr.startswith("127.") or addr == "0.0.0.0" else addr


async def test_the_bridge_listens_on_loopback_only(tmp_path: Path) -> None:
    """By construction: the socket is bound to 127.0.0.1, so a request from
    another address cannot even connect."""
    async with running_bridge(tmp_path) as bridge:
        port = bridge.service.port
        assert port is not None
        assert _listening_addresses(port) == {"0100007F"}  # 127.0.0.1, and nothing else
        outward = _outward_address()
        if outward is not None:
            with socket.socket() as sock:
                sock.settimeout(2)
                with pytest.raises(OSError):
                    sock.connect((outward, port))


async def test_a_hundred_concurrent_tool_calls_are_all_answered(tmp_path: Path) -> None:
    tools = [host_tool("host_echo", delay=0.05)]
    answers: dict[int, str] = {}
    async with running_bridge(tmp_path, tools) as bridge, mcp_client(bridge) as client:

        async def one(i: int) -> None:
            result = await client.call_tool("host_echo", {"x": i})
            assert not result.is_error, result
            answers[i] = result.content[0].text

        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                for i in range(100):
                    nursery.start_soon(one, i)
    assert answers == {i: f"host_echo got {{'x': {i}}}" for i in range(100)}


async def test_a_slowloris_request_does_not_block_other_calls(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, [host_tool("host_echo")]) as bridge, mcp_client(bridge) as client:
        port = bridge.service.port
        assert port is not None
        stalls = []
        for partial in (
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nx-bridge-tok",  # headers never finished
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nx-bridge-token: %s\r\ncontent-type: application/json\r\n"
            b'content-length: 5000\r\n\r\n{"jsonrpc"' % (port, bridge.service.token.encode()),  # body never finished
        ):
            stall = trio.socket.socket()
            await stall.connect(("127.0.0.1", port))
            await stall.send(partial)
            stalls.append(stall)
        with trio.fail_after(10):
            for i in range(3):
                result = await client.call_tool("host_echo", {"x": i})
                assert result.content[0].text == f"host_echo got {{'x': {i}}}"
        for stall in stalls:
            stall.close()


async def test_a_tool_that_raises_is_an_error_result_and_the_bridge_goes_on(tmp_path: Path) -> None:
    """The bridge's part; the turn layer's part (the agent's turn continues
    after the error result) is held end to end in ``test_credentials.py``."""

    async def boom(_args: dict[str, object]) -> ToolResult:
        raise RuntimeError("tool exploded")

    broken = host_tool("broken")
    broken.call = boom  # type: ignore[misc]
    async with running_bridge(tmp_path, [broken, host_tool("host_echo")], host_loop=False) as bridge:

        async def host_loop() -> None:  # the turn layer's rule: a raising tool answers with an error result
            from agy_host.contract.events import BridgeCallActivity

            assert bridge.turns.handle is not None
            async for act in bridge.turns.handle:
                if isinstance(act, BridgeCallActivity):
                    tool = bridge.turns.tools[act.name]
                    try:
                        result = await tool.call(dict(act.args))
                    except Exception as exc:
                        result = ToolResult(text=f"host tool failed: {exc}", is_error=True)
                    bridge.rt.deliver_tool_result(act.call_id, result)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(host_loop)
            async with mcp_client(bridge) as client:
                failed = await client.call_tool("broken", {})
                fine = await client.call_tool("host_echo", {"x": 1})
            nursery.cancel_scope.cancel()
    assert failed.is_error and "tool exploded" in failed.content[0].text
    assert not fine.is_error and fine.content[0].text == "host_echo got {'x': 1}"
