"""Turn timers: an overall deadline and an inactivity budget, both pausable.

A turn fails visibly when it runs past its overall deadline (default 10 min)
or when the agent says nothing for the inactivity budget (default 5 min). A
turn *parked* on a host tool call must not be killed by either: the human
may take minutes to answer. Pausing therefore

* stops the inactivity clock, and
* freezes the overall deadline, keeping only the **remaining** budget, so a
  resumed turn never gets a fresh cap and a nested park never recomputes
  against a stale instant (a bug the original shipped once).

A *hold* (:meth:`TurnTimers.hold`) is lighter: while the host serves the
agent (the bridge answering a request), the agent is waiting, not silent, so
the inactivity clock stops; the overall deadline keeps running, so no request
that never finishes can keep a turn alive past its cap.

The overall deadline is the ``deadline`` of a trio cancel scope that the
engine wraps around the turn's work. Inactivity is watched by a small task
(:meth:`TurnTimers.watch`) rather than by moving the scope's deadline on every
chunk, so :meth:`touch` on the hot path is one assignment.
"""

from __future__ import annotations

import math
from typing import Literal

import trio

Fired = Literal["deadline", "inactivity"]


class TurnTimers:
    """Deadline and inactivity guard for one turn.

    Usage inside an engine::

        timers = TurnTimers(overall_s=600, inactivity_s=300)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(timers.watch)
            with timers.scope:
                timers.arm()
                ...  # run the turn, calling timers.touch() on output
            timers.stop()
        if timers.fired == "deadline": ...
    """

    def __init__(self, overall_s: float, inactivity_s: float) -> None:
        self.overall_s = overall_s
        self.inactivity_s = inactivity_s
        self.scope = trio.CancelScope()
        self.fired: Fired | None = None
        self._armed = False
        self._stopped = False
        self._parks = 0
        self._holds = 0
        self._remaining = overall_s if overall_s > 0 else math.inf
        self._deadline: float | None = None
        self._last = 0.0
        self._touched = False
        self._changed = trio.Event()

    # -- state -----------------------------------------------------------------

    @property
    def parked(self) -> bool:
        return self._parks > 0

    @property
    def parks(self) -> int:
        return self._parks

    def remaining(self) -> float:
        """Seconds of overall budget left (the frozen value while parked)."""
        if self._deadline is None:
            return self._remaining
        return max(0.0, self._deadline - trio.current_time())

    # -- control ---------------------------------------------------------------

    def arm(self) -> None:
        """Start counting. A park that happened before (during setup) keeps the
        turn paused from birth with its whole budget. Idempotent: arming again
        must not hand the turn a fresh cap."""
        if self._armed:
            return
        self._armed = True
        now = trio.current_time()
        self._last = now
        if self._parks == 0:
            self._deadline = now + self._remaining
            self.scope.deadline = self._deadline
        self._poke()

    def touch(self) -> None:
        """The agent said something: the inactivity clock restarts.

        Called for every chunk, so it only sets a flag; the watcher turns the
        flag into a timestamp when it next looks (every 1/8 of the budget), so
        silence is detected within 9/8 of the budget at worst.
        """
        self._touched = True

    def pause(self) -> None:
        """Park: stop the inactivity clock and freeze the remaining budget."""
        self._parks += 1
        if self._parks == 1 and self._deadline is not None:
            self._remaining = max(0.0, self._deadline - trio.current_time())
            self._deadline = None
            self.scope.deadline = math.inf
        self._poke()

    def resume(self) -> None:
        """Unpark: re-arm inactivity and resume the deadline with what was left."""
        if self._parks == 0:
            return
        self._parks -= 1
        if self._parks == 0 and self._armed:
            now = trio.current_time()
            self._last = now
            self._deadline = now + self._remaining
            self.scope.deadline = self._deadline
        self._poke()

    def hold(self) -> None:
        """The host is working for the agent: stop the inactivity clock only."""
        self._holds += 1
        self._poke()

    def release(self) -> None:
        """End a hold; after the last one, silence is counted from now."""
        if self._holds == 0:
            return
        self._holds -= 1
        if self._holds == 0:
            self._last = trio.current_time()
            self._touched = False
        self._poke()

    def stop(self) -> None:
        """The turn is over; the watcher exits."""
        self._stopped = True
        self._poke()

    def expired(self) -> Fired | None:
        """Which budget ran out, judged after the scope was cancelled."""
        if self.fired is not None:
            return self.fired
        if self.scope.cancelled_caught and self._deadline is not None and trio.current_time() >= self._deadline:
            self.fired = "deadline"
        return self.fired

    # -- watcher ---------------------------------------------------------------

    def _poke(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def watch(self) -> None:
        """Cancel :attr:`scope` when the agent stays silent for too long."""
        if self.inactivity_s <= 0:
            return
        step = self.inactivity_s / 8
        while not self._stopped:
            if not self._armed or self._parks > 0 or self._holds > 0:
                await self._changed.wait()
                self._touched = False
                continue
            now = trio.current_time()
            if self._touched:
                self._touched = False
                self._last = now
            due = self._last + self.inactivity_s
            if now >= due:
                self.fired = "inactivity"
                self.scope.cancel()
                return
            with trio.move_on_at(min(due, now + step)):
                await self._changed.wait()


def minutes(seconds: float) -> str:
    """``10m`` / ``90s`` for messages, as a user would say it."""
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}m"
    if seconds >= 60:
        return f"{seconds / 60:.1f}m"
    return f"{seconds:g}s"


__all__ = ["Fired", "TurnTimers", "minutes"]
