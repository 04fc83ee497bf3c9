"""Renderer protocol: how HostEvents reach a terminal, a file or a script.

A renderer is created per command invocation by a factory registered with
``agy_host_register_renderers`` under a format name (``text``, ``json``,
``quiet``, ...). It receives every :data:`~agy_host.contract.events.HostEvent` in order
on the host's trio loop, so ``handle`` must be quick and must not block;
renderers ignore event types they do not know.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Protocol, runtime_checkable

import msgspec

from agy_host.contract.events import HostEvent, ToolCard


class DiffSource:
    """How a renderer draws the diff of an edit card: a plugin renders it
    through ``agy_host_render_diff`` against the agent's working directory.

    A renderer that will draw diffs calls :meth:`want` when it is built:
    taking a diff's "before" side costs work at every turn start (the diff
    plugin's ``git status`` or directory snapshot), so it is done only when
    somebody will draw one."""

    def __init__(self, render: Callable[[ToolCard, str], str | None], cwd: str) -> None:
        self._render = render
        self.cwd = cwd
        self.wanted = False
        self._given: dict[str, str | None] = {}

    def want(self) -> None:
        self.wanted = True

    def give(self, call_id: str, text: str | None) -> None:
        """The diff of ``call_id``'s card, rendered elsewhere: a warm turn's
        "before" snapshot is the keeper's, taken where the turn started, so
        the keeper renders the diff and the attached command draws it."""
        self._given[call_id] = text

    def render(self, card: ToolCard) -> str | None:
        """The diff text for ``card``, or ``None`` when no plugin renders diffs."""
        if card.call_id in self._given:
            return self._given[card.call_id]
        return self._render(card, self.cwd)


class RenderOptions(msgspec.Struct, kw_only=True):
    """What a renderer is built with: its stream, colour, verbosity and how to draw diffs."""

    stream: IO[str]
    color: bool = False
    verbose: bool = False
    #: ``None`` (a renderer used on its own, a test): no diffs, edit cards
    #: show their ``[edit: PATH]`` label.
    diffs: DiffSource | None = None


@runtime_checkable
class Renderer(Protocol):
    """Draws a turn's events (``--format``): ``handle`` each event in order, then ``close``."""

    def handle(self, event: HostEvent) -> None: ...

    def close(self) -> None: ...


RendererFactory = Callable[[RenderOptions], Renderer]

#: The most characters of a short string from the agent (a title, a name, a question) a line shows.
SHOWN_CHARS = 300
#: The same for a longer one (an error, a reason, a notice; a title in a prompt, to decide on).
SHOWN_LONG_CHARS = 4000


def clip(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` as a line for a person shows it: whole when it fits in
    ``limit`` characters, else its start, an ellipsis and its full length
    (``aaa… (400,000 characters)``). An agent decides how long its titles
    and messages are (up to the 64 MiB line limit), and a 400 KB title used
    to fill the terminal twice; ``--format json`` keeps every value whole."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def clip_quoted(text: str, limit: int = SHOWN_CHARS) -> str:
    """``repr(text)``, clipped as :func:`clip` does, the length outside the quotes."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text):,} characters)"


__all__ = [
    "SHOWN_CHARS",
    "SHOWN_LONG_CHARS",
    "DiffSource",
    "RenderOptions",
    "Renderer",
    "RendererFactory",
    "clip",
    "clip_quoted",
]
