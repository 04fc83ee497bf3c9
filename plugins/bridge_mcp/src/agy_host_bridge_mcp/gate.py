"""The bridge's front door: an ASGI wrapper that refuses what is not the agent.

Every request passes these checks before the MCP SDK sees it, in this order:

1. a path containing ``/.well-known/`` is 404 (clients probe OAuth metadata
   there; "not found" means "no auth server", which is true);
2. any method but POST is 405 (the bridge is stateless: no SSE GET stream,
   no session DELETE);
3. ``Host`` and ``Origin`` must name the loopback interface, or 403: a web
   page that rebinds its DNS name to 127.0.0.1 still sends its own name;
4. the ``x-bridge-token`` header must equal the per-start token, compared in
   constant time (missing, wrong length, same length but wrong: all 403);
5. the body is read up to 1,000,000 bytes, or 413 (and the connection closes);
6. the body must be JSON, or 400.

Then one quirk is smoothed over: agy sends ``MCP-Protocol-Version`` dates
newer than this SDK knows on requests of the initialize-handshake era. An
unknown version on a request without the 2026 per-request envelope is
rewritten to the newest handshake version the SDK serves, instead of being
rejected with 400 (the original bridge learnt this from agy 2026-07-28).

A plain ``tools/call`` (the bridge's hot path) is then answered by
:mod:`agy_host_bridge_mcp.fast_path` without the SDK's per-request
transport; everything else goes to the SDK.

The wrapper owns the real ``receive``: it hands the SDK the buffered body
and keeps listening for ``http.disconnect``, which it exposes through
:data:`REQUEST` so a parked tool call is failed as soon as the agent hangs up
(the SDK does not cancel a handler in that case).
"""

from __future__ import annotations

import contextvars
import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import msgspec
import trio

if TYPE_CHECKING:
    from agy_host_bridge_mcp.fast_path import FastCalls

TOKEN_HEADER = "x-bridge-token"
BODY_CAP = 1_000_000
PROTOCOL_HEADER = b"mcp-protocol-version"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
#: The envelope key of the 2026 per-request protocol (``params._meta``).
MODERN_META_KEY = "io.modelcontextprotocol/protocolVersion"
#: A body with this many ``[``/``{`` bytes or more is not *strict* (see
#: :func:`read_json`): the SDK's parser refuses about 200 levels of nesting,
#: and fewer openers than that cannot nest deeper.
MAX_STRICT_OPENERS = 128
_strict_decode = msgspec.json.Decoder().decode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
#: ``(event, detail)`` for the service's log (``unauthorized``, ``too-large``...).
OnEvent = Callable[[str, dict[str, Any]], None]


class RequestState:
    """What a tool handler may know about the HTTP request it serves."""

    def __init__(self) -> None:
        self.disconnected = trio.Event()


REQUEST: contextvars.ContextVar[RequestState | None] = contextvars.ContextVar("agy_host_bridge_request", default=None)


def header(scope: Scope, name: bytes) -> str | None:
    """The first ``name`` header of the request (names are lower case in ASGI)."""
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def read_json(body: bytes) -> tuple[Any, bool]:
    """The body's JSON, read once, and whether it is *strict*: UTF-8 JSON that
    the SDK's own parser reads the same way (no BOM, UTF-16, ``NaN``, lone
    surrogate escape, nor deep nesting, on which ``json`` and that parser
    disagree). Only a strict body may take the fast path. Raises
    ``ValueError`` when the body is not JSON at all."""
    if body.count(b"[") + body.count(b"{") < MAX_STRICT_OPENERS:
        try:
            return _strict_decode(body), True
        except msgspec.DecodeError:
            pass
    return json.loads(body), False


def host_is_loopback(value: str | None, port: int | None) -> bool:
    """``Host: 127.0.0.1:PORT`` (or localhost, [::1]); the port, when given, is ours."""
    if not value:
        return False
    if value.startswith("["):
        host, _, rest = value.partition("]")
        host += "]"
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port_text = value.partition(":")
    if host.lower() not in LOOPBACK_HOSTS:
        return False
    return not port_text or port is None or port_text == str(port)


def origin_is_loopback(value: str) -> bool:
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in {"http", "https"} and (parts.hostname or "").lower() in LOOPBACK_HOSTS


def token_matches(given: str | None, token: str) -> bool:
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), token.encode("utf-8"))


async def respond(send: Send, status: int, body: dict[str, Any], *, close: bool = False) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    if status == 405:
        headers.append((b"allow", b"POST"))
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data, "more_body": False})


def clamp_protocol_version(scope: Scope, body: Any, supported: frozenset[str], latest: str) -> str | None:
    """Rewrite an unknown ``MCP-Protocol-Version`` of a handshake-era request
    to ``latest``; returns the version that was replaced, if any."""
    given = header(scope, PROTOCOL_HEADER)
    if given is None or given in supported:
        return None
    if isinstance(body, dict):
        params = body.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and MODERN_META_KEY in meta:
            return None  # a 2026 envelope request: the SDK negotiates it
    scope["headers"] = [
        (key, latest.encode("latin-1") if key == PROTOCOL_HEADER else value) for key, value in scope["headers"]
    ]
    return given


class BridgeGate:
    """Wraps the SDK's ASGI handler; see the module docstring."""

    def __init__(
        self,
        inner: ASGIApp,
        *,
        token: str,
        port: int | None,
        supported_versions: frozenset[str],
        latest_version: str,
        body_cap: int = BODY_CAP,
        on_event: OnEvent | None = None,
        fast: FastCalls | None = None,
    ) -> None:
        self.inner = inner
        self.fast = fast
        self.token = token
        self.port = port
        self.supported = supported_versions
        self.latest = latest_version
        self.body_cap = body_cap
        self.on_event: OnEvent = on_event or (lambda _e, _d: None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # websockets: not served
        path = str(scope.get("path", ""))
        if "/.well-known/" in path:
            await respond(send, 404, {"error": "not found"})
            return
        if scope.get("method") != "POST":
            await respond(send, 405, {"error": "method not allowed"})
            return
        host = header(scope, b"host")
        origin = header(scope, b"origin")
        if not host_is_loopback(host, self.port) or (origin is not None and not origin_is_loopback(origin)):
            self.on_event("foreign-origin", {"host": host or "", "origin": origin or ""})
            await respond(send, 403, {"error": "forbidden"})
            return
        if not token_matches(header(scope, TOKEN_HEADER.encode()), self.token):
            self.on_event("unauthorized", {"path": path})
            await respond(send, 403, {"error": "forbidden"})
            return
        body = await self._read_body(scope, receive, send)
        if body is None:
            return
        try:
            parsed, strict = read_json(body)
        except (ValueError, RecursionError):  # not JSON, or nested too deep to read
            await respond(send, 400, {"error": "invalid json"})
            return
        replaced = clamp_protocol_version(scope, parsed, self.supported, self.latest)
        if replaced is not None:
            self.on_event("protocol-clamp", {"from": replaced, "to": self.latest})
        fast = self.fast
        call = fast.match(scope, parsed) if fast is not None and strict else None
        if fast is not None and call is not None:
            await self._serve(receive, lambda _inner, state: fast.answer(call, send, state.disconnected))
            return
        await self._serve(receive, lambda inner_receive, _state: self.inner(scope, inner_receive, send), body)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _read_body(self, scope: Scope, receive: Receive, send: Send) -> bytes | None:
        declared = header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.body_cap:
            self.on_event("too-large", {"declared": int(declared)})
            await respond(send, 413, {"error": "payload too large"}, close=True)
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = bytes(message.get("body", b""))
            size += len(chunk)
            if size > self.body_cap:
                self.on_event("too-large", {"read": size})
                await respond(send, 413, {"error": "payload too large"}, close=True)
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _serve(
        self, receive: Receive, handler: Callable[[Receive, RequestState], Awaitable[None]], body: bytes = b""
    ) -> None:
        """Run ``handler`` with :data:`REQUEST` set and the real ``receive``
        watched for the agent hanging up; the handler reads the buffered body
        through the ``receive`` it is given."""
        state = RequestState()
        replayed = False

        async def inner_receive() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            await state.disconnected.wait()
            return {"type": "http.disconnect"}

        async def watch_disconnect() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    state.disconnected.set()
                    return

        token = REQUEST.set(state)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(watch_disconnect)
                await handler(inner_receive, state)
                nursery.cancel_scope.cancel()
        finally:
            REQUEST.reset(token)


__all__ = [
    "BODY_CAP",
    "REQUEST",
    "TOKEN_HEADER",
    "BridgeGate",
    "RequestState",
    "clamp_protocol_version",
    "header",
    "host_is_loopback",
    "origin_is_loopback",
    "read_json",
    "token_matches",
]
