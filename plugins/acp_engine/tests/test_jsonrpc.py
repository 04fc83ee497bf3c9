"""JSON-RPC framing and correlation over real trio byte streams."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from agy_host_acp.jsonrpc import (
    ConnectionClosed,
    JsonRpcConnection,
    JsonRpcError,
    LineBuffer,
    RequestTimeout,
)


class Peer:
    """The other end of the pipe: reads what we send, writes raw lines."""

    def __init__(self, send: trio.abc.SendStream, receive: trio.abc.ReceiveStream) -> None:
        self.send = send
        self.receive = receive
        self._buf = LineBuffer()
        self._lines: list[bytes] = []

    async def read_message(self) -> Any:
        while not self._lines:
            data = await self.receive.receive_some(65536)
            lines, _ = self._buf.feed(data)
            self._lines.extend(lines)
        return json.loads(self._lines.pop(0))

    async def write(self, raw: bytes | str | dict[str, Any]) -> None:
        if isinstance(raw, dict):
            raw = json.dumps(raw)
        if isinstance(raw, str):
            raw = raw.encode()
        await self.send.send_all(raw)


class Harness:
    def __init__(self) -> None:
        ours_to_peer_send, ours_to_peer_recv = trio.testing.memory_stream_one_way_pair()
        peer_to_ours_send, peer_to_ours_recv = trio.testing.memory_stream_one_way_pair()
        self.notes: list[tuple[str, Any]] = []
        self.errors: list[tuple[str, bytes]] = []
        self.requests: list[str] = []
        self.rpc = JsonRpcConnection(
            ours_to_peer_send,
            peer_to_ours_recv,
            on_notification=lambda m, p: self.notes.append((m, msgspec.json.decode(p))),
            on_request=self.serve,
            on_protocol_error=lambda m, line: self.errors.append((m, line)),
        )
        self.peer = Peer(peer_to_ours_send, ours_to_peer_recv)

    async def serve(self, method: str, params: msgspec.Raw) -> Any:
        self.requests.append(method)
        if method == "boom":
            raise RuntimeError("handler bug")
        if method == "refuse":
            raise JsonRpcError(-32601, "nope")
        return {"echo": msgspec.json.decode(params)}


async def test_concurrent_requests_are_correlated_out_of_order() -> None:
    h = Harness()
    results: dict[str, Any] = {}
    async with trio.open_nursery() as nursery:
        await nursery.start(h.rpc.run)

        async def call(name: str) -> None:
            results[name] = await h.rpc.request(name, {"n": name})

        nursery.start_soon(call, "a")
        nursery.start_soon(call, "b")
        first = await h.peer.read_message()
        second = await h.peer.read_message()
        # answer in reverse order, split across writes
        await h.peer.write(json.dumps({"jsonrpc": "2.0", "id": second["id"], "result": {"m": second["method"]}})[:7])
        await h.peer.write(
            json.dumps({"jsonrpc": "2.0", "id": second["id"], "result": {"m": second["method"]}})[7:] + "\n"
        )
        await h.peer.write({"jsonrpc": "2.0", "id": first["id"], "result": {"m": first["method"]}})
        await h.peer.write("\n")
        await trio.sleep(0.05)
        assert results == {"a": {"m": "a"}, "b": {"m": "b"}}
        nursery.cancel_scope.cancel()


async def test_error_response_keeps_code_and_data() -> None:
    h = Harness()
    async with trio.open_nursery() as nursery:
        await nursery.start(h.rpc.run)

        async def answer() -> None:
            req = await h.peer.read_message()
            err = {"code": -32000, "message": "Authentication required", "data": {"message": "sign in first"}}
            await h.peer.write(json.dumps({"jsonrpc": "2.0", "id": req["id"], "error": err}) + "\n")

        nursery.start_soon(answer)
        with pytest.raises(JsonRpcError) as info:
            await h.rpc.request("session/new", {})
        assert info.value.code == -32000
        assert info.value.detail == "sign in first"
        assert info.value.method == "session/new"
        nursery.cancel_scope.cancel()


async def test_agent_requests_are_answered_including_id_zero_and_failures() -> None:
    h = Harness()
    async with trio.open_nursery() as nursery:
        await nursery.start(h.rpc.run)
        await h.peer.write('{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"x":1}}\n')
        assert await h.peer.read_message() == {"jsonrpc": "2.0", "id": 0, "result": {"echo": {"x": 1}}}
        await h.peer.write('{"jsonrpc":"2.0","id":"s1","method":"boom","params":{}}\n')
        reply = await h.peer.read_message()
        assert reply["id"] == "s1"
        assert reply["error"]["code"] == -32603
        assert "handler bug" in reply["error"]["message"]
        await h.peer.write('{"jsonrpc":"2.0","id":7,"method":"refuse","params":{}}\n')
        reply = await h.peer.read_message()
        assert reply["error"] == {"code": -32601, "message": "nope"}
        nursery.cancel_scope.cancel()


async def test_garbage_is_reported_and_skipped() -> None:
    h = Harness()
    async with trio.open_nursery() as nursery:
        await nursery.start(h.rpc.run)
        await h.peer.write(b"Open the following link to authenticate the ACP server: https://accounts.google.com/x\n")
        await h.peer.write(b"\xff\xfe not utf8\n")
        await h.peer.write(b"[1, 2, 3]\n")
        await h.peer.write(b'{"jsonrpc":"2.0","id":999,"result":{}}\n')
        await h.peer.write(b"\x00\n")
        await h.peer.write(b'{"jsonrpc":"2.0","method":"session/update","params":{"ok":true}}\n')
        await trio.sleep(0.05)
        assert h.notes == [("session/update", {"ok": True})]
        messages = [m for m, _ in h.errors]
        assert len(messages) == 5
        assert any("unknown or already-answered id 999" in m for m in messages)
        assert h.errors[0][1].startswith(b"Open the following link")
        nursery.cancel_scope.cancel()


async def test_eof_fails_pending_requests() -> None:
    h = Harness()
    async with trio.open_nursery() as nursery:
        await nursery.start(h.rpc.run)

        async def close_soon() -> None:
            await h.peer.read_message()
            await h.peer.send.aclose()

        nursery.start_soon(close_soon)
        with pytest.raises(ConnectionClosed):
            await h.rpc.request("session/prompt", {})
    with pytest.raises(ConnectionClosed):
        await h.rpc.request("again", {})


async def test_request_timeout_names_the_method() -> None:
    h = Harness()
    async with trio.open_nursery() as nursery:
        await nursery.start(h.rpc.run)
        with pytest.raises(RequestTimeout, match=r"initialize got no answer within 0\.05s"):
            await h.rpc.request("initialize", {}, timeout=0.05)
        assert h.rpc.in_flight == 0
        nursery.cancel_scope.cancel()


def test_field_errors_of_an_invalid_params_answer() -> None:
    from agy_host_acp.jsonrpc import JsonRpcError, field_errors

    many = {"errors": [{"loc": ["a", i], "msg": "bad"} for i in range(7)]}
    assert field_errors(many) == "a.0: bad; a.1: bad; a.2: bad; a.3: bad; a.4: bad; and 2 more"
    assert field_errors([{"path": [], "message": "Expected object"}]) == "(request): Expected object"
    assert field_errors({"errors": "not a list"}) == "" and field_errors(None) == ""
    err = JsonRpcError(-32602, "Invalid params", {"message": "bad prompt", "errors": [{"loc": ["x"], "msg": "y"}]})
    assert err.detail == "bad prompt; x: y"
