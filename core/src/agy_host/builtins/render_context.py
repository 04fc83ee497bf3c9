"""What a renderer may ask the host while it draws: a diff for an edit card.

Renderer factories receive only :class:`~agy_host.rendering.RenderOptions`
(the stream and two switches), yet an edit card wants the diff that a plugin
renders through ``agy_host_render_diff``. One CLI invocation has exactly one
plugin manager, so the CLI binds it here once (:func:`bind`, called where
:class:`~agy_host.cli.app.CliState` creates it) and renderers ask through
:func:`render_diff`. Nothing bound (a renderer used on its own, in a test)
means no diffs: renderers fall back to the ``[edit: PATH]`` label, which is
also what users without the diff plugin see.

A renderer that draws diffs says so when it is built (:func:`want_diffs`).
Taking a diff's "before" side costs work at every turn start (the diff
plugin's ``git status`` or directory snapshot), so it is only done when
somebody will draw a diff: not for ``--format json`` or ``quiet``, and not
for a program driving turns from Python with no renderer at all.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agy_host.events import ToolCard
    from agy_host.plugins import Plugins

_plugins: Plugins | None = None
_cwd: str | None = None
_diffs = False


def bind(plugins: Plugins | None, cwd: str | None = None) -> None:
    """Make ``plugins`` the one renderers ask; ``cwd`` is the agent's working
    directory when the command knows it (``chat --cwd``), else the process's.
    Binding starts afresh: renderers are built after it, and say again
    whether they draw diffs (:func:`want_diffs`)."""
    global _plugins, _cwd, _diffs
    _plugins = plugins
    _cwd = cwd
    _diffs = False


def want_diffs() -> None:
    """A renderer that will ask :func:`render_diff` calls this when it is built."""
    global _diffs
    _diffs = True


def diffs_wanted() -> bool:
    """Whether a renderer of this command will ask for diffs (a diff plugin
    takes its per-turn baseline only then)."""
    return _diffs and _plugins is not None


def bound() -> Plugins | None:
    return _plugins


def cwd() -> str:
    return _cwd or os.getcwd()


def render_diff(card: ToolCard) -> str | None:
    """The diff text for ``card``, or ``None`` when no plugin renders diffs."""
    if _plugins is None:
        return None
    return _plugins.render_diff(card, cwd())


__all__ = ["bind", "bound", "cwd", "diffs_wanted", "render_diff", "want_diffs"]
