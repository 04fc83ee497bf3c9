"""One harness turn: the shared engine turn plus what the harness said about it.

The wire side of a turn is done (``wire_done``) when the conversation's main
trajectory reports ``FULLY_IDLE`` (subagents' trajectories interleave and do
not count), or when the conversation's socket closes. A failed model call
the harness retries goes to the turn's :class:`~.retries.RetryWatch`, not
to the mapper: one notice per kind says which retry budget applies.
"""

from __future__ import annotations

import trio

from agy_host.contract.events import Activity, NoticeActivity, UsageActivity, UsageCounts
from agy_host.engine.driver import TurnRequest
from agy_host.engine.turn import EngineTurn
from agy_host_harness import wire
from agy_host_harness.harness_config import Endpoint
from agy_host_harness.mapping import StepMapper
from agy_host_harness.retries import RetryWatch, trouble_of
from agy_host_harness.settings import HarnessSettings

#: Visible warnings per turn about frames that could not be used.
MAX_WIRE_NOTICES = 3


class HarnessTurn(EngineTurn):
    def __init__(self, request: TurnRequest, retries: RetryWatch | None = None) -> None:
        super().__init__(request)
        #: The model API's failed calls against their retry budgets.
        self.retries = retries or RetryWatch(HarnessSettings(), Endpoint(kind="gemini"))
        self.mapper = StepMapper(self.handle.emit, "")
        self.wire_done = trio.Event()
        #: The user input reached the harness (from then on it works on this turn).
        self.sent = False
        self.trajectory_error = ""
        self.error_code = ""
        self.stop_reason = ""
        self.socket_closed = ""
        self.usage_start: wire.Usage | None = None
        self.usage_now: wire.Usage | None = None
        #: The counters last reported (each change is reported once).
        self.usage_sent: wire.Usage | None = None
        self.wire_notices = 0
        self.permissions_asked = 0
        #: ``(trajectory, step)`` of the questions already handed to the broker.
        self.questions_seen: set[tuple[str, int]] = set()
        self.permissions_denied = 0
        self.host_calls = 0

    def response(self) -> str:
        return self.mapper.response

    def emit(self, activity: Activity) -> None:
        self.handle.emit(activity)

    def start(self, main_trajectory: str, usage: wire.Usage | None) -> None:
        self.conversation_id = main_trajectory
        self.mapper.main = main_trajectory
        self.usage_start = usage
        self.usage_now = usage

    def on_event(self, event: wire.OutputEvent) -> None:
        """The turn's own share of a frame: steps, the trajectory's state,
        usage. (Host tools and policy questions need the driver.)"""
        self.timers.touch()
        if event.usage_update is not None and event.usage_update.total is not None:
            self.usage_now = event.usage_update.total
            self.retries.progress()
            if self.sent:  # reported as it changes: a budget can stop the turn mid-way
                self.emit_usage()
        if (step := event.step_update) is not None:
            trouble = trouble_of(step)
            if trouble is not None:  # a failed model call the harness retries: the budgets' business
                news = self.retries.failed(trouble)
                if news is not None:
                    self.emit(NoticeActivity(level="warning", message=news, code="model-retry"))
                return
            if step.source not in ("SOURCE_SYSTEM", "SOURCE_USER"):
                self.retries.progress()
            self.mapper.step(step)
        elif (state := event.trajectory_state_update) is not None:
            self.on_state(state)

    def on_state(self, update: wire.TrajectoryState) -> None:
        if update.trajectory_id != self.mapper.main or not self.sent:
            return
        if update.state in (wire.IDLE, wire.CANCELLED):
            self.trajectory_error = update.error
            self.error_code = update.error_code
            self.stop_reason = update.stop_reason
            self.wire_done.set()

    def on_closed(self, reason: str) -> None:
        self.socket_closed = self.socket_closed or reason  # the first reason is the cause
        self.wire_done.set()

    def wire_notice(self, message: str) -> None:
        if self.wire_notices < MAX_WIRE_NOTICES:
            self.wire_notices += 1
            self.emit(NoticeActivity(level="warning", message=message, code="wire"))

    def emit_usage(self) -> None:
        """The turn's usage (the difference of the harness's cumulative
        counters) and the conversation's, when the model reported any."""
        now = self.usage_now
        if now is None or now in (self.usage_start, self.usage_sent):
            return
        self.usage_sent = now
        self.emit(UsageActivity(turn=counts(now, self.usage_start), cumulative=counts(now, None)))


def counts(now: wire.Usage, before: wire.Usage | None) -> UsageCounts:
    b = before or wire.Usage()
    return UsageCounts(
        input_tokens=max(0, now.prompt_token_count - b.prompt_token_count),
        output_tokens=max(0, now.candidates_token_count - b.candidates_token_count),
        thinking_tokens=max(0, now.thoughts_token_count - b.thoughts_token_count),
        cache_read_tokens=max(0, now.cached_content_token_count - b.cached_content_token_count),
        total_tokens=max(0, now.total_token_count - b.total_token_count),
    )


__all__ = ["MAX_WIRE_NOTICES", "HarnessTurn", "counts"]
