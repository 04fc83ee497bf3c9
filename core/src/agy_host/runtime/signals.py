"""The signals a CLI command ends on: SIGINT (Ctrl-C), SIGTERM and SIGHUP.

All three go the same way, because what the user (or ``timeout``, systemd,
a closed terminal) wants is the same: the turn stops, what it produced is
kept, and nothing it started outlives the command. With a turn running, the
first signal aborts it (the session binding is stored as for any aborted
turn), the second stops waiting for the agent (its process group is ended),
the third leaves at once after a SIGKILL to every agent group of the process.
With no turn running, the command's own callback decides (leave, mostly).
A signal that comes while the command is already leaving (its turn is over,
or a callback already said leave) leaves at once the same way: the teardown
is bounded, but somebody pressing Ctrl-C again wants out now, and nothing
the command started may be left behind when it goes.

The default action of SIGTERM and SIGHUP, dying on the spot, is what must not
happen: the agent runs on in its own session, the binding is lost, and a
bridge registration with its live token stays in the agent's config. The
exit code says which signal ended the command (``128 + n``: 143, 129), as a
shell does, so a supervisor sees that it was stopped and not that it failed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable
from typing import NoReturn, Protocol

import trio

from agy_host.exit_codes import ExitCode


class Interruptible(Protocol):
    """What a signal reaches: the command's session runtime
    (:class:`~agy_host.runtime.session.SessionRuntime`)."""

    def interrupt(self, sig: signal.Signals | None) -> bool:
        """Stop the running turn; ``False`` when none runs."""
        ...


#: Signals that end the command (beyond Ctrl-C's SIGINT).
TERMINATING = (signal.SIGTERM, signal.SIGHUP)


def signal_exit_code(sig: signal.Signals | None) -> int:
    """``128 + n`` for an ending signal, 130 (Ctrl-C) otherwise."""
    return 128 + int(sig) if sig is not None else int(ExitCode.INTERRUPTED)


class CommandSignals:
    """Routes SIGINT, SIGTERM and SIGHUP to the running turn of
    ``session()`` (which may change as ``/engine`` switches). Between turns,
    SIGINT calls ``on_idle`` and SIGTERM/SIGHUP call ``on_terminate`` (by
    default ``on_idle``). :attr:`terminated` is the first ending signal."""

    def __init__(
        self,
        session: Callable[[], Interruptible | None],
        on_idle: Callable[[], None] | None = None,
        on_terminate: Callable[[], None] | None = None,
    ) -> None:
        self._session = session
        self._on_idle = on_idle
        self._on_terminate = on_terminate or on_idle
        self.terminated: signal.Signals | None = None
        #: Set by the command once its turns are over; then any signal leaves at once.
        self.leaving = False

    async def watch(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        with trio.open_signal_receiver(signal.SIGINT, *TERMINATING) as signals:
            task_status.started()
            async for signum in signals:
                self.deliver(signal.Signals(signum))

    def deliver(self, sig: signal.Signals) -> None:
        """What one signal does (separate from :meth:`watch` for tests)."""
        ending = sig in TERMINATING
        if ending and self.terminated is None:
            self.terminated = sig
        if self.leaving:
            self.leave_now(sig)
        current = self._session()
        if current is not None and current.interrupt(sig if ending else None):
            return
        self.leaving = True
        callback = self._on_terminate if ending else self._on_idle
        if callback is not None:
            callback()

    def leave_now(self, sig: signal.Signals) -> NoReturn:
        """SIGKILL every agent group of this process, then exit at once."""
        from agy_host.engine.process import kill_every_group

        kill_every_group()
        for stream in (sys.stdout, sys.stderr):  # os._exit does not flush
            with contextlib.suppress(Exception):
                stream.flush()
        with contextlib.suppress(Exception):
            print("agy-host: leaving now", file=sys.stderr, flush=True)
        os._exit(self.exit_code(signal_exit_code(sig if sig in TERMINATING else None)))

    def exit_code(self, code: int) -> int:
        """The command's exit code: the signal's when one ended it."""
        return signal_exit_code(self.terminated) if self.terminated is not None else code


__all__ = ["TERMINATING", "CommandSignals", "Interruptible", "signal_exit_code"]
