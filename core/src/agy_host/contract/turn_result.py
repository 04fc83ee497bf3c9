"""What a pass of a turn hands back, and who takes host tool results.

Split from :mod:`agy_host.runtime.turn_layer` (and re-exported there) so that the
contract callers script against (:class:`TurnResult`, the exit codes, the
:class:`ToolResultSink` protocol) reads on its own.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import msgspec

from agy_host.contract.events import ErrorKind, StopReason, ToolUseRequested, UsageCounts
from agy_host.contract.tools import ToolResult
from agy_host.exit_codes import ExitCode


@runtime_checkable
class ToolResultSink(Protocol):
    """Who can hand a host tool's result back to the agent's parked call:
    the bridge service, or an engine driver that parks turns itself.

    ``deliver_tool_result`` returns ``False`` when it knows no such call (it
    timed out, or belongs to another bridge).
    """

    def deliver_tool_result(self, call_id: str, result: ToolResult) -> bool: ...


class TurnLayerError(Exception):
    """The turn layer was used out of order (a turn is already parked)."""


class TurnResult(msgspec.Struct, kw_only=True, omit_defaults=True):
    """How one pass of a turn ended, for the CLI and for scripts."""

    session: str
    stop_reason: StopReason
    exit_code: int
    duration_s: float
    conversation_id: str | None = None
    response: str = ""
    error: str = ""
    error_kind: ErrorKind | None = None
    usage: UsageCounts | None = None
    #: The conversation's running totals (and context window), when the agent reports them.
    cumulative_usage: UsageCounts | None = None
    #: Set when ``stop_reason == "tool_use"``: the host tool to run.
    tool_use: ToolUseRequested | None = None
    permission_requests: int = 0
    permissions_refused: int = 0
    #: The conversation the session was bound to, when the agent could not
    #: continue it and this turn started a new one (without ``--resume``).
    replaced_conversation_id: str | None = None
    #: Tool calls the agent reported as failed, ``"title: error"`` each (a host
    #: tool among them is also a ``host-tool-failed`` notice).
    tool_errors: list[str] = msgspec.field(default_factory=list)
    #: The validated structured output, when the program asked for one
    #: (``output=`` in the Python API; never set by the CLI or over a wire).
    output: Any = None


def exit_code_for(
    stop_reason: StopReason,
    error_kind: ErrorKind | None,
    permission_requests: int = 0,
    permissions_refused: int = 0,
    questions_unanswered: int = 0,
) -> int:
    """The documented exit code of a finished turn.

    Interruption and timeouts say more than "the agent gave up because it was
    not allowed", which in turn says more than a generic error. A question
    nobody could answer fails the turn closed (5) even when the agent went
    on without the answer: a script must not take that turn's result for
    one the user agreed to.
    """
    if stop_reason == "aborted":
        return ExitCode.INTERRUPTED
    if stop_reason == "error" and error_kind in ("timeout", "inactivity"):
        return ExitCode.TIMEOUT
    if error_kind == "budget":
        return ExitCode.BUDGET
    if error_kind == "no_session":
        return ExitCode.NO_SUCH_SESSION
    if error_kind == "busy":
        return ExitCode.SESSION_BUSY
    if questions_unanswered > 0:
        return ExitCode.PERMISSION_DENIED
    if permission_requests > 0 and permissions_refused == permission_requests:
        return ExitCode.PERMISSION_DENIED
    if stop_reason == "error":
        return ExitCode.ERROR
    return ExitCode.OK


__all__ = ["ToolResultSink", "TurnLayerError", "TurnResult", "exit_code_for"]
