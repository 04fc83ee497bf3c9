"""How long a turn retries a failing model API, and the typed error after.

The harness retries a model call that failed in a way it deems transient
(a 429 or 503, any 5xx, a connection refused or reset) with exponential
backoff, and left alone it does so for many minutes with one warning line:
a model API answering 503 for ever kept a turn alive until its 10-minute
deadline, and a wrong ``base_url`` hung for over 200 s. Two budgets bound it,
measured from the model's last sign of progress:

* ``connect_retry_seconds`` (15 s): the endpoint cannot be reached. A wrong
  URL never recovers, so this one is short (a reachability check when the
  engine opens catches most of them at once: :mod:`.reachability`);
* ``retry_seconds`` (60 s): the endpoint answers an error it may retry, by
  HTTP status (rate limited, overloaded). Such trouble passes, so it gets a
  minute.

The harness reports each failed attempt as an error step of the system on
the main trajectory ("Encountered retryable error from model provider", with
``httpCode``: the status, or 2 for a network error); :class:`RetryWatch`
reads them, tells the user once per kind which budget applies, and when a
budget runs out the driver halts the turn, which ends with an error naming
the status (``agent_stop_reason`` ``HTTP_503``) or the endpoint
(``UNREACHABLE``). Any model output ends the streak.

To keep those budgets, the harness is given a schedule: the first retry
after 1 s, each next one 1.5 times later, enough of them to outlast the
longer budget. ``api_retries`` set to a number hands the count back to the
harness (its own backoff, from 4 s, doubling): then the budgets do not
apply and that count is the bound, so a larger one still raises it. 0 for a
budget means no bound of agy-host's for that kind.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any, Literal

import msgspec
import trio

from agy_host_harness import wire
from agy_host_harness.settings import HarnessSettings

if TYPE_CHECKING:
    from agy_host_harness.harness_config import Endpoint

#: The schedule agy-host gives the harness when it keeps the budgets.
INITIAL_SLEEP_MS = 1000
MULTIPLIER = 1.5
#: Retries beyond what covers the longer budget (the harness jitters its sleeps).
SPARE_RETRIES = 2
_RETRYABLE = "retryable error from model provider"
_STATUS = re.compile(r"Error (\d{3}), Message: (.*?), Status: ([A-Z_]+)")
_SENDING = re.compile(r'error sending request: \w+ \\?"[^"]*?\\?": (.+?)(?=: doRequest|\\?"\)|$)')
_DIAL = re.compile(r"^(?:dial tcp \S+: )?(?:connect: )?")

Kind = Literal["connect", "status"]


class Trouble(msgspec.Struct, frozen=True, kw_only=True):
    """One failed attempt the harness will retry."""

    kind: Kind
    #: The HTTP status (``kind == "status"``), else 0.
    status: int = 0
    #: What went wrong, in few words: ``UNAVAILABLE (overloaded)``, ``connection refused``.
    detail: str = ""

    @property
    def code(self) -> str:
        """The turn's ``agent_stop_reason`` when this trouble ends it."""
        return f"HTTP_{self.status}" if self.kind == "status" else "UNREACHABLE"


def trouble_of(step: wire.StepUpdate) -> Trouble | None:
    """The failed attempt an error step of the harness reports, when it is one it retries."""
    if step.source != "SOURCE_SYSTEM" or step.state != wire.STEP_ERROR:
        return None
    message = step.error_message or (step.error.error_message if step.error else "")
    if _RETRYABLE not in message.lower():
        return None
    said = step.text or (step.error.error_message if step.error else "") or message
    code = step.error.http_code if step.error is not None else 0
    found = _STATUS.search(said)
    if code >= 100 or found:
        status = code if code >= 100 else int(found.group(1)) if found else 0
        detail = f"{found.group(3)} ({found.group(2)})" if found else ""
        return Trouble(kind="status", status=status, detail=detail)
    sending = _SENDING.search(said)
    if sending:
        detail = _DIAL.sub("", sending.group(1)).strip()
        return Trouble(kind="connect", detail="closed without an answer" if detail == "EOF" else detail)
    return Trouble(kind="connect", detail=message.split(": ", 1)[-1].strip().rstrip("."))


def keeps_budgets(settings: HarnessSettings) -> bool:
    """Whether agy-host bounds the retries (else ``api_retries`` is the harness's count)."""
    return settings.api_retries < 0 and (settings.retry_seconds > 0 or settings.connect_retry_seconds > 0)


def harness_retry_config(settings: HarnessSettings) -> dict[str, Any] | None:
    """The ``retryConfig`` a conversation starts with (``None``: the harness's own)."""
    if settings.api_retries >= 0:
        return {"apiRetry": {"maxRetries": settings.api_retries}}
    if not keeps_budgets(settings):
        return None
    longest = max(settings.retry_seconds, settings.connect_retry_seconds)
    if settings.retry_seconds <= 0 or settings.connect_retry_seconds <= 0:
        longest = 0.0  # one kind is unbounded: the harness must not give up on it first
    retries = retries_to_cover(longest) + SPARE_RETRIES if longest else 2**32 - 1
    api = {"maxRetries": retries, "initialSleepDurationMs": INITIAL_SLEEP_MS, "exponentialMultiplier": MULTIPLIER}
    return {"apiRetry": api}


def retries_to_cover(seconds: float) -> int:
    """How many retries of the schedule it takes for their sleeps to add up to ``seconds``."""
    count, total, sleep = 0, 0.0, INITIAL_SLEEP_MS / 1000
    while total < seconds:
        total += sleep
        sleep *= MULTIPLIER
        count += 1
    return count


def summary(settings: HarnessSettings) -> str:
    """The retry bounds in a line (for ``doctor``)."""
    if settings.api_retries >= 0:
        return f"the harness's own backoff, {settings.api_retries} retries ([harness] api_retries)"

    def bound(seconds: float) -> str:
        return f"up to {seconds:g}s" if seconds > 0 else "no bound of agy-host's"

    status, connect = bound(settings.retry_seconds), bound(settings.connect_retry_seconds)
    return f"an API answering 429/503: {status}; an endpoint that cannot be reached: {connect}"


def budget_key(kind: Kind) -> str:
    return "connect_retry_seconds" if kind == "connect" else "retry_seconds"


def describe(trouble: Trouble, point: Endpoint) -> str:
    """The trouble in a sentence's words, naming the endpoint."""
    if trouble.kind == "status":
        what = f"{trouble.status} {trouble.detail}".strip()
        return f"the model API ({point.describe()}) answered {what}"
    return f"the model endpoint ({point.describe()}) cannot be reached ({trouble.detail or 'network error'})"


class RetryWatch:
    """One turn's failed model calls against their budgets.

    The turn feeds it (:meth:`failed` per retryable error step,
    :meth:`progress` on any model output); :meth:`exhausted` returns the
    trouble whose budget ran out, and never returns while the model keeps
    making progress or agy-host keeps no budget. Progress is a clock read
    and no more: it comes with every streamed delta."""

    def __init__(self, settings: HarnessSettings, point: Endpoint) -> None:
        self.settings = settings
        self.point = point
        self.budgets: dict[Kind, float] = {}
        if keeps_budgets(settings):
            self.budgets = {"connect": settings.connect_retry_seconds, "status": settings.retry_seconds}
        #: When the model last showed progress (``time.monotonic``): a streak of failures starts there.
        self.since = time.monotonic()
        #: The latest failure of the current streak (``None`` once the model answers again).
        self.failing: Trouble | None = None
        self.attempts = 0
        self._told: set[tuple[Kind, int]] = set()
        self._changed = trio.Event()

    def budget(self, kind: Kind) -> float:
        """Seconds for ``kind`` (0: no bound of agy-host's)."""
        return self.budgets.get(kind, 0.0)

    def failed(self, trouble: Trouble) -> str | None:
        """One more failed attempt; what to tell the user when this kind is news."""
        self.attempts += 1
        self.failing = trouble
        self._changed.set()
        self._changed = trio.Event()
        key = (trouble.kind, trouble.status)
        if key in self._told:
            return None
        self._told.add(key)
        budget, setting = self.budget(trouble.kind), budget_key(trouble.kind)
        if budget > 0:
            return f"{describe(trouble, self.point)}; retrying for up to {budget:g}s ([harness] {setting})"
        return f"{describe(trouble, self.point)}; the harness retries it ([harness] api_retries, {setting})"

    def progress(self) -> None:
        self.since = time.monotonic()
        if self.failing is not None:
            self.failing = None
            self._changed.set()
            self._changed = trio.Event()

    async def exhausted(self) -> Trouble:
        """The trouble whose budget ran out (waits for it)."""
        while True:
            changed, failing = self._changed, self.failing
            budget = self.budget(failing.kind) if failing is not None else 0.0
            if failing is None or budget <= 0:
                await changed.wait()
                continue
            with trio.move_on_after(max(0.0, self.since + budget - time.monotonic())):
                await changed.wait()
                continue
            return failing

    def gave_up(self, trouble: Trouble, *, by_harness: bool) -> str:
        """The turn's error once the retries are over: what failed, for how long, what raises it."""
        said = describe(trouble, self.point)
        setting = budget_key(trouble.kind)
        if by_harness:
            explicit = self.settings.api_retries >= 0
            tail = " ([harness] api_retries raises it)" if explicit else ""
            attempts = f"{self.attempts} failed attempt{'s' if self.attempts != 1 else ''}"
            return f"{said}; the harness gave up after {attempts}{tail}"
        every = " to every call" if trouble.kind == "status" else ""
        waited = f"{said}{every} for {self.budget(trouble.kind):g}s; agy-host stopped retrying"
        longer = f"[harness] {setting} waits longer"
        if trouble.kind == "connect" and self.point.source:
            return f"{waited}: is the server running, and is {self.point.source} right? ({longer})"
        return f"{waited} ({longer})"


__all__ = [
    "INITIAL_SLEEP_MS",
    "MULTIPLIER",
    "RetryWatch",
    "Trouble",
    "budget_key",
    "describe",
    "harness_retry_config",
    "keeps_budgets",
    "retries_to_cover",
    "summary",
    "trouble_of",
]
