"""The fast ``tools/call`` path answers exactly what the SDK answers, on real
HTTP, and leaves every other request to the SDK."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from agy_host.contract.tools import ToolResult
from agy_host.service.roundtrips import DISCONNECTED
from agy_host_bridge_mcp import fast_path, gate, server
from agy_host_bridge_mcp.testing import Bridge, host_tool, mcp_client, running_bridge

PNG = "iVBORw0KGgo="
JSON_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
TOOLS = [
    host_tool("host_echo"),
    host_tool("snap", ToolResult(text="a picture", images=[(PNG, "image/png")])),
    host_tool("refuse", ToolResult(text="no such file", is_error=True)),
    # structured content: the text when it is JSON (an object as it is, else
    # wrapped), or the tool's own object (issue 26 item 5)
    host_tool("number", ToolResult(text="42")),
    host_tool("record", ToolResult(text='{"a": [1, 2]}')),
    host_tool("structured", ToolResult(text="40 + 2 = 42", structured={"result": 42})),
]


def call(request_id: Any = 1, name: Any = "host_echo", **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, **params}}


#: Requests the fast path answers (``arguments`` given, absent, null; ids of both kinds).
FAST = {
    "text": call(arguments={"x": 1}),
    "string id": call("abc", arguments={}),
    "no arguments": call(7),
    "null arguments": call(8, arguments=None),
    "image": call(2, "snap", arguments={}),
    "error result": call(3, "refuse", arguments={}),
    "unknown tool": call(4, "no_such_tool", arguments={}),
    "poll of an unknown id": call(5, "bridge_poll_result", arguments={"callId": "nope"}),
    "unicode": call(6, arguments={"x": "héllo ✓"}),
    "a JSON number as text": call(12, "number", arguments={}),
    "a JSON object as text": call(13, "record", arguments={}),
    "a structured result": call(14, "structured", arguments={}),
    "_meta with a progress token": call(10, arguments={}, _meta={"progressToken": "p"}),
    "_meta of an agent": call(11, arguments={}, _meta={"progressToken": 3, "claudecode/toolUseId": "toolu_1"}),
}
#: Headers a case is sent with (agy's newer protocol dates are clamped by the gate first).
FAST_HEADERS = {"a newer protocol date": {"mcp-protocol-version": "2099-01-01"}}
FAST["a newer protocol date"] = call(9, arguments={})
#: Requests it leaves to the SDK: ``(body, extra headers)``.
SDK = {
    "batch": ([call(1, arguments={})], {}),
    "notification": ({k: v for k, v in call(arguments={}).items() if k != "id"}, {}),
    "null id": (call(None, arguments={}), {}),
    "float id": (call(1.5, arguments={}), {}),
    "bool id": (call(True, arguments={}), {}),
    "name not a string": (call(1, 5, arguments={}), {}),
    "arguments not an object": (call(1, arguments=[1]), {}),
    "_meta not an object": (call(1, arguments={}, _meta=5), {}),
    "_meta null": (call(1, arguments={}, _meta=None), {}),
    "_meta with a bool progress token": (call(1, arguments={}, _meta={"progressToken": True}), {}),
    "_meta with a float progress token": (call(1, arguments={}, _meta={"progressToken": 1.5}), {}),
    "extra member": ({**call(arguments={}), "extra": 1}, {}),
    "another method": ({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, {}),
    "wrong jsonrpc": ({**call(arguments={}), "jsonrpc": "1.0"}, {}),
    "accept html only": (call(arguments={}), {"accept": "text/html"}),
    "content-type text": (call(arguments={}), {"content-type": "text/plain"}),
    "content-type json after another": (call(arguments={}), {"content-type": "text/plain, application/json"}),
    "a 2026 envelope": (call(arguments={}, _meta={"io.modelcontextprotocol/protocolVersion": "2026-07-28"}), {}),
}

_PLAIN = json.dumps(call(arguments={"a": 1}))
#: Bodies the gate's ``json`` accepts and the SDK's parser reads otherwise
#: (mostly: refuses): left to the SDK, which is the judge of them.
RAW = {
    "utf-8 bom": b"\xef\xbb\xbf" + _PLAIN.encode(),
    "utf-16": _PLAIN.encode("utf-16"),
    "NaN": _PLAIN.replace("1}", "NaN}").encode(),
    "lone surrogate escape": _PLAIN.replace("1}", '"\\ud800"}').encode(),
    "deep nesting": _PLAIN.replace("1}", "[" * 210 + "]" * 210 + "}").encode(),
    "many brackets": _PLAIN.replace("1}", "[" + "[], " * 200 + "[]]}").encode(),
}
#: Host tools whose results need the SDK's rules: fields of the wrong types
#: (a host tool's struct is not validated when built), a text that does not
#: encode (a ``surrogateescape``-decoded file name).
RARE_TOOLS = [
    host_tool("untyped_text", ToolResult(text=None)),  # type: ignore[arg-type]
    host_tool("untyped_images", ToolResult(text="x", images=None)),  # type: ignore[arg-type]
    host_tool("coercible_flag", ToolResult(text="x", is_error=1)),  # type: ignore[arg-type]
    host_tool("image_as_list", ToolResult(text="x", images=[[PNG, "image/png"]])),  # type: ignore[list-item]
    host_tool("undecodable", ToolResult(text="file \udcff.txt")),
]
#: The SDK's log records for them (both paths must write the same ones).
RARE_LOGGED = {"untyped_images": ["mcp.shared.jsonrpc_dispatcher"], "undecodable": ["mcp.server.streamable_http"]}


async def _post(bridge: Bridge, body: Any, headers: dict[str, str] | None = None) -> tuple[int, str, Any]:
    import httpx2

    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with httpx2.AsyncClient() as http:
        resp = await http.post(
            bridge.url, content=content, headers={**JSON_HEADERS, **bridge.headers, **(headers or {})}
        )
    text = resp.text
    try:
        decoded: Any = json.loads(text) if text else None
    except ValueError:
        decoded = text
    return resp.status_code, resp.headers.get("content-type", ""), decoded


@pytest.fixture
async def pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[Bridge, Bridge]]:
    async with running_bridge(tmp_path / "fast", TOOLS + RARE_TOOLS) as fast:
        await _post(fast, {"jsonrpc": "2.0", "method": "notifications/initialized"})  # serving, fast path on
        monkeypatch.setattr(server, "FAST_CALLS", False)
        async with running_bridge(tmp_path / "sdk", TOOLS + RARE_TOOLS) as sdk:
            await _post(sdk, {"jsonrpc": "2.0", "method": "notifications/initialized"})  # serving, SDK only
            assert fast.service.fast is not None and sdk.service.fast is None
            yield fast, sdk


def _meaning(answer: tuple[int, str, Any]) -> tuple[int, str, Any]:
    status, ctype, body = answer
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        # the SDK's validation messages quote pydantic's wording (with its
        # version's docs URL): the code and the shape are what must match
        body = {**body, "error": {k: v for k, v in body["error"].items() if k != "message"}}
    return status, ctype.split(";")[0], body


@pytest.mark.parametrize("case", list(FAST))
async def test_the_fast_path_answers_what_the_sdk_answers(pair: tuple[Bridge, Bridge], case: str) -> None:
    fast, sdk = pair
    before = fast.service.fast.answered if fast.service.fast else 0
    headers = FAST_HEADERS.get(case)
    ours, theirs = await _post(fast, FAST[case], headers), await _post(sdk, FAST[case], headers)
    assert ours == theirs
    assert ours[0] == 200 and ours[1] == "application/json"
    assert fast.service.fast is not None and fast.service.fast.answered == before + 1, "answered by the fast path"


@pytest.mark.parametrize("case", list(SDK))
async def test_everything_else_is_left_to_the_sdk(pair: tuple[Bridge, Bridge], case: str) -> None:
    fast, sdk = pair
    body, headers = SDK[case]
    before = fast.service.fast.answered if fast.service.fast else 0
    ours, theirs = await _post(fast, body, headers), await _post(sdk, body, headers)
    assert _meaning(ours) == _meaning(theirs)
    assert fast.service.fast is not None and fast.service.fast.answered == before, "left to the SDK"


@pytest.mark.parametrize("case", list(RAW))
async def test_bodies_the_sdks_parser_reads_otherwise_are_left_to_it(pair: tuple[Bridge, Bridge], case: str) -> None:
    fast, sdk = pair
    before = fast.service.fast.answered if fast.service.fast else 0
    ours, theirs = await _post(fast, RAW[case]), await _post(sdk, RAW[case])
    assert _meaning(ours) == _meaning(theirs)
    assert fast.service.fast is not None and fast.service.fast.answered == before, "left to the SDK"


class _Records(logging.Handler):
    """The SDK's log records (the ones the service keeps), per request."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: list[tuple[str, str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((record.name, record.levelname, record.getMessage()))

    def take(self) -> list[tuple[str, str, str]]:
        seen, self.seen = self.seen, []
        return seen


@pytest.fixture
def records() -> Iterator[_Records]:
    handler = _Records()
    logger = logging.getLogger("mcp")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


@pytest.mark.parametrize("tool", [t.name for t in RARE_TOOLS])
async def test_rare_results_come_out_as_the_sdk_writes_them(
    pair: tuple[Bridge, Bridge], records: _Records, tool: str
) -> None:
    fast, sdk = pair
    before = fast.service.fast.answered if fast.service.fast else 0
    ours = await _post(fast, call(1, tool, arguments={}))
    ours_logged = records.take()
    theirs = await _post(sdk, call(1, tool, arguments={}))
    assert ours == theirs
    assert ours_logged == records.take()
    assert [name for name, _level, _message in ours_logged] == RARE_LOGGED.get(tool, [])
    assert fast.service.fast is not None and fast.service.fast.answered == before + 1, "answered by the fast path"


async def test_a_raising_handler_is_answered_as_the_sdk_answers_it(
    pair: tuple[Bridge, Bridge], records: _Records, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agy_host_bridge_mcp.catalog import Catalog

    async def broken(self: Catalog, name: str, args: Any, *, disconnected: Any = None) -> ToolResult:
        raise RuntimeError(f"catalog broke on {name}")

    fast, sdk = pair
    monkeypatch.setattr(Catalog, "call", broken)
    ours = await _post(fast, call(1, arguments={}))
    ours_logged = records.take()
    theirs = await _post(sdk, call(1, arguments={}))
    error = {"code": 0, "message": "catalog broke on host_echo"}
    assert ours == theirs == (200, "application/json", {"jsonrpc": "2.0", "id": 1, "error": error})
    assert (
        ours_logged == records.take() == [("mcp.shared.jsonrpc_dispatcher", "ERROR", "handler for 'tools/call' raised")]
    )
    events = [e.event for e in fast.service.log.entries()]
    assert "call-tool" in events and "call-tool-done" not in events[events.index("call-tool") :]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_official_client_gets_its_calls_answered(tmp_path: Path, mode: str) -> None:
    async with running_bridge(tmp_path, TOOLS) as bridge, mcp_client(bridge, mode) as client:
        result = await client.call_tool("host_echo", {"x": 1})
        pic = await client.call_tool("snap", {})
        refused = await client.call_tool("refuse", {})
        answered = bridge.service.fast.answered if bridge.service.fast else 0
    assert [c.text for c in result.content] == ["host_echo got {'x': 1}"] and not result.is_error
    assert [c.type for c in pic.content] == ["image", "text"] and pic.content[0].data == PNG
    assert refused.is_error and refused.content[0].text == "no such file"
    if mode == "legacy":  # what agents speak today: the initialize handshake, then plain calls
        assert answered == 3
    assert [c.name for c in bridge.turns.calls] == ["host_echo", "snap", "refuse"]


@pytest.mark.parametrize("fast_calls", [True, False], ids=["fast path", "sdk"])
async def test_a_disconnect_fails_the_parked_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast_calls: bool
) -> None:
    import httpx2

    monkeypatch.setattr(server, "FAST_CALLS", fast_calls)
    async with running_bridge(tmp_path, [host_tool("slow")], host_loop=False) as bridge:
        headers = {**JSON_HEADERS, **bridge.headers}
        async with httpx2.AsyncClient() as http:
            with trio.move_on_after(1.0):  # the agent gives up and hangs up
                await http.post(bridge.url, content=json.dumps(call(arguments={}, name="slow")), headers=headers)
        with trio.fail_after(10):
            while not bridge.rt.tombstone_ids:
                await trio.sleep(0.02)
        assert bridge.rt.pending_ids == []
        assert any(DISCONNECTED in e.message for e in bridge.turns.events if hasattr(e, "message"))
        assert (bridge.service.fast is not None and bridge.service.fast.answered == 1) == fast_calls


def test_match_is_strict_about_what_it_answers() -> None:
    headers = [(b"content-type", b"application/json"), (b"accept", b"*/*")]
    versions = {"2025-06-18"}
    assert fast_path.match({"headers": headers}, call(arguments={"a": 1}), versions) == fast_path.ToolCall(
        id=1, name="host_echo", arguments={"a": 1}
    )
    for case, (body, extra) in SDK.items():
        scope = {"headers": [*headers, *((k.encode(), v.encode()) for k, v in extra.items())]}
        if "content-type" in extra:  # the later header wins in httpx; here the first one is read
            scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"content-type" or v != b"application/json"]
        if "accept" in extra:
            scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"accept" or v != b"*/*"]
        assert fast_path.match(scope, body, versions) is None, case
    assert fast_path.match({"headers": headers[:1]}, call(), versions) is None  # no Accept at all
    unknown = {"headers": [*headers, (b"mcp-protocol-version", b"2099-01-01")]}
    assert fast_path.match(unknown, call(), versions) is None  # the gate clamps it before asking


def test_only_a_strict_body_may_take_the_fast_path() -> None:
    assert gate.read_json(_PLAIN.encode()) == (call(arguments={"a": 1}), True)
    for case, body in RAW.items():
        strict = gate.read_json(body)[1]  # still JSON to the gate (no ValueError)
        assert strict is False, case


@pytest.mark.parametrize(
    ("accept", "ok"),
    [("application/json", True), ("text/event-stream, application/*", True), ("*/*;q=0.1", True), ("text/html", False)],
)
def test_accept_follows_the_sdks_rule(accept: str, ok: bool) -> None:
    assert fast_path.accepts_json(accept) is ok


@pytest.mark.parametrize("outcome", ["result", "raises"])
async def test_the_turns_clock_is_held_until_the_answer_is_sent(outcome: str) -> None:
    """A fast-path call holds the turn's inactivity clock for the whole
    request, as the SDK path does: from before the tool runs until the
    answer's last byte is handed to the server, even when the tool raises."""
    import contextlib

    events: list[str] = []

    @contextlib.contextmanager
    def hold() -> Iterator[None]:
        events.append("hold")
        try:
            yield
        finally:
            events.append("release")

    async def call(name: str, args: dict[str, Any], disconnected: trio.Event | None) -> ToolResult:
        events.append("call")
        if outcome == "raises":
            raise RuntimeError("boom")
        return ToolResult(text="ok")

    async def send(message: Any) -> None:
        events.append(message["type"])

    fast = fast_path.FastCalls(call, supported_versions={"2025-11-25"}, rules=server.SdkRules(), hold=hold)
    await fast.answer(fast_path.ToolCall(id=1, name="host_echo", arguments={}), send, None)
    assert events == ["hold", "call", "http.response.start", "http.response.body", "release"]
    assert fast.answered == 1
