"""A warm agent is sent an "always" answer as a one-time one (keeper/always.py)."""

from __future__ import annotations

import pytest

from agy_host.contract.events import PermissionOption
from agy_host.contract.permissions import PermissionDecision, PermissionRequest
from agy_host.keeper.always import for_warm_agent

OPTIONS = [
    PermissionOption(option_id="aa", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="a1", name="Allow", kind="allow_once"),
    PermissionOption(option_id="ra", name="Always reject", kind="reject_always"),
    PermissionOption(option_id="r1", name="Reject", kind="reject_once"),
]


def _request(options: list[PermissionOption] = OPTIONS, *, question: bool = False) -> PermissionRequest:
    return PermissionRequest(session="s", call_id="c", title="t", options=options, is_question=question)


@pytest.mark.parametrize(("chosen", "sent"), [("aa", "a1"), ("ra", "r1")])
def test_an_always_answer_goes_as_the_one_time_option_of_its_family(chosen: str, sent: str) -> None:
    decision, kept = for_warm_agent(_request(), PermissionDecision(option_id=chosen, policy="ask", reason="why"))
    assert (decision.option_id, decision.policy, kept) == (sent, "ask", False)
    assert decision.reason.startswith("why; ") and "sent to the warm agent as" in decision.reason


@pytest.mark.parametrize("chosen", ["a1", "r1", None])
def test_any_other_answer_goes_as_it_is(chosen: str | None) -> None:
    given = PermissionDecision(option_id=chosen, policy="auto")
    assert for_warm_agent(_request(), given) == (given, False)


def test_a_question_is_never_changed() -> None:
    given = PermissionDecision(option_id="aa", policy="ask")
    assert for_warm_agent(_request(question=True), given) == (given, False)


def test_without_a_one_time_option_the_agent_keeps_the_answer() -> None:
    given = PermissionDecision(option_id="aa", policy="ask")
    assert for_warm_agent(_request(OPTIONS[:1] + OPTIONS[3:]), given) == (given, True)
