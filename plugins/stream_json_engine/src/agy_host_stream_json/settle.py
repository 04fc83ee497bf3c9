"""From what agy printed to the turn's outcome: response, usage, denials,
and the typed error with agy's own words.

Kept apart from the driver (which owns processes and timers) so the rules can
be read in one place:

* The response is the streamed text; a result whose text never streamed still
  reaches the user (emitted as text once, here).
* Usage is emitted once per turn, as the turn's delta and the conversation's
  running total (see :mod:`.usage`).
* A denied tool ends as a denied card, and a notice says why agy could not
  ask (headless agy has no permission prompt) and how to allow tools.
* ``SUCCESS`` with an empty response and zero usage is agy >= 1.2.17's print
  timeout, reported as a timeout; an ``error`` left in a ``SUCCESS`` envelope
  next to a real answer is shown as a notice, not a failure.
"""

from __future__ import annotations

import msgspec

from agy_host.contract.events import (
    ErrorKind,
    NoticeActivity,
    OutcomeActivity,
    TextActivity,
    UsageActivity,
    UsageCounts,
)
from agy_host.engine.turn import failed_outcome
from agy_host_stream_json.mapping import error_text
from agy_host_stream_json.outcome import is_success, result_failure
from agy_host_stream_json.turn import Turn
from agy_host_stream_json.usage import is_zero, turn_usage
from agy_host_stream_json.wire import Result


def failed(turn: Turn, error: str, kind: ErrorKind, agent_stop_reason: str = "") -> OutcomeActivity:
    """An error outcome, or ``aborted`` when the user asked for that (core's rule)."""
    return failed_outcome(turn, error, kind, agent_stop_reason)


def response_of(turn: Turn, result: Result) -> str:
    """The streamed text; else ``result.response``, emitted as the answer."""
    mapper = turn.mapper
    if not mapper.response and result.response:
        mapper.add_final(result.response)
        turn.handle.emit(TextActivity(delta=result.response))
    return mapper.response


def report_structured_output(turn: Turn, result: Result) -> None:
    """``--json-schema`` answers arrive as ``structured_output`` next to the
    text; the outcome has no field for it, so it is passed on as a notice
    (``code: structured-output``, the JSON as the message)."""
    if result.structured_output is not None:
        text = msgspec.json.encode(result.structured_output).decode()
        turn.handle.emit(NoticeActivity(level="info", message=text, code="structured-output"))


def report_denials(turn: Turn, result: Result) -> None:
    mapper = turn.mapper
    mapper.apply_denied(result.denied_actions or [])
    if not mapper.denied:
        return
    names = ", ".join(dict.fromkeys(mapper.denied))
    message = f"agy was denied {len(mapper.denied)} tool call(s) that need permission: {names}."
    if not turn.request.skip_permissions:
        message += (
            " agy cannot ask for permission in stream-json mode; run with --permissions skip"
            " (config `skip_permissions = true`) to let it run them."
        )
    turn.handle.emit(NoticeActivity(level="warning", message=message, code="denied"))


def report_usage(turn: Turn, result: Result, previous: UsageCounts | None) -> UsageCounts | None:
    """Emit the turn's usage; return the new running total to remember."""
    pair = turn_usage(result.usage, previous, turn.mapper.usage)
    if pair is None:
        return None
    counts, total = pair
    turn.handle.emit(UsageActivity(turn=counts, cumulative=total))
    return total if result.usage is not None and not is_zero(result.usage) else None


def may_be_print_timeout(turn: Turn, result: Result) -> bool:
    """agy >= 1.2.17 ends a timed-out turn with SUCCESS, an empty response and
    zero usage, and says so on stderr, maybe after the result line: such a
    result needs agy's stderr to the end before it can be judged."""
    if not is_success(result.status) or result.response:
        return False
    return turn.print_timeout_line is not None or is_zero(result.usage)


def is_print_timeout(turn: Turn) -> bool:
    """Judged after agy's stderr ended: the line, or nothing answered at all
    (text streamed before the timeout is kept as the partial answer)."""
    return turn.print_timeout_line is not None or not turn.mapper.response


def print_timeout_outcome(turn: Turn, result: Result, print_timeout: str) -> OutcomeActivity:
    detail = turn.print_timeout_line or "an empty result with zero usage"
    message = (
        f"agy's --print-timeout ({print_timeout}) ended the turn before the model answered: {detail}. "
        "agy returns SUCCESS in that case; agy-host reports it as a timeout."
    )
    return failed(turn, message, "timeout", result.status)


def outcome_of(turn: Turn, result: Result, exit_code: int | None) -> OutcomeActivity:
    """The outcome of a turn that got its result (print timeouts aside)."""
    error = error_text(result.error)
    response = turn.mapper.response
    if is_success(result.status):
        if error and not response:
            message, kind = result_failure(result.status, error, turn.statements, exit_code, turn.mapper.errors)
            return failed(turn, message, kind, result.status)
        if error:
            turn.handle.emit(NoticeActivity(level="info", message=f"agy also reported: {error}", code="agy-error"))
        for statement in turn.statements[:5]:
            turn.handle.emit(NoticeActivity(level="warning", message=f"agy: {statement}", code="agy-stderr"))
        return OutcomeActivity(
            status="ok",
            stop_reason="stop",
            agent_stop_reason=result.status,
            conversation_id=turn.conversation_id,
            response=response,
        )
    message, kind = result_failure(result.status, error, turn.statements, exit_code, turn.mapper.errors)
    return failed(turn, message, kind, result.status)


__all__ = [
    "failed",
    "is_print_timeout",
    "may_be_print_timeout",
    "outcome_of",
    "print_timeout_outcome",
    "report_denials",
    "report_structured_output",
    "report_usage",
    "response_of",
]
