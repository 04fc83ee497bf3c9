"""Facts an engine keeps between runs, in a small JSON file it can trust."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from agy_host import fsutil

Warn = Callable[[str], None]


def _ignore(_message: str) -> None:
    """The default warning sink: nothing."""


class StateFile:
    """A small JSON object on disk that is read, changed and written back
    atomically under a lock, for facts an engine keeps between runs.

    Engines keep their files under :attr:`agy_host.engine.base.EngineContext.state_dir`.
    The ACP engine, for example, remembers per agent whether ``session/cancel``
    is supported, so a later run does not probe again::

        agents = StateFile(ctx.state_dir / "agents.json", warn=ctx.warn)
        facts = agents.read()                       # {} when absent
        with agents.edit() as data:                 # lock, re-read, write on exit
            data.setdefault(agent_key, {})["cancel"] = "unsupported"

    The root is always a JSON object. A file that is not valid JSON, or whose
    root is not an object, is moved aside (kept for inspection, reported through
    ``warn``) and treated as empty; it is never silently overwritten. Changes
    made inside :meth:`edit` are written only when the block exits without an
    exception, and the re-read under the lock means two processes editing
    different keys both keep their change.
    """

    def __init__(self, path: Path, *, warn: Warn | None = None) -> None:
        self.path = path
        self._warn = warn or _ignore

    def _read_locked(self) -> dict[str, Any]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            doc = json.loads(data.decode("utf-8"))
        except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, or nested too deep
            moved = fsutil.quarantine(self.path)
            self._warn(f"{self.path} is not valid JSON ({exc}); moved it to {moved} and starting empty")
            return {}
        if not isinstance(doc, dict):
            moved = fsutil.quarantine(self.path)
            self._warn(f"{self.path} does not hold a JSON object; moved it to {moved} and starting empty")
            return {}
        return doc

    def read(self) -> dict[str, Any]:
        """The current content (``{}`` when absent or unreadable)."""
        with fsutil.locked(self.path):
            return self._read_locked()

    @contextlib.contextmanager
    def edit(self) -> Iterator[dict[str, Any]]:
        """Lock, read, let the caller change the dict in place, write it back."""
        with fsutil.locked(self.path):
            data = self._read_locked()
            yield data
            fsutil.write_atomic(self.path, json.dumps(data, indent=2, sort_keys=True).encode("utf-8") + b"\n")

    def update(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Merge ``changes`` into the top level and write; return the result."""
        with self.edit() as data:
            data.update(changes)
            return dict(data)


__all__ = ["StateFile"]
