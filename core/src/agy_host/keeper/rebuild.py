"""A warm turn's answer, sent once.

A turn's ``turn_end`` carries its whole answer, which the ``text`` events
before it carried already: through the keeper a flood's 12 MB went over the
socket twice, encoded by the keeper and decoded by the client after the
agent had answered, on the turn's critical path. A client that draws every
event of its turn asks for the answer once (``RunTurn.rebuild_answer``):
the keeper's :class:`Relay <agy_host.keeper.relay.Relay>` leaves it out of
``turn_end`` when it is exactly the text the events carried
(:func:`same_text`), and the client's :class:`AnswerRebuilder` puts it back
before its renderer sees the event. Any other answer (an engine whose final
answer differs from what it streamed) goes whole, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from agy_host.contract.answer import RESPONSE_OPTIONAL_ATTR, spooled_answer
from agy_host.contract.events import HostEvent, TextDelta, TurnEnded, TurnStarted


def same_text(whole: str, parts: Sequence[str]) -> bool:
    """``whole == "".join(parts)``, compared in place (no 12 MB join)."""
    if len(whole) != sum(map(len, parts)):
        return False
    at = 0
    for part in parts:
        if not whole.startswith(part, at):
            return False
        at += len(part)
    return True


class AnswerRebuilder:
    """Wraps a client's sink: keeps the text deltas of the turn it draws and
    gives an elided ``turn_end`` back its answer. A renderer that reads the
    answer through ``answer_slices`` (it declared
    :data:`~agy_host.contract.answer.RESPONSE_OPTIONAL_ATTR`) gets it that
    way; any other gets the joined text in ``response``, as a cold turn's."""

    def __init__(self, sink: Callable[[HostEvent], None] | None) -> None:
        self.sink = sink
        owner = getattr(sink, "__self__", sink)
        self._slices_ok = getattr(owner, RESPONSE_OPTIONAL_ATTR, False) is True
        self._parts: list[str] = []

    def __call__(self, event: HostEvent) -> None:
        kind = type(event)
        if kind is TextDelta:
            self._parts.append(event.delta)  # type: ignore[union-attr]
        elif kind is TurnStarted:
            self._parts = []
        sink = self.sink
        if kind is TurnEnded and event.response_elided:  # type: ignore[union-attr]
            parts, self._parts = self._parts, []
            if sink is None:
                return
            if self._slices_ok:
                with spooled_answer(parts):
                    sink(event)
                return
            event = msgspec.structs.replace(event, response="".join(parts), response_elided=False)
        if sink is not None:
            sink(event)


__all__ = ["AnswerRebuilder", "same_text"]
