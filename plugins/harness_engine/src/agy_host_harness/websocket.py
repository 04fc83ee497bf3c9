"""A WebSocket client for trio on wsproto: just what the harness's loopback
socket needs (one text message at a time, pings answered, a liveness ping
of its own, a clean close).

Why wsproto and not trio-websocket or websockets: wsproto is sans-I/O (the
protocol state machine without a loop), so the reads stay on this engine's
trio tasks with its own cancel scopes and nothing else is pulled in
(trio-websocket adds its own nursery and task per connection; websockets is
asyncio). The harness listens on 127.0.0.1 only and checks an
``x-goog-api-key`` header on the upgrade.
"""

from __future__ import annotations

from collections import deque

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

#: A message (after reassembly) larger than this is a protocol error, not a frame.
MAX_MESSAGE = 256 * 1024 * 1024
_READ = 256 * 1024


class WebSocketError(Exception):
    """The socket could not be opened, or broke."""


class WebSocketClosed(WebSocketError):
    def __init__(self, code: int, reason: str) -> None:
        super().__init__(f"closed ({code}{': ' + reason if reason else ''})")
        self.code = code
        self.reason = reason


class WebSocket:
    def __init__(self, stream: trio.SocketStream, ws: WSConnection) -> None:
        self._stream = stream
        self._ws = ws
        self._messages: deque[str] = deque()
        self._parts: list[str] = []
        self._size = 0
        self._closed: WebSocketClosed | None = None
        self._send_lock = trio.Lock()
        #: Set by the reader when bytes arrive (:meth:`answers_ping` waits on it).
        self._heard: trio.Event | None = None

    @classmethod
    async def connect(cls, host: str, port: int, headers: dict[str, str], path: str = "/") -> WebSocket:
        try:
            stream = await trio.open_tcp_stream(host, port)
        except OSError as exc:
            raise WebSocketError(f"cannot connect to ws://{host}:{port}{path}: {exc}") from exc
        ws = WSConnection(ConnectionType.CLIENT)
        extra = [(k.encode(), v.encode()) for k, v in headers.items()]
        try:
            await stream.send_all(ws.send(Request(host=f"{host}:{port}", target=path, extra_headers=extra)))
            while True:
                data = await stream.receive_some(_READ)
                if not data:
                    raise WebSocketError("the server closed the connection during the WebSocket handshake")
                ws.receive_data(data)
                status = None
                for event in ws.events():
                    if isinstance(event, AcceptConnection):
                        return cls(stream, ws)
                    if isinstance(event, RejectConnection):
                        status = event.status_code
                    if isinstance(event, RejectData) and event.body_finished:
                        break
                if status is not None:
                    raise WebSocketError(f"the WebSocket upgrade was refused with HTTP {status}")
        except BaseException:
            await trio.aclose_forcefully(stream)
            raise

    async def send(self, text: str) -> None:
        if self._closed is not None:
            raise self._closed
        async with self._send_lock:
            try:
                await self._stream.send_all(self._ws.send(TextMessage(data=text)))
            except (trio.BrokenResourceError, trio.ClosedResourceError, LocalProtocolError) as exc:
                raise WebSocketError(f"send failed: {exc}") from exc

    async def receive(self) -> str:
        """The next whole text message; :class:`WebSocketClosed` at the end."""
        while not self._messages:
            if self._closed is not None:
                raise self._closed
            try:
                data = await self._stream.receive_some(_READ)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                self._closed = WebSocketClosed(1006, f"connection lost: {exc}")
                continue
            if not data:
                self._closed = WebSocketClosed(1006, "connection closed without a close frame")
                self._ws.receive_data(None)
                continue
            if self._heard is not None:
                self._heard.set()
            try:
                self._ws.receive_data(data)
                await self._drain_events()
            except RemoteProtocolError as exc:
                self._closed = WebSocketClosed(1002, f"protocol error: {exc}")
        return self._messages.popleft()

    async def _drain_events(self) -> None:
        for event in self._ws.events():
            if isinstance(event, TextMessage):
                self._size += len(event.data)
                if self._size > MAX_MESSAGE:
                    raise RemoteProtocolError(f"a message over {MAX_MESSAGE} bytes")
                self._parts.append(event.data)
                if event.message_finished:
                    self._messages.append("".join(self._parts) if len(self._parts) > 1 else self._parts[0])
                    self._parts.clear()
                    self._size = 0
            elif isinstance(event, BytesMessage):
                continue  # the harness sends text frames only; binary ones are not ours
            elif isinstance(event, Ping):
                async with self._send_lock:
                    await self._stream.send_all(self._ws.send(event.response()))
            elif isinstance(event, CloseConnection):
                self._closed = WebSocketClosed(event.code, event.reason or "")
                with trio.move_on_after(1):
                    async with self._send_lock:
                        try:
                            await self._stream.send_all(self._ws.send(event.response()))
                        except (trio.BrokenResourceError, trio.ClosedResourceError, LocalProtocolError):
                            pass

    async def answers_ping(self, within: float) -> bool:
        """Whether the peer shows it is alive within ``within`` seconds: a
        ping is sent, and any bytes back (its pong, or a frame) count. A live
        harness's network loop answers at once, even mid-turn; a stopped or
        frozen process never does. The reader (:meth:`receive`) must be
        running: it is what hears the answer."""
        if self._closed is not None:
            return False
        heard = self._heard = trio.Event()
        with trio.move_on_after(within):
            try:
                async with self._send_lock:
                    await self._stream.send_all(self._ws.send(Ping(payload=b"agy-host")))
            except (trio.BrokenResourceError, trio.ClosedResourceError, LocalProtocolError):
                return False
            await heard.wait()
        return heard.is_set()

    @property
    def closed(self) -> bool:
        return self._closed is not None

    async def aclose(self, code: int = 1000) -> None:
        """Say goodbye (bounded: a peer that does not answer is cut off)."""
        if self._closed is None:
            self._closed = WebSocketClosed(code, "closed by the host")
            with trio.move_on_after(1):
                try:
                    async with self._send_lock:
                        await self._stream.send_all(self._ws.send(CloseConnection(code=code)))
                except (trio.BrokenResourceError, trio.ClosedResourceError, LocalProtocolError):
                    pass
        await trio.aclose_forcefully(self._stream)


__all__ = ["MAX_MESSAGE", "WebSocket", "WebSocketClosed", "WebSocketError"]
