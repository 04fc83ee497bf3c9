"""Exit codes of ``agy-host``: the contract scripts rely on.

Kept free of imports so the CLI's help text and the turn layer share one
source without slowing the startup path.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """The documented exit codes, the same for the CLI and for ``AgyHostError.exit_code``: scripts branch on them."""

    OK = 0
    ERROR = 1
    USAGE = 2
    TIMEOUT = 3
    NO_SUCH_SESSION = 4
    PERMISSION_DENIED = 5
    BUDGET = 6
    SESSION_BUSY = 7
    ENDED_BY_SIGHUP = 129
    INTERRUPTED = 130
    ENDED_BY_SIGTERM = 143


#: What each code means, in the order ``--help`` lists them.
EXIT_CODES: dict[int, str] = {
    ExitCode.OK: "the turn ended normally",
    ExitCode.ERROR: "the turn or command failed (the message says why)",
    ExitCode.USAGE: "bad command line",
    ExitCode.TIMEOUT: "the turn hit its overall deadline or inactivity timeout",
    ExitCode.NO_SUCH_SESSION: "the named session does not exist, or (--resume) its conversation cannot be continued",
    ExitCode.PERMISSION_DENIED: (
        "the agent asked for permission and every request was denied or cancelled, or asked a question nobody answered"
    ),
    ExitCode.BUDGET: "the turn crossed --max-tokens or --max-cost and was stopped",
    ExitCode.SESSION_BUSY: "--no-wait: another command was running a turn on the session (the message names it)",
    ExitCode.ENDED_BY_SIGHUP: "ended by SIGHUP (the terminal closed); handled as Ctrl-C",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C); the session binding is kept",
    ExitCode.ENDED_BY_SIGTERM: "ended by SIGTERM (timeout, a supervisor); handled as Ctrl-C",
}


def epilog() -> str:
    """The exit-code table for ``--help`` (``\\b`` keeps click from rewrapping it)."""
    lines = ["\b", "Exit codes:"]
    lines.extend(f"  {code:>3}  {text}" for code, text in EXIT_CODES.items())
    return "\n".join(lines)


__all__ = ["EXIT_CODES", "ExitCode", "epilog"]
