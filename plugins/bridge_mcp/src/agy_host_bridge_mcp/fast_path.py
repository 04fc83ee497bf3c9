"""``tools/call`` answered without the SDK's per-request transport.

In stateless JSON-response mode the MCP SDK builds, for every POST, a
transport, a dispatcher, task groups and pydantic models: about 4 ms of a
5 ms round trip on loopback (docs/performance.md, B3), paid on every call an
agent makes to a host tool. A tool call is the bridge's hot path, and its
shape is small, so the gate answers the plain case itself:

* one JSON-RPC 2.0 request object (not a batch, not a notification) whose
  ``method`` is ``tools/call``, with an integer or string ``id``;
* ``params`` holding only ``name`` (a string) and ``arguments`` (an object,
  absent or null): no ``_meta`` (progress tokens, the 2026 per-request
  envelope), nothing else the SDK would have to interpret;
* headers the SDK would accept in that mode: ``Content-Type`` is JSON (both
  of its checks), ``Accept`` allows JSON, and ``MCP-Protocol-Version`` is
  absent or a handshake-era version it serves.

Anything else goes to the SDK unchanged, so the SDK stays the authority on
everything this module does not know. The answer is the one the SDK gives
(``CallToolResult`` dumped by alias without ``None`` fields, inside a
JSON-RPC response; status 200, ``application/json``): the bridge's tests
compare the two byte-for-meaning on real HTTP. Free of the SDK, so the
first call needs no import of it either.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Collection, MutableMapping
from typing import Any

import msgspec
import trio

from agy_host.tools import ToolResult

Scope = MutableMapping[str, Any]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
#: ``(name, arguments, disconnected)`` -> the tool's result; never raises for the tool's failures.
CallTool = Callable[[str, dict[str, Any], "trio.Event | None"], Awaitable[ToolResult]]

REQUEST_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
PARAM_KEYS = frozenset({"name", "arguments"})
JSON = "application/json"
_encode = msgspec.json.Encoder().encode


class ToolCall(msgspec.Struct, frozen=True):
    id: int | str
    name: str
    arguments: dict[str, Any]


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def accepts_json(accept: str | None) -> bool:
    """The SDK's rule (``check_accept_headers``): a media type of
    ``application/json``, ``application/*`` or ``*/*``, parameters ignored."""
    types = {part.split(";")[0].strip().lower() for part in (accept or "").split(",")}
    return bool(types & {JSON, "application/*", "*/*"})


def content_type_is_json(value: str | None) -> bool:
    """Both of the SDK's checks: the transport-security prefix test and the
    transport's exact media-type test."""
    if value is None or not value.lower().startswith(JSON):
        return False
    return any(part.strip() == JSON for part in value.split(";")[0].split(","))


def match(scope: Scope, body: Any, supported_versions: Collection[str]) -> ToolCall | None:
    """The call, when this request is one the fast path answers exactly as the SDK would."""
    if type(body) is not dict or not body.keys() <= REQUEST_KEYS:
        return None
    if body.get("jsonrpc") != "2.0" or body.get("method") != "tools/call":
        return None
    request_id = body.get("id")
    if type(request_id) is not int and type(request_id) is not str:
        return None  # a notification, a float, a bool, null: the SDK's to judge
    params = body.get("params")
    if type(params) is not dict or not params.keys() <= PARAM_KEYS:
        return None
    name = params.get("name")
    arguments = params.get("arguments")
    if type(name) is not str or (arguments is not None and type(arguments) is not dict):
        return None
    version = _header(scope, b"mcp-protocol-version")
    if version is not None and version not in supported_versions:
        return None
    if not content_type_is_json(_header(scope, b"content-type")) or not accepts_json(_header(scope, b"accept")):
        return None
    return ToolCall(id=request_id, name=name, arguments=arguments or {})


def encode_result(request_id: int | str, result: ToolResult) -> bytes:
    """Images first, then the text: the same blocks as :func:`server.to_mcp`."""
    content: list[dict[str, Any]] = [{"type": "image", "data": data, "mimeType": mime} for data, mime in result.images]
    content.append({"type": "text", "text": result.text})
    return _encode({"jsonrpc": "2.0", "id": request_id, "result": {"content": content, "isError": result.is_error}})


class FastCalls:
    """What the gate needs to answer a :class:`ToolCall`: the catalog's call
    and the hold on the turn's clocks (both supplied by the server)."""

    def __init__(
        self,
        call: CallTool,
        *,
        supported_versions: Collection[str],
        hold: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext,
    ) -> None:
        self.call = call
        self.supported = frozenset(supported_versions)
        self.hold = hold
        #: Calls answered here (the rest went to the SDK).
        self.answered = 0

    def match(self, scope: Scope, body: Any) -> ToolCall | None:
        return match(scope, body, self.supported)

    async def answer(self, call: ToolCall, send: Send, disconnected: trio.Event | None) -> None:
        self.answered += 1
        with self.hold():
            result = await self.call(call.name, call.arguments, disconnected)
        data = encode_result(call.id, result)
        headers = [(b"content-type", JSON.encode()), (b"content-length", str(len(data)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": data, "more_body": False})


__all__ = ["FastCalls", "ToolCall", "accepts_json", "content_type_is_json", "encode_result", "match"]
