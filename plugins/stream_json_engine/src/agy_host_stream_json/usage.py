"""Token usage: agy's counters mapped to :class:`~agy_host.contract.events.UsageCounts`,
and the per-turn delta.

agy's ``result.usage`` is not the turn's usage: it is the sum of every step's
usage *since the conversation began*, across turns and across processes
(``cli-08-resume-b``: 27,723 after two calls of about 13.9k). A turn's own
usage is therefore, in order of preference:

1. the result minus the previous result of the same conversation, when this
   process saw that previous result (and no counter went down, which a
   zeroed print-timeout result would do);
2. the sum of the turn's step usages (``result.usage`` is exactly that sum
   in every recording, so this is right after a host restart too);
3. the result itself, when the turn reported no step usage at all (the
   first result of a resumed conversation is then both turn and total).

``thinking_tokens`` is a subset of ``output_tokens``; ``input_tokens`` does
not include ``cache_read_tokens``; ``input + output == total`` in every run.
"""

from __future__ import annotations

from agy_host.contract.events import UsageCounts
from agy_host_stream_json.wire import Usage

_FIELDS = (
    "input_tokens",
    "output_tokens",
    "thinking_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "total_tokens",
)


def to_counts(usage: Usage) -> UsageCounts:
    total = usage.total_tokens
    if total is None and usage.input_tokens is not None and usage.output_tokens is not None:
        total = usage.input_tokens + usage.output_tokens
    return UsageCounts(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        thinking_tokens=usage.thinking_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        total_tokens=total,
    )


def is_zero(usage: Usage | None) -> bool:
    """No counter above zero (agy >= 1.2.17's print-timeout result)."""
    if usage is None:
        return True
    return not any(getattr(usage, name) for name in _FIELDS)


def subtract(current: UsageCounts, previous: UsageCounts) -> UsageCounts | None:
    """``current - previous`` field by field; ``None`` when a counter went
    down (the totals are not from one running sum)."""
    out = UsageCounts()
    for name in _FIELDS:
        cur, prev = getattr(current, name), getattr(previous, name)
        if cur is None:
            continue
        if prev is not None and cur < prev:
            return None
        setattr(out, name, cur - (prev or 0))
    return out


class UsageSum:
    """The running sum of one turn's step usages."""

    __slots__ = ("_sum", "last", "steps")

    def __init__(self) -> None:
        #: Only counters agy reported are summed; the others stay ``None``.
        self._sum: dict[str, int | None] = dict.fromkeys(_FIELDS)
        self.steps = 0
        #: The last step's usage: about the size of the agent's context now.
        self.last: Usage | None = None

    def add(self, usage: Usage) -> None:
        self.steps += 1
        self.last = usage
        for name in _FIELDS:
            value = getattr(usage, name)
            if value is not None:
                self._sum[name] = (self._sum[name] or 0) + value

    def counts(self) -> UsageCounts | None:
        if not self.steps:
            return None
        return to_counts(Usage(**self._sum))


def context_used(last: Usage | None) -> int | None:
    """What the last step sent plus what it produced, cached input included."""
    if last is None:
        return None
    counts = to_counts(last)
    if counts.total_tokens is None:
        return None
    return counts.total_tokens + (last.cache_read_tokens or 0)


def turn_usage(
    result: Usage | None, previous_total: UsageCounts | None, steps: UsageSum
) -> tuple[UsageCounts, UsageCounts | None] | None:
    """``(turn, cumulative)`` for a result; ``None`` when agy said nothing."""
    if result is None:
        counts = steps.counts()
        return (counts, None) if counts is not None else None
    total = to_counts(result)
    turn: UsageCounts | None = None
    if previous_total is not None:
        turn = subtract(total, previous_total)
    if turn is None:
        turn = steps.counts()
    if turn is None:
        turn = to_counts(result)
    turn.context_used = context_used(steps.last)
    return turn, total


__all__ = ["UsageSum", "context_used", "is_zero", "subtract", "to_counts", "turn_usage"]
