"""The engine SDK's turn bookkeeping (``agy_host.engine.turn``), shared by every engine."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from agy_host.contract.events import BridgeCallActivity, PermissionOption
from agy_host.contract.permissions import PermissionDecision, PermissionRequest
from agy_host.contract.prompt import TextBlock
from agy_host.engine.driver import TurnRequest
from agy_host.engine.lifecycle import Lifecycle
from agy_host.engine.turn import DriverTurns, EngineTurn, ParkedTurns, TurnFailed, driver_scope, failed_outcome


def _turn(session: str = "s") -> EngineTurn:
    return EngineTurn(TurnRequest(session=session, prompt=[TextBlock(text="hi")], cwd="/"))


class _Answering(EngineTurn):
    def response(self) -> str:
        return "partial"


@pytest.mark.trio
async def test_a_park_pauses_the_clocks_and_the_driver_finds_and_kicks_it() -> None:
    parked = ParkedTurns()
    turn = _turn()
    turn.on_parked.append(parked.add)
    assert parked.reentry() is None
    assert turn.handle.push_external(BridgeCallActivity(call_id="c", name="t"))
    assert turn.parked == 1 and turn.timers.parked
    assert parked.reentry() is turn.handle
    log = Lifecycle()
    assert parked.kick(log) is turn
    assert turn.parked == 0 and not turn.timers.parked
    assert parked.reentry() is None, "unparked: no longer listed"
    assert [e.event for e in log.entries()] == ["unparked"]


@pytest.mark.trio
async def test_a_new_turn_supersedes_the_parked_one_of_its_session_only() -> None:
    parked = ParkedTurns()
    mine, other = _turn("s"), _turn("t")
    for turn in (mine, other):
        turn.on_parked.append(parked.add)
        turn.handle.push_external(BridgeCallActivity(call_id="c", name="t"))
    parked.supersede("s")
    assert mine.handle.abort_requested.is_set() and not other.handle.abort_requested.is_set()
    parked.discard(other)
    assert parked.of_session("t") == []


def test_the_failed_outcome_is_an_error_with_the_partial_answer_or_aborted() -> None:
    turn = _Answering(TurnRequest(session="s", prompt=[], cwd="/"))
    turn.conversation_id = "c1"
    out = failed_outcome(turn, "boom", "agent", "X")
    assert (out.status, out.error, out.error_kind, out.response, out.agent_stop_reason) == (
        "error",
        "boom",
        "agent",
        "partial",
        "X",
    )
    turn.aborted = True
    out = turn.failed("boom", "agent")
    assert (out.status, out.stop_reason, out.aborted, out.error, out.conversation_id) == (
        "ok",
        "aborted",
        True,
        "",
        "c1",
    )
    assert TurnFailed("no", "spawn").kind == "spawn"


@pytest.mark.trio
async def test_driver_scope_closes_the_driver_even_when_the_caller_is_cancelled() -> None:
    closed: list[str] = []

    class Driver:
        def __init__(self, nursery: trio.Nursery) -> None:
            nursery.start_soon(trio.sleep_forever)

        async def aclose(self) -> None:
            await trio.sleep(0.01)  # a checkpoint: only a shielded close gets past it
            closed.append("closed")

    with trio.move_on_after(0.05):
        async with driver_scope(Driver):
            await trio.sleep_forever()
    assert closed == ["closed"]


def _ask() -> PermissionRequest:
    options = [PermissionOption(option_id="y", name="Allow", kind="allow_once")]
    return PermissionRequest(session="s", call_id="c", title="Run ls?", options=options)


async def test_a_permission_is_always_answered_and_the_clocks_stop_meanwhile() -> None:
    turn = _turn()
    paused: list[bool] = []

    async def allow(request: PermissionRequest) -> PermissionDecision:
        paused.append(turn.timers.parked)
        return PermissionDecision(option_id="y", policy="test")

    async def broken(request: PermissionRequest) -> PermissionDecision:
        raise RuntimeError("boom")

    async def slow(request: PermissionRequest) -> PermissionDecision:
        await trio.sleep_forever()
        raise AssertionError

    assert (await turn.decide_permission(allow, _ask())).option_id == "y" and paused == [True]
    assert not turn.timers.parked, "the clocks run again once answered"
    failed = await turn.decide_permission(broken, _ask())
    assert failed.option_id is None and "policy failed: boom" in failed.reason
    late = await turn.decide_permission(slow, _ask(), bound_s=0.05)
    assert late.option_id is None and "no answer within 0.05s" in late.reason


async def test_an_abort_answers_open_permissions_cancelled_at_once() -> None:
    turn = _turn()
    answers: list[PermissionDecision] = []

    async def slow(request: PermissionRequest) -> PermissionDecision:
        await trio.sleep_forever()
        raise AssertionError

    async def ask() -> None:
        answers.append(await turn.decide_permission(slow, _ask()))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask)
        await trio.testing.wait_all_tasks_blocked()
        turn.aborted = True
        turn.cancel_permissions()
    [answer] = answers
    assert answer.option_id is None and answer.reason == "turn aborted"
    assert (await turn.decide_permission(slow, _ask())).reason == "turn aborted", "after an abort nothing is asked"


async def test_driver_turns_start_supersede_reenter_and_forget() -> None:
    log = Lifecycle()
    ran: list[str] = []
    async with trio.open_nursery() as nursery:
        turns: DriverTurns[EngineTurn] = DriverTurns(nursery, log)

        async def task(turn: EngineTurn, tag: str) -> None:
            ran.append(tag)
            turn.park()

        first = _turn("s")
        handle = turns.start(first, task, "one")
        await trio.testing.wait_all_tasks_blocked()
        assert ran == ["one"] and turns.open == {handle.turn_id: first}
        assert turns.reentry() is handle, "a parked turn is re-entered"
        turns.supersede("s")
        assert first.handle.abort_requested.is_set(), "a new turn on the session aborts the parked one"
        turns.kick_idle()
        assert not first.timers.parked
        turns.done(first)
        assert turns.open == {} and turns.reentry() is None
