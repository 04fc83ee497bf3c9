"""Newline-delimited JSON-RPC 2.0 over a pair of trio byte streams.

What this layer guarantees, because real agents need each of them:

* **Line buffering across chunk boundaries.** Pipe reads are not aligned to
  newlines; a frame split over two reads is reassembled, never dropped (the
  original's P0 bug). Lines are split on ``\\n`` only.
* **Lines up to 64 MiB.** A longer line is refused as soon as it is known to
  be too long: the refusal is reported through ``on_protocol_error``, its
  bytes are discarded up to the next newline and the connection stays usable
  (the documented choice, docs/reliability.md; a huge frame is one bad
  message, not a dead agent). Buffering is linear in the line's size.
* **Nothing fatal from garbage.** A non-JSON line (Antigravity prints its
  sign-in URL this way), invalid UTF-8, a NUL byte, a JSON array, a response to
  an unknown or already-answered id: each is reported through a callback and
  skipped.
* **Correlation and concurrency.** Any number of requests may be in flight;
  responses are matched by id; error responses keep their code and data
  (:class:`JsonRpcError`), so callers can tell -32601 from -32000. Requests
  from the agent are served concurrently in the connection's nursery and
  always answered (an exception in a handler becomes an error response).
* ``abort_all`` fails every pending request at once when the agent dies.
* **Withdrawn requests.** A ``$/cancel_request`` from the agent cancels the
  handler of the request it names (a permission prompt, a question being
  asked), which is answered with ACP's request-cancelled error (-32800);
  ``on_withdrawn`` is told, so the person learns why the prompt went away.

Notifications are dispatched synchronously from the read loop: they are the
hot path (hundreds of thousands of ``session/update`` chunks per turn), so
they cost one decode and one callback each, with no task switch.

The wire trace (``--trace``) sees every line of a read before it is
dispatched, so the fast path and the generic path are traced alike; with
tracing off that is one ``is None`` check per read, not per line.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from agy_host.engine.process import MAX_LINE_BYTES, LineSplitter

if TYPE_CHECKING:
    from agy_host.engine.trace import TraceTap

READ_CHUNK = 256 * 1024

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: ACP's (and LSP's) answer to a request its sender withdrew with ``$/cancel_request``.
REQUEST_CANCELLED = -32800
AUTH_REQUIRED = -32000


class JsonRpcError(Exception):
    """An error response from the peer, code and data kept."""

    def __init__(self, code: int, message: str, data: Any = None, *, method: str = "") -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data
        self.method = method

    @property
    def detail(self) -> str:
        """The agent's own remediation text when it sent one in ``data``, and
        the field paths of a validation error (``-32602``), which say exactly
        which part of agy-host's request the agent refused."""
        data = self.data
        fields = field_errors(data)
        if isinstance(data, dict):
            for key in ("message", "details", "detail", "reason"):
                value = data.get(key)
                if isinstance(value, str) and value:
                    return f"{value}; {fields}" if fields else value
        if isinstance(data, str):
            return data
        return fields


#: Validation errors shown in one message; the rest are counted.
_FIELD_ERRORS_SHOWN = 5


def field_errors(data: Any) -> str:
    """``data.errors[]`` of an invalid-params answer as ``path: message``.

    The ACP SDKs validate requests with pydantic (Python: ``loc``, ``msg``)
    or zod (TypeScript: ``path``, ``message``); a list at the top of ``data``
    is accepted too. Anything else is ignored (``""``)."""
    errors = data.get("errors") if isinstance(data, dict) else data
    if not isinstance(errors, list):
        return ""
    parts: list[str] = []
    for error in errors:
        if not isinstance(error, dict):
            continue
        loc = error.get("loc", error.get("path"))
        where = ".".join(str(p) for p in loc) if isinstance(loc, list) else str(loc or "")
        what = error.get("msg", error.get("message", ""))
        parts.append(f"{where or '(request)'}: {what}" if what else where)
    if not parts:
        return ""
    more = len(parts) - _FIELD_ERRORS_SHOWN
    shown = "; ".join(parts[:_FIELD_ERRORS_SHOWN])
    return shown + (f"; and {more} more" if more > 0 else "")


class ConnectionClosed(Exception):
    """The connection ended (agent exited, torn down) with requests pending."""


class RequestTimeout(Exception):
    def __init__(self, method: str, seconds: float) -> None:
        super().__init__(f"{method} got no answer within {seconds:g}s")
        self.method = method
        self.seconds = seconds


class _Error(msgspec.Struct):
    code: int = INTERNAL_ERROR
    message: str = ""
    data: Any = None


class _Envelope(msgspec.Struct, kw_only=True):
    jsonrpc: str = "2.0"
    id: int | str | None = None
    method: str | None = None
    params: msgspec.Raw = msgspec.Raw(b"null")
    result: msgspec.Raw = msgspec.Raw(b"null")
    error: _Error | None = None


class _Pending:
    __slots__ = ("done", "error", "method", "result")

    def __init__(self, method: str) -> None:
        self.method = method
        self.done = trio.Event()
        self.result: Any = None
        self.error: BaseException | None = None


class FastPath(msgspec.Struct, frozen=True):
    """A typed single-pass decoder for the one notification that floods.

    Lines containing ``marker`` are first decoded with ``decoder`` straight
    into their final struct and handed to ``handler``; a line that does not
    fit falls back to the generic envelope path, so nothing is lost.

    With ``batch_handler``, the fast-path messages of one read are handed
    over together, in order, as one list: a run of them is interrupted (the
    list so far delivered first) by any other line, so the order of all
    messages is kept. One call per read instead of one per line is what keeps
    a 200,000-chunk flood near the cost of decoding it.
    """

    marker: bytes
    decoder: Any
    handler: Callable[[Any], None]
    batch_handler: Callable[[list[Any]], None] | None = None


NotificationHandler = Callable[[str, msgspec.Raw], None]
RequestHandler = Callable[[str, msgspec.Raw], Awaitable[Any]]
ErrorHandler = Callable[[str, bytes], None]
#: Told the method and params of a request the agent withdrew (``$/cancel_request``).
WithdrawnHandler = Callable[[str, msgspec.Raw], None]


#: The engine's name for core's framing (linear in a line's size, refusals
#: counted when detected): :class:`agy_host.engine.process.LineSplitter`.
LineBuffer = LineSplitter


class JsonRpcConnection:
    """One JSON-RPC peer over ``send``/``receive`` byte streams."""

    def __init__(
        self,
        send: trio.abc.SendStream,
        receive: trio.abc.ReceiveStream,
        *,
        on_notification: NotificationHandler,
        on_request: RequestHandler,
        on_protocol_error: ErrorHandler,
        max_line: int = MAX_LINE_BYTES,
        fast_path: FastPath | None = None,
        trace: TraceTap | None = None,
        on_withdrawn: WithdrawnHandler | None = None,
    ) -> None:
        self._send = send
        self._receive = receive
        self._on_notification = on_notification
        self._on_request = on_request
        self._on_protocol_error = on_protocol_error
        self._fast = fast_path
        self._trace = trace
        self._buffer = LineBuffer(max_line)
        self._ids = itertools.count(0)
        self._pending: dict[int | str, _Pending] = {}
        #: The agent's requests being served, by id: what ``$/cancel_request`` cancels.
        self._serving: dict[int | str, trio.CancelScope] = {}
        self._on_withdrawn = on_withdrawn
        self._send_lock = trio.Lock()
        self._decoder = msgspec.json.Decoder(_Envelope)
        self._encoder = msgspec.json.Encoder()
        self._closed: str | None = None
        #: Set when the read loop has ended (EOF or a broken pipe).
        self.finished = trio.Event()
        self._nursery: trio.Nursery | None = None
        self.sent = 0
        self.received = 0

    # -- lifecycle -----------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Read until EOF; serve agent requests in a nursery owned by this call."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            try:
                await self._read_loop()
            finally:
                self.finished.set()
                self.abort_all("connection closed: agent output ended")
                nursery.cancel_scope.cancel()

    async def _read_loop(self) -> None:
        receive = self._receive.receive_some
        feed = self._buffer.feed
        batched = self._fast is not None and self._fast.batch_handler is not None
        trace = self._trace
        while True:
            try:
                data = await receive(READ_CHUNK)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if not data:
                tail = self._buffer.flush()
                if tail.strip():
                    if trace is not None:
                        trace.received(tail)
                    self._dispatch(tail)
                return
            lines, dropped = feed(data)
            if trace is not None:
                for line in lines:
                    if line:
                        trace.received(line)
            if dropped:
                self._on_protocol_error(f"refused {dropped} line(s) longer than {self._buffer.max_line} bytes", b"")
            if batched:
                self._dispatch_batch(lines)
                continue
            for line in lines:
                if line:
                    self._dispatch(line)

    def _dispatch_batch(self, lines: list[bytes]) -> None:
        """Every line of one read: fast-path messages collected into runs for
        ``batch_handler``, anything else dispatched alone, in order."""
        fast = self._fast
        assert fast is not None and fast.batch_handler is not None
        decode = fast.decoder.decode
        deliver = fast.batch_handler
        # The flood: every line of the read is a fast-path message, decoded in
        # one comprehension. Any other line (a response, garbage, an empty
        # line) fails its decode and the read is dispatched line by line.
        try:
            every = list(map(decode, lines))
        except (msgspec.DecodeError, RecursionError):
            pass
        else:
            if every:
                self.received += len(every)
                deliver(every)
            return
        marker = fast.marker
        run: list[Any] = []
        append = run.append
        for line in lines:
            if marker in line:
                try:
                    append(decode(line))
                    continue
                except (msgspec.DecodeError, RecursionError):
                    pass  # not the shape the fast path knows: the generic path decides
            elif not line:
                continue
            if run:
                self.received += len(run)
                deliver(run)
                run = []
                append = run.append
            self.received += 1
            self._dispatch_envelope(line)
        if run:
            self.received += len(run)
            deliver(run)

    def _dispatch(self, line: bytes) -> None:
        self.received += 1
        fast = self._fast
        if fast is not None and fast.marker in line:
            try:
                message = fast.decoder.decode(line)
            except (msgspec.DecodeError, RecursionError):
                pass  # not the shape the fast path knows: the generic path decides
            else:
                fast.handler(message)
                return
        self._dispatch_envelope(line)

    def _dispatch_envelope(self, line: bytes) -> None:
        try:
            env = self._decoder.decode(line)
        except (msgspec.DecodeError, RecursionError) as exc:
            stripped = line.strip()
            if not stripped:
                return
            self._on_protocol_error(f"not a JSON-RPC message: {exc}", stripped)
            return
        method = env.method
        if method is not None:
            if env.id is None and method == "$/cancel_request":
                self._withdraw(env.params)
                return
            if env.id is None:
                try:
                    self._on_notification(method, env.params)
                except Exception as exc:  # a handler bug must not kill the reader
                    self._on_protocol_error(f"notification handler failed for {method}: {exc!r}", b"")
                return
            if self._nursery is None:
                return
            self._nursery.start_soon(self._serve, env.id, method, env.params)
            return
        if env.id is None:
            self._on_protocol_error("message with neither method nor id", line[:500])
            return
        pending = self._pending.pop(env.id, None)
        if pending is None:
            self._on_protocol_error(f"response to unknown or already-answered id {env.id!r}", line[:500])
            return
        if env.error is not None:
            err = env.error
            pending.error = JsonRpcError(err.code, err.message, err.data, method=pending.method)
        else:
            try:
                pending.result = msgspec.json.decode(env.result)
            except msgspec.DecodeError as exc:  # pragma: no cover - decoded once already
                pending.error = exc
        pending.done.set()

    def _withdraw(self, params: msgspec.Raw) -> None:
        """``$/cancel_request`` from the agent: stop serving that request.
        One for a request already answered (or never sent) is ignored, as
        the protocol says."""
        try:
            decoded = msgspec.json.decode(params)
        except msgspec.DecodeError:
            decoded = None
        req_id = decoded.get("requestId") if isinstance(decoded, dict) else None
        if not isinstance(req_id, int | str) or isinstance(req_id, bool):
            self._on_protocol_error("$/cancel_request without a requestId", bytes(params)[:200])
            return
        scope = self._serving.get(req_id)
        if scope is not None:
            scope.cancel()

    async def _serve(self, req_id: int | str, method: str, params: msgspec.Raw) -> None:
        scope = trio.CancelScope()
        self._serving[req_id] = scope
        try:
            with scope:
                result = await self._on_request(method, params)
        except JsonRpcError as exc:
            await self._write({"jsonrpc": "2.0", "id": req_id, "error": _error_obj(exc)})
            return
        except Exception as exc:
            err = {"code": INTERNAL_ERROR, "message": f"client error: {type(exc).__name__}: {exc}"}
            await self._write({"jsonrpc": "2.0", "id": req_id, "error": err})
            return
        finally:
            self._serving.pop(req_id, None)
        if scope.cancelled_caught:
            if self._on_withdrawn is not None:
                try:
                    self._on_withdrawn(method, params)
                except Exception as exc:  # a handler bug must not leave the request unanswered
                    self._on_protocol_error(f"withdrawn handler failed for {method}: {exc!r}", b"")
            err = {"code": REQUEST_CANCELLED, "message": "Request cancelled"}
            await self._write({"jsonrpc": "2.0", "id": req_id, "error": err})
            return
        await self._write({"jsonrpc": "2.0", "id": req_id, "result": result})

    # -- sending -----------------------------------------------------------------

    async def _write(self, message: Any) -> None:
        data = self._encoder.encode(message) + b"\n"
        if self._trace is not None:
            self._trace.sent(data)
        async with self._send_lock:
            try:
                await self._send.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                self.abort_all(f"connection closed: cannot write to the agent ({exc})")
                raise ConnectionClosed(self._closed or "connection closed") from exc
        self.sent += 1

    async def notify(self, method: str, params: Any) -> None:
        await self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any, *, timeout: float | None = None) -> Any:
        """Send a request and wait for its result; raise :class:`JsonRpcError`
        for an error response, :class:`RequestTimeout` past ``timeout``,
        :class:`ConnectionClosed` when the connection ends first."""
        if self._closed is not None:
            raise ConnectionClosed(self._closed)
        req_id = next(self._ids)
        pending = _Pending(method)
        self._pending[req_id] = pending
        sent = False
        try:
            await self._write({"jsonrpc": "2.0", "id": req_id, "method": method, "params": params})
            sent = True
            deadline = math.inf if timeout is None else trio.current_time() + timeout
            with trio.move_on_at(deadline):
                await pending.done.wait()
            if not pending.done.is_set():
                raise RequestTimeout(method, timeout or 0.0)
        finally:
            self._pending.pop(req_id, None)
            # A prompt is cancelled with session/cancel, the protocol's own way.
            if sent and not pending.done.is_set() and self._closed is None and method != "session/prompt":
                await self._cancel_request(req_id)
        if pending.error is not None:
            raise pending.error
        return pending.result

    async def _cancel_request(self, req_id: int) -> None:
        """We stopped waiting (a deadline, a cancelled caller): ``$/cancel_request``
        tells the agent, so it can stop the work (ACP v1's cancellation). Best
        effort and bounded: an agent that does not read must not hold us."""
        with trio.CancelScope(shield=True), trio.move_on_after(1.0), contextlib.suppress(Exception):
            await self._write({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": req_id}})

    def abort_all(self, reason: str) -> None:
        """Fail every pending request with :class:`ConnectionClosed`."""
        if self._closed is None:
            self._closed = reason
        pending, self._pending = self._pending, {}
        for entry in pending.values():
            entry.error = ConnectionClosed(reason)
            entry.done.set()

    @property
    def closed(self) -> str | None:
        return self._closed

    @property
    def in_flight(self) -> int:
        return len(self._pending)


def _error_obj(exc: JsonRpcError) -> dict[str, Any]:
    obj: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if exc.data is not None:
        obj["data"] = exc.data
    return obj


__all__ = [
    "AUTH_REQUIRED",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "MAX_LINE_BYTES",
    "METHOD_NOT_FOUND",
    "ConnectionClosed",
    "FastPath",
    "JsonRpcConnection",
    "JsonRpcError",
    "LineBuffer",
    "REQUEST_CANCELLED",
    "RequestTimeout",
    "field_errors",
]
