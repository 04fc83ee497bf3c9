"""``tools/call`` answered without the SDK's per-request transport.

In stateless JSON-response mode the MCP SDK builds, for every POST, a
transport, a dispatcher, task groups and pydantic models: about 4 ms of a
5 ms round trip on loopback (docs/performance.md, B3), paid on every call an
agent makes to a host tool. A tool call is the bridge's hot path, and its
shape is small, so the gate answers the plain case itself:

* one JSON-RPC 2.0 request object (not a batch, not a notification) whose
  ``method`` is ``tools/call``, with an integer or string ``id``;
* ``params`` holding only ``name`` (a string), ``arguments`` (an object,
  absent or null) and ``_meta`` when it is an object without the 2026
  envelope key whose ``progressToken``, if any, is a string or an integer
  (agents put their own keys there, e.g. a tool-use id; the SDK only reads
  the progress token, and never sends progress for this server): nothing
  else the SDK would have to interpret;
* headers the SDK would accept in that mode: ``Content-Type`` is JSON (both
  of its checks), ``Accept`` allows JSON, and ``MCP-Protocol-Version`` is
  absent or a handshake-era version it serves;
* a *strict* body (:func:`agy_host_bridge_mcp.gate.read_json`, which the
  gate reads once for both paths): UTF-8 JSON the SDK's own parser reads the
  same way.

Anything else goes to the SDK unchanged, so the SDK stays the authority on
everything this module does not know. The answer is the one the SDK gives
(``CallToolResult`` dumped by alias without ``None`` fields, inside a
JSON-RPC response; status 200, ``application/json``): the bridge's tests
compare the two byte-for-meaning on real HTTP. The rare answers that need
the SDK's own models (a host tool's result with fields of the wrong types,
an exception out of the catalog, a text that cannot be encoded, such as a
lone surrogate from a ``surrogateescape``-decoded file name) are asked of
:class:`SdkRules`, which the server implements with the SDK's code, so they
match too. Free of the SDK, so the first call needs no import of it either.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Collection, MutableMapping
from typing import Any, Protocol

import msgspec
import trio

from agy_host.contract.tools import ToolResult
from agy_host_bridge_mcp.gate import MODERN_META_KEY, header

Scope = MutableMapping[str, Any]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
#: ``(name, arguments, disconnected)`` -> the tool's result; never raises for the tool's failures.
CallTool = Callable[[str, dict[str, Any], "trio.Event | None"], Awaitable[ToolResult]]

REQUEST_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
PARAM_KEYS = frozenset({"name", "arguments", "_meta"})
JSON = "application/json"
_encode = msgspec.json.Encoder().encode


class ToolCall(msgspec.Struct, frozen=True):
    id: int | str
    name: str
    arguments: dict[str, Any]
    #: The request's ``MCP-Protocol-Version`` (``None``: none was sent).
    version: str | None = None


class SdkRules(Protocol):
    """The SDK's answers for the rare cases :func:`plain_result` does not
    cover (the server implements it with the SDK's own code)."""

    def tool_result(self, result: ToolResult, version: str | None) -> dict[str, Any]:
        """``{"result": ...}`` or ``{"error": ...}``: what the SDK sends for a
        result with fields of unexpected types."""
        ...

    def handler_error(self, exc: Exception) -> dict[str, Any]:
        """The JSON-RPC ``error`` the SDK sends when the handler raised ``exc``."""
        ...

    def unencodable(self, exc: Exception) -> bytes:
        """The body of the SDK's 500 when the response could not be encoded."""
        ...


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
    if "_meta" in params and not _plain_meta(params["_meta"]):
        return None
    version = header(scope, b"mcp-protocol-version")
    if version is not None and version not in supported_versions:
        return None
    if not content_type_is_json(header(scope, b"content-type")) or not accepts_json(header(scope, b"accept")):
        return None
    return ToolCall(id=request_id, name=name, arguments=arguments or {}, version=version)


def _plain_meta(meta: object) -> bool:
    """A handshake-era ``_meta`` the SDK accepts as it is: an object, no 2026
    envelope, a progress token (if any) that is a string or an integer."""
    if type(meta) is not dict or MODERN_META_KEY in meta:
        return False
    token = meta.get("progressToken", "")
    return type(token) is str or type(token) is int


def structured_content(result: ToolResult) -> dict[str, Any] | None:
    """The ``structuredContent`` sent with a result: the tool's own
    (:attr:`ToolResult.structured`), else the text when it is JSON, as it is
    when an object and as ``{"result": ...}`` when not; ``None`` for plain text.

    A result without it is read by some clients as if its first text block
    were one: the Gemini CLI (0.61) parses that text as JSON into
    ``structuredContent``, and its MCP client then refuses the call unless
    it is an object (``40 + 2`` answered ``42`` was an error). Sending an
    object every time the text is JSON leaves nothing to guess."""
    given: Any = result.structured
    if type(given) is dict:
        return given
    text: Any = result.text
    if type(text) is not str:
        return None
    try:
        parsed = msgspec.json.decode(text)
    except (ValueError, RecursionError):  # not JSON; or a lone surrogate (not UTF-8), nor JSON either
        return None
    return parsed if type(parsed) is dict else {"result": parsed}


def plain_result(result: ToolResult) -> dict[str, Any] | None:
    """``CallToolResult`` as the SDK dumps it (images first, then the text:
    the blocks of :func:`server.to_mcp`; the :func:`structured_content`),
    when every field has its declared type; ``None`` otherwise (a host
    tool's struct is not validated when it is built, and the SDK's models
    would refuse or coerce it)."""
    text: Any = result.text
    images: Any = result.images
    is_error: Any = result.is_error
    if type(text) is not str or type(is_error) is not bool or type(images) is not list:
        return None
    content: list[dict[str, Any]] = []
    for image in images:
        if type(image) is not tuple and type(image) is not list:
            return None
        if len(image) != 2 or type(image[0]) is not str or type(image[1]) is not str:
            return None
        content.append({"type": "image", "data": image[0], "mimeType": image[1]})
    content.append({"type": "text", "text": text})
    structured = structured_content(result)
    if structured is None:
        return {"content": content, "isError": is_error}
    return {"content": content, "structuredContent": structured, "isError": is_error}


class FastCalls:
    """What the gate needs to answer a :class:`ToolCall`: the catalog's call,
    the hold on the turn's inactivity clock and the SDK's rules for the rare cases
    (all supplied by the server)."""

    def __init__(
        self,
        call: CallTool,
        *,
        supported_versions: Collection[str],
        rules: SdkRules,
        hold: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext,
    ) -> None:
        self.call = call
        self.supported = frozenset(supported_versions)
        self.rules = rules
        self.hold = hold
        #: Calls answered here (the rest went to the SDK).
        self.answered = 0

    def match(self, scope: Scope, body: Any) -> ToolCall | None:
        """The call in the (strict) parsed ``body``, when it is one this path answers."""
        return match(scope, body, self.supported)

    async def answer(self, call: ToolCall, send: Send, disconnected: trio.Event | None) -> None:
        self.answered += 1
        # held until the answer is sent, like the SDK's whole request
        with self.hold():
            try:
                result = await self.call(call.name, call.arguments, disconnected)
            except Exception as exc:  # the SDK answers a raising handler with an error, not a 500
                member = {"error": self.rules.handler_error(exc)}
            else:
                plain = plain_result(result)
                member = {"result": plain} if plain is not None else self.rules.tool_result(result, call.version)
            status = 200
            try:
                data = _encode({"jsonrpc": "2.0", "id": call.id, **member})
            except (TypeError, ValueError) as exc:  # UnicodeEncodeError: a lone surrogate in the text
                status, data = 500, self.rules.unencodable(exc)
            headers = [(b"content-type", JSON.encode()), (b"content-length", str(len(data)).encode())]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": data, "more_body": False})


__all__ = [
    "FastCalls",
    "SdkRules",
    "ToolCall",
    "accepts_json",
    "content_type_is_json",
    "match",
    "plain_result",
    "structured_content",
]
