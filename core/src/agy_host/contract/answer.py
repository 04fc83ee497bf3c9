"""A turn's whole answer, for whoever writes it out at the turn's end.

``TurnEnded.response`` holds the answer, except where the command running
the turn asked for none and every observer of its events said it can do
without: ``agy-host run`` does not keep a long answer in memory (a flood's
12 MB would be the largest thing the process holds, twice while it is
joined). The text was streamed as ``text`` events; the turn layer spools
it, sets ``TurnEnded.response_elided`` and leaves ``response`` empty. The
transcript writer, the JSON renderer's ``turn_end`` line and the quiet
renderer read it through :func:`answer_slices`, which gives the same text
either way, a slice at a time.

A plugin whose ``agy_host_render_event`` reads ``TurnEnded.response`` needs
nothing new: unless it sets :data:`RESPONSE_OPTIONAL_ATTR` to ``True`` on
itself, a response is never elided while it is registered.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agy_host.contract.events import TurnEnded

#: A plugin (module or object) with this attribute set to ``True`` declares
#: that its ``agy_host_render_event`` does not read ``TurnEnded.response``,
#: or reads it through :func:`answer_slices`.
RESPONSE_OPTIONAL_ATTR = "AGY_HOST_RESPONSE_OPTIONAL"

#: The slices of answer :func:`answer_slices` gives at most.
SLICE_CHARS = 1 << 20

_spooled: ContextVar[Iterable[str] | None] = ContextVar("agy_host_spooled_answer", default=None)


def answer_slices(event: TurnEnded) -> Iterator[str]:
    """The turn's whole answer, in order, in slices of at most
    :data:`SLICE_CHARS` characters: ``event.response``, or where its
    response was elided, the spooled text (valid while the event is being
    handled: the spool is gone once every observer has returned).

    Raises :class:`LookupError` for an elided response outside its handling.
    """
    if not event.response_elided:
        text = event.response
        return (text[i : i + SLICE_CHARS] for i in range(0, len(text), SLICE_CHARS))
    spooled = _spooled.get()
    if spooled is None:
        raise LookupError("the turn's answer was not kept, and its spool is gone once its turn_end was handled")
    return iter(spooled)


def answer_text(event: TurnEnded) -> str:
    """The whole answer as one string (joined from the spool if it was elided:
    the memory the elision saved, spent again; prefer :func:`answer_slices`)."""
    return event.response if not event.response_elided else "".join(answer_slices(event))


@contextlib.contextmanager
def spooled_answer(slices: Iterable[str]) -> Iterator[None]:
    """Make ``slices`` (re-iterable) the elided answer while the turn layer
    hands a ``TurnEnded`` to its observers."""
    token = _spooled.set(slices)
    try:
        yield
    finally:
        _spooled.reset(token)


__all__ = ["RESPONSE_OPTIONAL_ATTR", "SLICE_CHARS", "answer_slices", "answer_text", "spooled_answer"]
