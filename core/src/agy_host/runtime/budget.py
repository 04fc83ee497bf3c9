"""Per-turn budgets: ``--max-tokens`` and ``--max-cost``.

An unattended run must not spend without a bound. The turn layer checks the
budget each time the agent reports usage: a crossing mid-turn aborts the
turn at once (ACP ``usage_update`` costs, the harness's usage updates, agy's
step usages); one only known at the end (an ACP prompt response's tokens)
still marks the turn. The numbers checked are the *turn's*: an engine whose
agent reports running totals (ACP's session cost, the harness's counters)
reports the turn's difference, so a long chat is not stopped for what
earlier turns spent. Either way the turn ends as an error of kind ``budget`` and
the command exits 6, with what was used and the limit. An agent that reports
nothing measurable gets a notice: the limit could not be enforced, and
nobody should believe it was.
"""

from __future__ import annotations

import msgspec

from agy_host.contract.events import OutcomeActivity, StopReason, UsageCounts


class Budget(msgspec.Struct, frozen=True, kw_only=True):
    """The limits of one turn; ``None`` (or 0) means none."""

    max_tokens: int | None = None
    max_cost: float | None = None

    @property
    def active(self) -> bool:
        return bool(self.max_tokens) or bool(self.max_cost)


def tokens_of(usage: UsageCounts) -> int | None:
    """The turn's tokens as reported: the total, else input + output + thinking."""
    if usage.total_tokens is not None:
        return usage.total_tokens
    parts = [usage.input_tokens, usage.output_tokens, usage.thinking_tokens]
    known = [p for p in parts if p is not None]
    return sum(known) if known else None


def crossed(budget: Budget, usage: UsageCounts | None) -> str | None:
    """Why ``usage`` is over ``budget`` (for the user), or ``None``."""
    if usage is None:
        return None
    tokens = tokens_of(usage)
    if budget.max_tokens and tokens is not None and tokens > budget.max_tokens:
        return f"the turn used {tokens:,} tokens, over --max-tokens {budget.max_tokens:,}"
    if budget.max_cost and usage.cost_amount is not None and usage.cost_amount > budget.max_cost:
        currency = f" {usage.cost_currency}" if usage.cost_currency else ""
        return f"the agent reports a cost of {usage.cost_amount:g}{currency}, over --max-cost {budget.max_cost:g}"
    return None


def unenforced(budget: Budget, usage: UsageCounts | None) -> str | None:
    """What could not be checked because the agent did not report it, or ``None``."""
    missing = []
    if budget.max_tokens and (usage is None or tokens_of(usage) is None):
        missing.append("--max-tokens (no token counts)")
    if budget.max_cost and (usage is None or usage.cost_amount is None):
        missing.append("--max-cost (no cost)")
    if not missing:
        return None
    return "the agent reported no usage to check " + " or ".join(missing) + " against; the limit was not enforced"


class Settled(msgspec.Struct, frozen=True, kw_only=True):
    """How a turn with a budget ends: its outcome and stop reason, why it
    crossed the budget (``None``: it did not), and a notice to show."""

    outcome: OutcomeActivity
    stop: StopReason
    hit: str | None = None
    notice: str | None = None


def settle(
    budget: Budget,
    usage: UsageCounts | None,
    outcome: OutcomeActivity,
    stop: StopReason,
    *,
    hit: str | None,
    users_abort: bool,
) -> Settled:
    """The end of a turn under ``budget``: one that crossed it (now, or
    mid-turn, ``hit``, and was stopped for it) ends as a ``budget`` error
    (exit 6), unless the user aborted it first; one whose usage could not be
    checked gets a notice saying so."""
    if hit is None and stop != "aborted":
        hit = crossed(budget, usage)
    if hit is None:
        missing = unenforced(budget, usage) if stop != "aborted" else None
        return Settled(outcome=outcome, stop=stop, notice=missing)
    if stop == "aborted" and users_abort:
        return Settled(outcome=outcome, stop=stop, hit=hit)  # the user's own abort wins
    failed = msgspec.structs.replace(
        outcome, status="error", stop_reason="error", aborted=False, error=hit, error_kind="budget"
    )
    return Settled(outcome=failed, stop="error", hit=hit)


__all__ = ["Budget", "Settled", "crossed", "settle", "tokens_of", "unenforced"]
