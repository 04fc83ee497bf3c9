"""The plugin's hooks: take the baseline when a turn starts, render diffs.

``agy_host_turn_started`` comes before the engine sends the prompt, so the
agent cannot have touched a file yet, and it carries the turn's working
directory. The baseline is taken only when a renderer of this command draws
diffs (``turn.diffs_wanted``), in a worker thread: the hook returns at once.
``agy_host_render_event`` notes each edit card's file the first time it
appears, for files no snapshot covered. ``agy_host_render_diff`` answers
the renderers.

Imported by every ``agy-host`` command, ``--help`` included: the event
types (msgspec) are imported by the hook that looks at events.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agy_host import hookimpl
from agy_host_diff_render.baseline import Baseline, read_text
from agy_host_diff_render.unified import unified_diff, whole_texts

if TYPE_CHECKING:
    from agy_host.contract.diagnostics import DiagnosticReport
    from agy_host.contract.events import HostEvent, ToolCard
    from agy_host.contract.run_context import TurnContext

_PATH_KEY = re.compile(r"file|path", re.IGNORECASE)


def edit_path(card: ToolCard) -> str | None:
    """The agent's diff path, else the first argument naming a file or path."""
    if card.diff is not None and card.diff.path:
        return card.diff.path
    for key, value in card.args.items():
        if _PATH_KEY.search(key) and isinstance(value, str) and value.strip():
            return value
    return None


def display_path(path: Path, cwd: Path) -> str:
    try:
        return path.relative_to(cwd).as_posix()
    except ValueError:
        return str(path)


class DiffRenderer:
    """One turn's baseline and the diffs rendered against it."""

    def __init__(self) -> None:
        self.baseline: Baseline | None = None
        self.warn: Callable[[str], None] = lambda _message: None
        self._told: set[str] = set()

    def turn_started(self, cwd: str, warn: Callable[[str], None] | None = None) -> None:
        # In a worker thread: the hook returns at once, the loop never waits on the disk.
        self.baseline = Baseline.start(cwd)
        if warn is not None:
            self.warn = warn

    def tell_capped(self) -> None:
        """Once per reason and host: the snapshot stopped at a bound (on the loop)."""
        baseline = self.baseline
        if baseline is None or baseline.capped is None or baseline.capped in self._told:
            return
        self._told.add(baseline.capped)
        self.warn(f"diffs: the before-snapshot {baseline.capped}; other files are read when first edited")

    def _baseline(self, cwd: str) -> Baseline:
        if self.baseline is None:
            # Asked outside a turn we saw start: git's commit is the best "before".
            self.baseline = Baseline(cwd, snapshot=False)
        return self.baseline

    def resolve(self, raw: str, cwd: str) -> Path:
        base = self.baseline.cwd if self.baseline is not None else Path(cwd)
        path = Path(raw).expanduser()
        return Path(os.path.normpath(path if path.is_absolute() else base / path))

    def first_sight(self, card: ToolCard) -> None:
        if self.baseline is None or not (card.kind == "edit" or card.diff is not None):
            return
        self.baseline.stop()
        self.tell_capped()
        raw = edit_path(card)
        if raw:
            self.baseline.note_first_sight(self.resolve(raw, str(self.baseline.cwd)))

    def render(self, card: ToolCard, cwd: str) -> str | None:
        raw = edit_path(card)
        if raw is None:
            return None
        baseline = self._baseline(cwd)
        path = self.resolve(raw, cwd)
        whole = True
        old: str | None
        new: str | None
        if card.diff is not None and card.diff.old_text is not None:
            # The agent's own texts: whole files, or the fragment it edited.
            old, new, whole = whole_texts(card.diff.old_text, card.diff.new_text, read_text(path))
        else:
            old = baseline.before(path)
            new = card.diff.new_text if card.diff is not None else read_text(path)
        if card.diff is None and new is None and old is None:
            return f"(no such file: {display_path(path, baseline.cwd)})"
        baseline.shown(path, new)
        return unified_diff(old, new, display_path(path, baseline.cwd), file_ends=whole)


class DiffPlugin:
    """The plugin's hooks for one host (one per plugin manager): two hosts in
    one process (a program with two sessions) keep their own baselines."""

    #: Draws edit cards, never reads ``TurnEnded.response``
    #: (``agy_host.contract.answer``).
    AGY_HOST_RESPONSE_OPTIONAL = True

    def __init__(self) -> None:
        self.renderer = DiffRenderer()

    @hookimpl
    def agy_host_turn_started(self, turn: TurnContext) -> None:
        if turn.diffs_wanted:
            self.renderer.turn_started(turn.cwd, turn.warn)
        else:
            # Nobody draws diffs in this command (``--format json``, a program
            # driving turns itself): the baseline's git calls or directory walk
            # would be paid by every turn for nothing.
            self.renderer.baseline = None

    @hookimpl
    def agy_host_render_event(self, event: HostEvent) -> None:
        from agy_host.contract.events import ToolCard, TurnEnded

        if isinstance(event, ToolCard) and event.status == "started":
            self.renderer.first_sight(event)
        elif isinstance(event, TurnEnded):
            self.renderer.tell_capped()

    @hookimpl
    def agy_host_render_diff(self, card: ToolCard, cwd: str) -> str | None:
        return self.renderer.render(card, cwd)

    @hookimpl
    def agy_host_diagnostics(self, report: DiagnosticReport) -> None:
        diagnostics(report)


def make_plugin() -> DiffPlugin:
    """Called by the plugin manager: one :class:`DiffPlugin` per host."""
    return DiffPlugin()


def diagnostics(report: DiagnosticReport) -> None:
    import shutil

    from agy_host_diff_render import __version__

    git = shutil.which("git")
    report.section("diff render").add(
        "diffs",
        f"agy-host-diff-render {__version__}; git: {git or 'not found (plain snapshots only)'}",
        "ok" if git else "info",
    )


__all__ = ["DiffPlugin", "DiffRenderer", "diagnostics", "display_path", "edit_path", "make_plugin"]
