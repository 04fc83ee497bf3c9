"""The bridge's front door over real HTTP: token, loopback Host/Origin,
method, path, body cap, JSON, and the protocol-version quirk of agy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from agy_host_bridge_mcp.gate import BODY_CAP, clamp_protocol_version, host_is_loopback, origin_is_loopback
from agy_host_bridge_mcp.testing import Bridge, host_tool, running_bridge

LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
ACCEPT = "application/json, text/event-stream"


async def post(
    bridge: Bridge, body: Any = LIST, *, headers: dict[str, str] | None = None, **kw: Any
) -> httpx2.Response:
    sent = {"accept": ACCEPT, "content-type": "application/json", **bridge.headers, **(headers or {})}
    data = body if isinstance(body, (bytes, str)) or hasattr(body, "__aiter__") else json.dumps(body)
    async with httpx2.AsyncClient() as http:
        return await http.post(kw.pop("url", bridge.url), content=data, headers=sent, **kw)


@pytest.mark.parametrize(
    "token", [None, "", "short", "x" * 43], ids=["missing", "empty", "wrong-length", "same-length-wrong"]
)
async def test_a_bad_token_is_403(tmp_path: Path, token: str | None) -> None:
    async with running_bridge(tmp_path) as bridge:
        assert len(bridge.service.token) == 43
        headers = dict(bridge.headers)
        if token is None:
            del headers["x-bridge-token"]
        else:
            headers["x-bridge-token"] = token
        async with httpx2.AsyncClient() as http:
            resp = await http.post(bridge.url, json=LIST, headers={"accept": ACCEPT, **headers})
        good = await post(bridge)
    assert resp.status_code == 403 and resp.json() == {"error": "forbidden"}
    assert good.status_code == 200 and "bridge_poll_result" in good.text
    assert any("unauthorized" in w for w in bridge.warnings)  # said once, then only logged


async def test_every_start_draws_a_new_token(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as first:
        token = first.service.token
    async with running_bridge(tmp_path) as second:
        assert second.service.token != token


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
async def test_only_post_is_served(tmp_path: Path, method: str) -> None:
    async with running_bridge(tmp_path) as bridge, httpx2.AsyncClient() as http:
        resp = await http.request(method, bridge.url, headers=bridge.headers)
    assert resp.status_code == 405 and resp.headers["allow"] == "POST"


async def test_well_known_is_404_without_a_token(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, httpx2.AsyncClient() as http:
        base = bridge.url.removesuffix("/mcp")
        resp = await http.get(f"{base}/.well-known/oauth-protected-resource")
    assert resp.status_code == 404 and resp.json() == {"error": "not found"}


@pytest.mark.parametrize(
    ("header", "value", "status"),
    [
        ("host", "evil.example:{port}", 403),
        ("host", "127.0.0.1:1", 403),
        ("host", "localhost:{port}", 200),
        ("origin", "http://evil.example", 403),
        ("origin", "null", 403),
        ("origin", "http://localhost:{port}", 200),
        ("origin", "http://127.0.0.1:{port}", 200),
    ],
)
async def test_host_and_origin_must_be_loopback(tmp_path: Path, header: str, value: str, status: int) -> None:
    async with running_bridge(tmp_path) as bridge:
        resp = await post(bridge, headers={header: value.format(port=bridge.service.port)})
    assert resp.status_code == status


async def test_the_body_cap_is_413(tmp_path: Path) -> None:
    big = json.dumps({**LIST, "params": {"pad": "x" * BODY_CAP}})
    async with running_bridge(tmp_path) as bridge:
        declared = await post(bridge, big)

        async def chunks() -> Any:  # no Content-Length: the cap holds while reading
            for _ in range(12):
                yield b" " * 100_000

        streamed = await post(bridge, chunks())
        ok = await post(bridge, json.dumps({**LIST, "params": {"pad": "x" * 1000}}))
    assert declared.status_code == 413 and declared.json() == {"error": "payload too large"}
    assert streamed.status_code == 413
    assert ok.status_code == 200


async def test_json_nested_too_deep_is_400_not_500(tmp_path: Path) -> None:
    deep = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": ' + b"[" * 3000 + b"]" * 3000 + b"}"
    async with running_bridge(tmp_path) as bridge:
        resp = await post(bridge, deep)
        after = await post(bridge, json.dumps(LIST))
    assert resp.status_code == 400 and resp.json() == {"error": "invalid json"}
    assert after.status_code == 200, "the bridge serves on"


async def test_malformed_json_is_400(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge:
        resp = await post(bridge, b'{"jsonrpc": "2.0", "id": 1, "method": ')
    assert resp.status_code == 400 and resp.json() == {"error": "invalid json"}


@pytest.mark.parametrize("version", ["2026-07-28", "2027-01-15", "2025-11-25"])
async def test_a_newer_protocol_version_header_is_tolerated(tmp_path: Path, version: str) -> None:
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "host_echo", "arguments": {"x": 3}}}
    async with running_bridge(tmp_path, [host_tool("host_echo")]) as bridge:
        listed = await post(bridge, headers={"mcp-protocol-version": version})
        called = await post(bridge, call, headers={"mcp-protocol-version": version})
    assert listed.status_code == 200, listed.text
    assert [t["name"] for t in listed.json()["result"]["tools"]] == ["host_echo", "bridge_poll_result"]
    assert called.status_code == 200, called.text
    assert called.json()["result"]["content"][0]["text"] == "host_echo got {'x': 3}"


def test_clamp_leaves_2026_envelope_requests_to_the_sdk() -> None:
    scope: dict[str, Any] = {"headers": [(b"mcp-protocol-version", b"2026-07-28")]}
    modern = {"params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}
    assert clamp_protocol_version(scope, modern, frozenset({"2025-11-25"}), "2025-11-25") is None
    assert clamp_protocol_version(scope, {"params": {}}, frozenset({"2025-11-25"}), "2025-11-25") == "2026-07-28"
    assert scope["headers"] == [(b"mcp-protocol-version", b"2025-11-25")]


def test_loopback_helpers() -> None:
    assert host_is_loopback("[::1]:80", 80) and host_is_loopback("LOCALHOST", 80)
    assert not host_is_loopback("127.0.0.1.evil.example:80", 80) and not host_is_loopback(None, 80)
    assert origin_is_loopback("https://[::1]:9") and not origin_is_loopback("file://")
