"""Typed errors of the Python API, each carrying the CLI's exit code.

A program catches :class:`AgyHostError` for everything, or one kind:
the same cases the CLI tells apart by exit code. A turn that ended badly
raises a :class:`TurnError` only when asked to (``check=True``): like
:func:`subprocess.run`, a finished turn is otherwise a result to inspect,
whatever its exit code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agy_host.exit_codes import ExitCode

if TYPE_CHECKING:
    from agy_host.contract.turn_result import TurnResult


class AgyHostError(Exception):
    """Anything agy-host could not do; ``exit_code`` is what the CLI would exit with."""

    exit_code: int = ExitCode.ERROR

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(AgyHostError, ValueError):
    """A bad option (the CLI's exit 2)."""

    exit_code = ExitCode.USAGE


class EngineUnavailable(AgyHostError):
    """The engine is not installed, or its agent could not be started."""


class SessionNotFound(AgyHostError, LookupError):
    """``resume=True``, ``get_session``, ``delete_session`` or
    ``fork_session`` named a session that does not exist (exit 4)."""

    exit_code = ExitCode.NO_SUCH_SESSION


class NotSupported(AgyHostError):
    """The engine or its agent cannot do what was asked, such as
    ``fork_session`` on an agent that does not offer ``session/fork``; the
    message names the engine or agent and what would."""


class KeeperLost(AgyHostError):
    """The keeper holding the session's warm agent ended mid-turn (exit 1);
    the message says how. The session binding is kept: the next turn starts
    the agent again and continues the conversation (docs/sessions.md)."""


class TurnError(AgyHostError):
    """A turn that ended badly; ``result`` is its whole account and
    ``agent_text`` the agent's (or the engine's) own words."""

    def __init__(self, result: TurnResult) -> None:
        text = result.error or f"the turn ended with {result.stop_reason}"
        super().__init__(text, exit_code=result.exit_code)
        self.result = result
        self.stop_reason = result.stop_reason
        self.agent_text = result.error


class TurnTimeout(TurnError):
    """The turn hit its overall deadline or the inactivity timeout (exit 3)."""


class PermissionDenied(TurnError):
    """The agent asked for permission and every request was refused (exit 5)."""


class TurnInterrupted(TurnError):
    """The turn was aborted: cancelled by the program, or Ctrl-C (exit 130)."""


class SessionBusy(TurnError):
    """``wait=False``: another command (or session) was running a turn on
    this session, so this one did not run (exit 7); the message names it."""


class OutputInvalid(AgyHostError):
    """The agent's answer was not the value asked for, twice (exit 1).

    ``reason`` says what was wrong with the last answer, ``raw`` is that
    answer as the agent gave it, and ``result`` its turn's result."""

    def __init__(self, reason: str, raw: str, result: TurnResult) -> None:
        super().__init__(f"the agent's answer is not the output asked for, after one retry: {reason}")
        self.reason = reason
        self.raw = raw
        self.result = result


def error_for(result: TurnResult) -> TurnError:
    """The typed error of a finished turn whose exit code is not 0."""
    kinds: dict[int, type[TurnError]] = {
        ExitCode.TIMEOUT: TurnTimeout,
        ExitCode.PERMISSION_DENIED: PermissionDenied,
        ExitCode.INTERRUPTED: TurnInterrupted,
        ExitCode.SESSION_BUSY: SessionBusy,
    }
    return kinds.get(result.exit_code, TurnError)(result)


__all__ = [
    "AgyHostError",
    "EngineUnavailable",
    "KeeperLost",
    "NotSupported",
    "OutputInvalid",
    "PermissionDenied",
    "SessionBusy",
    "SessionNotFound",
    "TurnError",
    "TurnInterrupted",
    "TurnTimeout",
    "UsageError",
    "error_for",
]
