"""What a command attached to a keeper's turn says and does on its own side.

Two clients run a turn through the keeper: :class:`~agy_host.keeper.client.RemoteRuntime`
(on trio, in the full CLI and the Python API) and the thin client
(:mod:`agy_host.keeper.thin`, a blocking socket, no trio). A user must not
be able to tell them apart, so their words and their exits live here once:
what each Ctrl-C (SIGTERM, SIGHUP) of a running turn says, how the third one
leaves, and what a keeper that went away mid-turn is called. Standard
library only: the thin client imports this on its hot path.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import NoReturn

#: Ctrl-C's exit code (``ExitCode.INTERRUPTED``; the thin client does not import the enum for it).
INTERRUPTED = 130
#: The notice code of a command waiting for another command's turn (the keeper's).
QUEUED = "session-busy"
#: The connection ended cleanly while the turn ran.
KEEPER_ENDED = "the keeper holding the warm agent ended mid-turn"


def broken(exc: BaseException) -> str:
    """The connection to the keeper failed while the turn ran."""
    return f"the connection to the keeper broke: {exc}"


def lost(reason: object) -> str:
    """The command's error when its keeper went away mid-turn (``reason``: what happened)."""
    return f"{reason}; the session binding is kept, the next command starts the agent again"


def interrupt_notice(count: int, sig: signal.Signals | None, *, queued: bool = False) -> str | None:
    """What the user is told at the ``count``-th interrupt of a running turn
    (``sig``: SIGTERM or SIGHUP, ``None`` for Ctrl-C): the first aborts the
    turn, the second stops waiting for the agent; ``None`` from the third on,
    which leaves at once (:func:`leave_at_once`). ``queued``: the command
    still waits for another command's turn, so the first leaves the queue."""
    what = "interrupting" if sig is None else f"{sig.name}: ending"
    again = "Ctrl-C" if sig is None else sig.name
    if count == 1 and queued:
        return f"\nagy-host: {'' if sig is None else sig.name + ': '}leaving the queue; this command's turn never ran"
    if count == 1:
        return f"\nagy-host: {what} the turn ({again} again to stop waiting)"
    if count == 2:
        return "agy-host: not waiting for the agent any longer"
    return None


def still_queued(queued: bool, event: object) -> bool:
    """Whether the command still waits in the session's queue after ``event``:
    from the keeper's waiting notice until its turn starts."""
    if getattr(event, "code", None) == QUEUED:
        return True
    return queued and type(event).__name__ not in ("TurnStarted", "TurnEnded")


def exit_code_of(sig: signal.Signals | None) -> int:
    """``128 + n`` for an ending signal, 130 (Ctrl-C) otherwise."""
    return 128 + int(sig) if sig is not None else INTERRUPTED


def leave_at_once(code: int) -> NoReturn:
    """Exit now with ``code``, with what was written flushed (``os._exit`` does not flush)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed or broken stream must not keep us here
            pass
    os._exit(code)


__all__ = [
    "INTERRUPTED",
    "KEEPER_ENDED",
    "QUEUED",
    "broken",
    "exit_code_of",
    "interrupt_notice",
    "leave_at_once",
    "lost",
    "still_queued",
]
