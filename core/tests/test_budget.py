"""The per-turn budget's rules, without an agent: what crosses it, what
cannot be checked, and how a turn under it ends."""

from __future__ import annotations

from agy_host.contract.events import OutcomeActivity, UsageCounts
from agy_host.runtime.budget import Budget, crossed, settle, tokens_of, unenforced

DONE = OutcomeActivity(status="ok", stop_reason="stop", response="hi")
ABORTED = OutcomeActivity(status="ok", stop_reason="aborted", aborted=True)


def test_tokens_are_the_total_else_the_parts_reported() -> None:
    assert tokens_of(UsageCounts(total_tokens=50, input_tokens=1)) == 50
    assert tokens_of(UsageCounts(input_tokens=10, output_tokens=5, thinking_tokens=2)) == 17
    assert tokens_of(UsageCounts(context_used=900)) is None, "the context window is not spend"


def test_crossing_and_what_cannot_be_checked() -> None:
    budget = Budget(max_tokens=100, max_cost=0.5)
    assert crossed(budget, UsageCounts(total_tokens=101)) == "the turn used 101 tokens, over --max-tokens 100"
    assert crossed(budget, UsageCounts(total_tokens=100, cost_amount=0.5)) is None
    assert "0.6 USD" in str(crossed(budget, UsageCounts(cost_amount=0.6, cost_currency="USD")))
    missing = unenforced(budget, UsageCounts(total_tokens=3))
    assert missing is not None and "--max-cost (no cost)" in missing and "--max-tokens" not in missing
    assert unenforced(Budget(), None) is None


def test_a_turn_over_its_budget_ends_as_a_budget_error() -> None:
    settled = settle(Budget(max_tokens=10), UsageCounts(total_tokens=11), DONE, "stop", hit=None, users_abort=False)
    assert settled.stop == "error" and settled.outcome.error_kind == "budget"
    assert settled.hit is not None and settled.outcome.error == settled.hit and settled.outcome.response == "hi"


def test_stopped_mid_turn_for_the_budget_is_a_budget_error_but_the_users_abort_wins() -> None:
    why = "the turn used 11 tokens, over --max-tokens 10"
    stopped = settle(Budget(max_tokens=10), None, ABORTED, "aborted", hit=why, users_abort=False)
    assert stopped.stop == "error" and stopped.outcome.error == why and not stopped.outcome.aborted
    theirs = settle(Budget(max_tokens=10), None, ABORTED, "aborted", hit=why, users_abort=True)
    assert theirs.stop == "aborted" and theirs.outcome is ABORTED


def test_a_turn_the_budget_could_not_check_says_so() -> None:
    settled = settle(Budget(max_cost=1.0), UsageCounts(total_tokens=5), DONE, "stop", hit=None, users_abort=False)
    assert settled.stop == "stop" and settled.outcome is DONE
    assert settled.notice is not None and "not enforced" in settled.notice
    aborted = settle(Budget(max_cost=1.0), None, ABORTED, "aborted", hit=None, users_abort=True)
    assert aborted.notice is None, "an aborted turn is not blamed for usage it never got to report"
