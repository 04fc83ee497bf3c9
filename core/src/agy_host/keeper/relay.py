"""The client attached for one warm turn, as the keeper sees it.

A :class:`Relay` is the turn's renderer in the keeper: the host's events
and warnings go out to the client through one writer task, batched, so a
flood costs one socket write per scheduling round; permission requests,
questions and the client's own tools go out and wait for their answer,
which :meth:`Relay.answered` delivers.

The turn's end is the exception to batching. On the cold path the renderer
draws ``turn_end`` before the render hooks run (the transcript's write of a
12 MB answer, the usage ledger); in the keeper those hooks run in the same
synchronous step as the event, before the writer task could send it. So
:meth:`Relay.event` sends what is queued at once when the turn ends, as far
as the socket takes it without waiting, and leaves the rest to the writer:
the attached command shows the end when a cold command would, and still
exits only after the keeper's hooks are done (``done`` follows them).

Every write goes through one synchronous step (:meth:`Relay._flush`): the
queued frames are encoded onto the end of one outbox and the socket takes
what it can from its front. No task ever holds bytes of its own between
two awaits, so the end sent early can never pass a frame sent before it;
the writer task only waits, for new frames or for a socket that can take
more.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from agy_host.contract.events import TextDelta, TurnEnded, TurnStarted
from agy_host.contract.interactions import Answer, Question
from agy_host.contract.permissions import PermissionDecision, PermissionRequest
from agy_host.contract.tool_calls import ToolCall, ToolVerdict
from agy_host.contract.tools import ToolResult
from agy_host.keeper import wire
from agy_host.keeper.rebuild import same_text

if TYPE_CHECKING:
    from agy_host.contract.events import HostEvent


class Relay:
    """The client attached for one turn (see the module docstring)."""

    def __init__(self, frames: wire.FrameStream, label: str, *, rebuild_answer: bool = False) -> None:
        self.frames = frames
        self.label = label
        #: The client rebuilds ``turn_end``'s answer from the text events
        #: (:mod:`agy_host.keeper.rebuild`): the text sent so far this turn.
        self._sent_text: list[str] | None = [] if rebuild_answer else None
        #: Frames not encoded yet, in order.
        self._queue: collections.deque[Any] = collections.deque()
        #: Frames encoded and not yet taken by the socket, from ``_taken`` on.
        self._outbox = bytearray()
        self._taken = 0
        self._wake = trio.Event()
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[trio.Event, list[Any]]] = {}
        #: The client went away (or its connection broke).
        self.gone = trio.Event()
        #: Nothing more is queued (the turn ended, or the client left).
        self.closed = False

    # -- out ---------------------------------------------------------------------------

    def event(self, event: HostEvent) -> None:
        if self.closed:
            return
        kind = type(event)
        sent = self._sent_text
        if sent is not None:
            if kind is TextDelta:
                sent.append(event.delta)  # type: ignore[union-attr]
            elif kind is TurnEnded and event.response and same_text(event.response, sent):  # type: ignore[union-attr]
                event = msgspec.structs.replace(event, response="", response_elided=True)
            elif kind is TurnStarted:
                sent.clear()
        self._put(wire.Event(event=event))
        if kind is TurnEnded:
            self._send_now()

    def warning(self, message: str) -> None:
        if not self.closed:
            self._put(wire.Warning_(message=message))

    def diff(self, call_id: str, text: str | None) -> None:
        if not self.closed:
            self._put(wire.DiffText(call_id=call_id, text=text))

    def _put(self, item: Any) -> None:
        self._queue.append(item)
        self._wake.set()

    @property
    def backlog(self) -> int:
        """Bytes encoded that the socket has not taken yet."""
        return len(self._outbox) - self._taken

    def _flush(self) -> None:
        """Encode what is queued onto the outbox and write what the socket
        takes now, without waiting (see the module docstring)."""
        queue = self._queue
        if queue:
            for frame in queue:
                wire.encode_all((frame,), self._outbox)
            queue.clear()
        if self.backlog:
            with memoryview(self._outbox) as view:
                self._taken += self.frames.write_now(view[self._taken :])
            if self._taken == len(self._outbox):
                self._outbox.clear()
                self._taken = 0
            elif self._taken > len(self._outbox) // 2:  # keep the outbox from growing at the front
                del self._outbox[: self._taken]
                self._taken = 0

    def _send_now(self) -> None:
        try:
            self._flush()
        except OSError:
            self.close()

    async def writer(self) -> None:
        """Send what is queued, in order, until the relay closes."""
        try:
            while True:
                self._flush()
                if self.backlog:
                    await self.frames.wait_writable()
                    continue
                if self.closed:
                    return
                self._wake = trio.Event()
                await self._wake.wait()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            self.close()

    def finish(self) -> None:
        """The turn is over: the writer sends what is queued, then ends."""
        self.closed = True
        self._wake.set()

    # -- questions ---------------------------------------------------------------------

    async def ask_permission(self, request: PermissionRequest) -> PermissionDecision:
        got = await self._ask(lambda i: wire.AskPermission(id=i, request=request))
        if isinstance(got, PermissionDecision):
            return got
        return PermissionDecision(
            option_id=None, policy="keeper", reason=f"{self.label} left before answering; cancelled"
        )

    async def ask_question(self, question: Question) -> Answer:
        got = await self._ask(lambda i: wire.AskQuestion(id=i, question=question))
        if isinstance(got, Answer):
            return got
        return Answer(action="cancel", by="keeper", reason=f"{self.label} left before answering", unanswered=True)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run the client's own tool ``name`` in the client (:mod:`agy_host.keeper.proxy_tools`)."""
        got = await self._ask(lambda i: wire.CallTool(id=i, name=name, arguments=arguments))
        if isinstance(got, ToolResult):
            return got
        return ToolResult(text=f"host tool {name!r}: {self.label} left before it answered", is_error=True)

    async def check_tool(self, call: ToolCall) -> ToolVerdict:
        """The client's tool gate about ``call`` (its program's ``before_tool``)."""
        got = await self._ask(lambda i: wire.CheckTool(id=i, call=call))
        if isinstance(got, ToolVerdict):
            return got
        return ToolVerdict(allow=False, by="keeper", reason=f"{self.label} left before answering; refused")

    async def _ask(self, make: Callable[[int], Any]) -> object:
        if self.closed:
            return None
        ident = next(self._ids)
        done = trio.Event()
        box: list[Any] = []
        self._pending[ident] = (done, box)
        try:
            self._put(make(ident))
            await done.wait()
        finally:
            self._pending.pop(ident, None)
        return box[0] if box else None

    def answered(self, ident: int, value: object) -> None:
        waiting = self._pending.get(ident)
        if waiting is not None and not waiting[0].is_set():
            waiting[1].append(value)
            waiting[0].set()

    def close(self) -> None:
        """The client is gone: every open question is answered with nothing."""
        self.gone.set()
        for done, _ in list(self._pending.values()):
            done.set()
        self.finish()


__all__ = ["Relay"]
