"""The CLI's standard streams when the other end is gone.

stderr carries warnings and status lines. When whoever reads it has gone
away (``agy-host run ... 2>&1 | head -1``), a write raises
``BrokenPipeError``, and that must not turn a good turn into exit 1: the
turn still happened, and its binding is stored. So after the first broken
write, stderr points at ``/dev/null`` (at the file descriptor, so Python's
own flush at exit does not fail either).

A closed stdout (``>&-``) leaves nothing that could show the answer: the
command refuses to start (no tokens spent) and says why, instead of failing
later with an internal error.
"""

from __future__ import annotations

import os
import sys
from typing import IO, Any

STDOUT_CLOSED = (
    "agy-host: stdout is closed, so nothing could show the output; run with stdout open (`>/dev/null` discards it)"
)


class TolerantStream:
    """A text stream whose writes never fail because its reader left."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self.broken = False

    def _break(self) -> None:
        self.broken = True
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._stream.fileno())
            os.close(null)
        except (OSError, ValueError):
            pass

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                return self._stream.write(text)
            except (BrokenPipeError, ValueError):
                self._break()
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self._stream.flush()
            except (BrokenPipeError, ValueError):
                self._break()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_streams() -> str | None:
    """Make stderr tolerant; the reason the command cannot run, or ``None``."""
    if sys.stderr is not None and not isinstance(sys.stderr, TolerantStream):
        sys.stderr = TolerantStream(sys.stderr)
    if sys.stdout is None:
        return STDOUT_CLOSED
    return None


__all__ = ["STDOUT_CLOSED", "TolerantStream", "guard_streams"]
