"""What a renderer may ask the host while it draws: a diff for an edit card.

Renderer factories receive only :class:`~agy_host.rendering.RenderOptions`
(the stream and two switches), yet an edit card wants the diff that a plugin
renders through ``agy_host_render_diff``. One CLI invocation has exactly one
plugin manager, so the CLI binds it here once (:func:`bind`, called where
:class:`~agy_host.cli.app.CliState` creates it) and renderers ask through
:func:`render_diff`. Nothing bound (a renderer used on its own, in a test)
means no diffs: renderers fall back to the ``[edit: PATH]`` label, which is
also what users without the diff plugin see.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agy_host.events import ToolCard
    from agy_host.plugins import Plugins

_plugins: Plugins | None = None
_cwd: str | None = None


def bind(plugins: Plugins | None, cwd: str | None = None) -> None:
    """Make ``plugins`` the one renderers ask; ``cwd`` is the agent's working
    directory when the command knows it (``chat --cwd``), else the process's."""
    global _plugins, _cwd
    _plugins = plugins
    _cwd = cwd


def bound() -> Plugins | None:
    return _plugins


def cwd() -> str:
    return _cwd or os.getcwd()


def render_diff(card: ToolCard) -> str | None:
    """The diff text for ``card``, or ``None`` when no plugin renders diffs."""
    if _plugins is None:
        return None
    return _plugins.render_diff(card, cwd())


__all__ = ["bind", "bound", "cwd", "render_diff"]
