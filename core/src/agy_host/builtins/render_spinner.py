"""A ticker thread for the rich renderer's "the agent is silent" spinner.

Renderers are only called when an event arrives, and a spinner must move
exactly when none does; so the ticks come from a small daemon thread, not
from the trio loop (which may be busy, or blocked in a synchronous hook).
The renderer does all drawing under its own lock; this class only calls it.
rich's own ``Live``/``Status`` are not used because they cannot share a line
with partially streamed text.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
INTERVAL_S = 0.08


class Ticker:
    """Calls ``tick(frame_index)`` every ``interval`` seconds until stopped."""

    def __init__(self, tick: Callable[[int], None], interval: float = INTERVAL_S) -> None:
        self._tick = tick
        self._interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="agy-host-spinner", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        n = 0
        while not self._stop.wait(self._interval):
            n += 1
            try:
                self._tick(n)
            except Exception:  # a drawing problem must never kill the turn; stop ticking
                return

    def stop(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=1.0)


__all__ = ["FRAMES", "INTERVAL_S", "Ticker"]
