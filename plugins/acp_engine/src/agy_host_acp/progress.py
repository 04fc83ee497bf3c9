"""Download progress on stderr: a bar on a terminal, a line per 10% elsewhere.

A 1 GB download must show it is alive, but a log file or CI output must not
fill up with carriage-return redraws; so the bar is drawn only when the stream
is a TTY, and otherwise one plain line is written each time another tenth of
the archive has arrived (or every 32 MiB when the size is unknown).
"""

from __future__ import annotations

import time
from typing import TextIO

_BAR = 28
_REDRAW_S = 0.1
_UNKNOWN_STEP = 32 << 20


def human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"  # pragma: no cover - the loop always returns


class Progress:
    """Call :meth:`start` per attempt, :meth:`update` per chunk, :meth:`finish` once."""

    def __init__(
        self, stream: TextIO, *, enabled: bool = True, tty: bool | None = None, label: str = "download"
    ) -> None:
        self.stream = stream
        self.enabled = enabled
        self.tty = stream.isatty() if tty is None else tty
        self.label = label
        self.total: int | None = None
        self.done = 0
        self._last_draw = 0.0
        self._next_step = _UNKNOWN_STEP
        self._decile = 0
        self._drawn = False
        self._started = time.monotonic()
        self._base = 0

    def start(self, done: int, total: int | None) -> None:
        """A (re)started transfer: ``done`` bytes already on disk of ``total``."""
        self.done = done
        self.total = total
        self._base = done
        self._started = time.monotonic()
        self._decile = done * 10 // total if total else 0
        self._next_step = (done // _UNKNOWN_STEP + 1) * _UNKNOWN_STEP
        if done and self.enabled:
            self._line(f"{self.label}: resuming at {self._amount()}")

    def _amount(self) -> str:
        if self.total:
            return f"{self.done * 100 // self.total}% ({human(self.done)} of {human(self.total)})"
        return human(self.done)

    def _line(self, text: str) -> None:
        if self._drawn:
            self.stream.write("\n")
            self._drawn = False
        self.stream.write(text + "\n")
        self.stream.flush()

    def update(self, done: int) -> None:
        self.done = done
        if not self.enabled:
            return
        if self.tty:
            now = time.monotonic()
            if now - self._last_draw >= _REDRAW_S or (self.total and done >= self.total):
                self._last_draw = now
                self._draw(now)
            return
        if self.total:
            decile = min(10, done * 10 // self.total)
            if decile > self._decile:
                self._decile = decile
                self._line(f"{self.label}: {self._amount()}")
        elif done >= self._next_step:
            self._next_step = (done // _UNKNOWN_STEP + 1) * _UNKNOWN_STEP
            self._line(f"{self.label}: {self._amount()}")

    def _draw(self, now: float) -> None:
        elapsed = max(now - self._started, 1e-6)
        rate = (self.done - self._base) / elapsed
        if self.total:
            filled = min(_BAR, self.done * _BAR // self.total)
            bar = "#" * filled + "-" * (_BAR - filled)
            text = f"\r{self.label} [{bar}] {self._amount()} {human(rate)}/s "
        else:
            text = f"\r{self.label}: {human(self.done)} {human(rate)}/s "
        self.stream.write(text)
        self.stream.flush()
        self._drawn = True

    def note(self, text: str) -> None:
        """A message between redraws (retries, restarts)."""
        if self.enabled:
            self._line(f"{self.label}: {text}")

    def finish(self) -> None:
        if self.enabled and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False


__all__ = ["Progress", "human"]
