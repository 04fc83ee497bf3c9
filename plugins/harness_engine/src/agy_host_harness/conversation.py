"""One harness conversation: a WebSocket to the harness, its ``cascadeId``,
the profile it was opened with, and its reader.

Opening sends the ``HarnessConfig`` and waits for
``initializeConversationResponse``. The harness refuses a config it cannot
use (no text model, an unknown id to resume) by closing the socket without
an answer; its reason is only on its stderr, so the error carries the
harness's stderr lines logged meanwhile.

The reader routes every frame to the conversation's current turn through
the driver's :class:`FrameSink`. A frame that is not JSON, or not an object of
a known shape, is counted, logged and skipped: the turn goes on. With a wire
trace (``--trace``), every text frame sent and received is traced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import trio

from agy_host.contract.events import ErrorKind
from agy_host.engine.turn import TurnFailed
from agy_host_harness import wire
from agy_host_harness.harness_config import Profile
from agy_host_harness.process import HarnessProcess
from agy_host_harness.turn import HarnessTurn
from agy_host_harness.websocket import WebSocket, WebSocketClosed, WebSocketError

if TYPE_CHECKING:
    from agy_host.engine.trace import TraceTap


class FrameSink(Protocol):
    def on_frame(self, conversation: Conversation, event: wire.OutputEvent) -> None: ...

    def on_bad_frame(self, conversation: Conversation, frame: str, error: str) -> None: ...

    def on_conversation_closed(self, conversation: Conversation, reason: str) -> None: ...


class Conversation:
    def __init__(
        self,
        ws: WebSocket,
        session: str,
        cascade_id: str,
        profile: Profile,
        harness: HarnessProcess,
        *,
        trace: TraceTap | None = None,
    ) -> None:
        self.ws = ws
        self.trace = trace
        self.session = session
        self.cascade_id = cascade_id
        self.profile = profile
        self.harness = harness
        self.turn: HarnessTurn | None = None
        self.usage: wire.Usage | None = None
        self.closed = False
        self.close_reason = ""
        self.frames = 0
        self.bad_frames = 0

    @classmethod
    async def open(
        cls,
        harness: HarnessProcess,
        *,
        session: str,
        config: dict[str, Any],
        profile: Profile,
        timeout_s: float,
        trace: TraceTap | None = None,
    ) -> Conversation:
        out = harness.output
        assert out is not None
        resuming = str(config.get("cascadeId", ""))
        mark = len(harness.lines)
        try:
            ws = await WebSocket.connect("127.0.0.1", out.port, {"x-goog-api-key": out.api_key})
        except WebSocketError as exc:
            raise TurnFailed(f"could not reach the harness's socket: {exc}", "protocol") from exc
        try:
            with trio.fail_after(timeout_s):
                first = wire.encode({"config": config})
                if trace is not None:
                    trace.sent(first)
                await ws.send(first)
                while True:
                    text = await ws.receive()
                    if trace is not None:
                        trace.received(text)
                    event, _ = wire.decode_or_reason(text)
                    init = event.initialize_conversation_response if event is not None else None
                    if init is not None:
                        break
        except (WebSocketClosed, WebSocketError, trio.TooSlowError) as exc:
            await ws.aclose()
            await trio.sleep(0.05)  # the harness logs its reason as it closes the socket
            said = "; ".join(harness.lines_since(mark)) or harness.reason()
            why = f": {said}" if said else f" ({exc})"
            kind: ErrorKind = "auth" if "api key" in said.lower() or "credentials" in said.lower() else "agent"
            if resuming:
                raise TurnFailed(f"the harness could not resume conversation {resuming}{why}", kind) from exc
            raise TurnFailed(f"the harness refused to start a conversation{why}", kind) from exc
        except BaseException:
            await ws.aclose()
            raise
        conversation = cls(ws, session, init.cascade_id or resuming, profile, harness, trace=trace)
        conversation.usage = init.cumulative_usage
        return conversation

    async def send(self, message: dict[str, Any]) -> bool:
        """Send one frame; ``False`` when the socket is gone (the reader reports why)."""
        if self.closed:
            return False
        text = wire.encode(message)
        if self.trace is not None:
            self.trace.sent(text)
        try:
            await self.ws.send(text)
        except WebSocketError:
            return False
        return True

    async def read(self, sink: FrameSink) -> None:
        """Route frames until the socket closes."""
        reason = "closed"
        try:
            while True:
                text = await self.ws.receive()
                self.frames += 1
                if self.trace is not None:
                    self.trace.received(text)
                event, why = wire.decode_or_reason(text)
                if event is None:
                    self.bad_frames += 1
                    sink.on_bad_frame(self, text, why)
                    continue
                sink.on_frame(self, event)
        except WebSocketClosed as exc:
            reason = str(exc)
        finally:
            self.closed = True
            self.close_reason = reason
            sink.on_conversation_closed(self, reason)

    async def aclose(self) -> None:
        if not self.closed:
            self.closed = True
            self.close_reason = "closed by the host"
        await self.ws.aclose()


__all__ = ["Conversation", "FrameSink"]
