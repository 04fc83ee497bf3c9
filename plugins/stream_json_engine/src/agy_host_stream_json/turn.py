"""The state of one stream-json turn: its handle, timers, step mapping, and
what agy said about it on stdout and stderr.

The driver routes every line of the running agy process to the turn that is
current (:meth:`Turn.on_event`); the turn settles its wire side (``wire_done``)
on a ``result`` line or when agy's output ends, and the driver decides the
outcome from there. Parks pause the timers with the remaining budget,
exactly as the core contract says; agy itself waits on the bridge's HTTP
answer meanwhile and sends nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from agy_host.contract.events import ErrorKind, NoticeActivity
from agy_host.engine.driver import TurnRequest
from agy_host.engine.turn import EngineTurn
from agy_host.engine.utf8 import INVALID_UTF8, INVALID_UTF8_NOTICE
from agy_host_stream_json.mapping import StepMapper
from agy_host_stream_json.outcome import PRINT_TIMEOUT_LINE, is_statement
from agy_host_stream_json.wire import Event, InitEvent, Result, ResultEvent, StepEvent, Unknown

if TYPE_CHECKING:
    from agy_host_stream_json.process import AgyProcess

#: Visible warnings per turn about lines agy sent that could not be used.
MAX_WIRE_NOTICES = 3


class Turn(EngineTurn):
    def __init__(self, request: TurnRequest) -> None:
        super().__init__(request)
        self.mapper = StepMapper(self.handle.emit, skip_permissions=request.skip_permissions, mode=request.mode)
        self.child: AgyProcess | None = None
        self.result: Result | None = None
        self.eof = False
        self.wire_done = trio.Event()
        #: The user line reached agy (from then on, agy is working on this turn).
        self.sent = False
        self.statements: list[str] = []
        self.print_timeout_line: str | None = None
        self.wire_notices = 0
        self.warned_utf8 = False
        #: Set when the turn must end before agy answers it (``--resume`` of a
        #: conversation agy did not continue): the message and error kind.
        self.refused: tuple[str, ErrorKind] | None = None
        #: The conversation asked for could not be continued: this turn runs on a new one.
        self.fresh = False

    def fresh_start(self) -> None:
        """Forget the failed start (agy exited before opening the conversation),
        so the turn runs once more, on a new conversation."""
        self.fresh = True
        self.child = None
        self.conversation_id = None
        self.result = None
        self.eof = False
        self.wire_done = trio.Event()
        self.sent = False
        self.statements = []
        self.print_timeout_line = None

    def response(self) -> str:
        return self.mapper.response

    # -- lines from agy ---------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        if self.refused is not None:
            return  # the turn is over before agy's answer: nothing of it is this turn's
        kind = type(event)
        if kind is StepEvent:
            step = event.step  # type: ignore[union-attr]
            if step.conversation_id and self.conversation_id is None:
                self.conversation_id = step.conversation_id
            self.mapper.step(step)
        elif kind is ResultEvent:
            if self.result is None:
                self.result = event.result  # type: ignore[union-attr]
                cid = self.result.conversation_id
                if cid:
                    self.conversation_id = cid
                self.wire_done.set()
        elif kind is InitEvent:
            assert isinstance(event, InitEvent)
            if event.conversation_id:
                self.conversation_id = event.conversation_id
        elif isinstance(event, Unknown) and event.reason in ("not-json", "not-an-object", "shape", "too-long"):
            self.wire_notice(
                f"agy sent a line that is not a stream-json object ({event.reason}); skipped: {event.head!r}"
            )
        if event.dropped:
            self.wire_notice(f"agy sent fields of an unexpected type; ignored: {', '.join(event.dropped)}")
        if event.invalid_utf8 and kind is not Unknown and not self.warned_utf8:
            self.warned_utf8 = True  # once per turn; the text is kept, with U+FFFD for the bad bytes
            self.handle.emit(NoticeActivity(level="warning", message=INVALID_UTF8_NOTICE, code=INVALID_UTF8))

    def wire_notice(self, message: str) -> None:
        if self.wire_notices < MAX_WIRE_NOTICES:
            self.wire_notices += 1
            self.handle.emit(NoticeActivity(level="warning", message=message, code="wire"))

    def on_stderr(self, line: str) -> None:
        text = line.strip()
        if not text:
            return
        if is_statement(text):
            self.statements.append(text)
        elif PRINT_TIMEOUT_LINE.search(text):
            self.print_timeout_line = text
        elif text.lower().startswith("warning:"):
            self.handle.emit(NoticeActivity(level="warning", message=f"agy: {text}", code="agy-warning"))

    def on_eof(self) -> None:
        self.eof = True
        self.wire_done.set()


__all__ = ["MAX_WIRE_NOTICES", "Turn"]
