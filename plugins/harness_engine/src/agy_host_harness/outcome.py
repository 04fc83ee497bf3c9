"""From what the harness said to the turn's outcome.

The main trajectory going idle ends every turn; what it carried decides:

* a budget stop (``MAX_MODEL_CALLS_EXCEEDED``...) is an error naming the
  budget and the setting that raises it;
* ``QUOTA_EXHAUSTED`` is the model provider's quota, in the harness's words;
* the harness giving up on a model API that kept failing (its retries, see
  :mod:`.retries`) names the status (``HTTP_503``) or the unreachable
  endpoint (``UNREACHABLE``), as agy-host's own retry budgets do;
* an ``error`` on the idle trajectory (the endpoint down, a bad key) is an
  error with the harness's own message and the system steps before it;
* the socket closing mid-turn is the harness going away (its stderr says why);
* anything else is the answer.
"""

from __future__ import annotations

from agy_host.contract.events import ErrorKind, OutcomeActivity
from agy_host_harness import wire
from agy_host_harness.process import HarnessProcess
from agy_host_harness.turn import HarnessTurn

BUDGETS = {
    "STOP_REASON_MAX_MODEL_CALLS_EXCEEDED": ("model calls", "max_model_calls"),
    "STOP_REASON_MAX_TOOL_CALLS_EXCEEDED": ("tool calls", "max_tool_calls"),
    "STOP_REASON_MAX_INPUT_TOKENS_EXCEEDED": ("input tokens", "max_total_tokens"),
    "STOP_REASON_MAX_OUTPUT_TOKENS_EXCEEDED": ("output tokens", "max_total_tokens"),
    "STOP_REASON_MAX_TOTAL_TOKENS_EXCEEDED": ("total tokens", "max_total_tokens"),
}
_AUTH_WORDS = ("api key", "unauthenticated", "permission_denied", "401", "403")


def settle(turn: HarnessTurn, harness: HarnessProcess | None) -> OutcomeActivity:
    if turn.socket_closed and not turn.trajectory_error and not turn.stop_reason:
        said = harness.reason() if harness is not None else ""
        gone = harness is None or not harness.alive
        what = "the harness exited" if gone else "the harness closed the conversation"
        if gone and harness is not None and harness.returncode is not None:
            said = f"exit code {harness.returncode}" + (f"; {said}" if said else "")
        detail = f": {said}" if said else f" ({turn.socket_closed})"
        # A refused key can end the conversation before its error frame is
        # read (under load): the harness's own words still say what it was.
        kind: ErrorKind = "auth" if _says_auth(said) else "exited"
        return turn.failed(f"{what} mid-turn{detail}", kind)
    stop = turn.stop_reason
    if stop in BUDGETS:
        what, key = BUDGETS[stop]
        return turn.failed(
            f"the harness stopped the turn: its budget of {what} is used up (raise [harness] {key}, or 0 for no cap)",
            "agent",
            wire.plain(stop, "STOP_REASON_"),
        )
    if stop == "STOP_REASON_QUOTA_EXHAUSTED":
        detail = turn.trajectory_error or "the model provider's quota is exhausted"
        return turn.failed(f"quota exhausted: {detail}", "agent", "QUOTA_EXHAUSTED")
    failing = turn.retries.failing
    if failing is not None and "model unreachable" in turn.trajectory_error.lower():
        # the harness ran out of retries before agy-host's budget did (an explicit api_retries)
        return turn.failed(turn.retries.gave_up(failing, by_harness=True), "agent", failing.code)
    if turn.trajectory_error:
        steps = [e for e in turn.mapper.errors if e not in turn.trajectory_error]
        message = turn.trajectory_error + (f" ({'; '.join(steps[-2:])})" if steps else "")
        failed: ErrorKind = "auth" if _says_auth(message) else "agent"
        return turn.failed(message, failed, turn.error_code or "error")
    return OutcomeActivity(
        status="ok",
        stop_reason="stop",
        agent_stop_reason="FULLY_IDLE",
        conversation_id=turn.conversation_id,
        response=turn.response(),
    )


def _says_auth(text: str) -> bool:
    lowered = text.lower()
    return any(w in lowered for w in _AUTH_WORDS)


__all__ = ["BUDGETS", "settle"]
