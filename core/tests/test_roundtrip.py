"""The round-trip state machine on its own: parks, TTLs, escalation and
polling, tombstones and late results, turn end and abort. A test turn is a
real :class:`TurnHandle`; the clock is trio's autojump clock, so the 480 s
and 30 min budgets are exercised with small injected values in no time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing

from agy_host.contract.events import BridgeCallActivity, HostEvent, Notice, OutcomeActivity
from agy_host.contract.tools import ToolResult
from agy_host.engine.driver import TurnHandle
from agy_host.service.roundtrip_text import POLL_TOOL, late_result_prompt
from agy_host.service.roundtrips import (
    ABORTED,
    DISCONNECTED,
    NO_ACTIVE_TURN,
    TURN_ENDED,
    RoundTrips,
    RoundTripSettings,
    open_roundtrips,
)

FAST = RoundTripSettings(park_ttl_s=5.0, escalate_after_s=0.0, escalated_ttl_s=60.0)
ESCALATING = RoundTripSettings(park_ttl_s=50.0, escalate_after_s=2.0, escalated_ttl_s=100.0)


class Target:
    """The turn layer as the round-trips see it."""

    def __init__(self) -> None:
        self.handle: TurnHandle | None = TurnHandle()
        self.unparks = 0
        self.events: list[HostEvent] = []

    def active_handle(self) -> TurnHandle | None:
        return self.handle if self.handle is not None and not self.handle.closed else None

    def unpark(self) -> None:
        self.unparks += 1

    def emit(self, event: HostEvent) -> None:
        self.events.append(event)

    def notices(self) -> list[str]:
        return [e.message for e in self.events if isinstance(e, Notice)]

    async def next_call(self) -> BridgeCallActivity:
        assert self.handle is not None
        async for activity in self.handle:
            if isinstance(activity, BridgeCallActivity):
                return activity
        raise AssertionError("the turn ended without a bridge call")


@pytest.fixture
async def rt_target(request: pytest.FixtureRequest) -> AsyncIterator[tuple[RoundTrips, Target]]:
    settings = getattr(request, "param", FAST)
    async with open_roundtrips(settings) as rt:
        target = Target()
        rt.attach(target)
        yield rt, target


async def call_in_background(
    nursery: trio.Nursery, rt: RoundTrips, name: str, args: dict[str, Any], **kw: Any
) -> dict[str, ToolResult]:
    """Start ``rt.call`` like the bridge does; the result lands in the box."""
    box: dict[str, ToolResult] = {}

    async def run() -> None:
        box["result"] = await rt.call(name, args, **kw)

    nursery.start_soon(run)
    await trio.testing.wait_all_tasks_blocked()
    return box


async def test_no_active_turn_fails_closed(rt_target: tuple[RoundTrips, Target]) -> None:
    rt, target = rt_target
    target.handle = None
    result = await rt.call("host_echo", {"x": 1})
    assert result.is_error and NO_ACTIVE_TURN in result.text
    assert rt.pending_ids == [] and rt.stats["refused"] == 1


async def test_a_settled_turn_is_refused_too(rt_target: tuple[RoundTrips, Target]) -> None:
    rt, target = rt_target
    assert target.handle is not None
    target.handle.finish(OutcomeActivity(status="ok", stop_reason="stop"))
    result = await rt.call("host_echo", {})
    assert result.is_error and NO_ACTIVE_TURN in result.text


async def test_a_call_parks_and_the_result_answers_it(rt_target: tuple[RoundTrips, Target]) -> None:
    rt, target = rt_target
    async with trio.open_nursery() as nursery:
        box = await call_in_background(nursery, rt, "host_echo", {"x": 1})
        call = await target.next_call()
        assert (call.name, call.args) == ("host_echo", {"x": 1})
        assert target.handle is not None and target.handle.parks == 1
        assert rt.pending_ids == [call.call_id] and rt.owns(call.call_id)
        assert rt.deliver_tool_result(call.call_id, ToolResult(text="pong", images=[("AAAA", "image/png")]))
    assert box["result"] == ToolResult(text="pong", images=[("AAAA", "image/png")])
    assert target.unparks == 1
    assert rt.pending_ids == [] and rt.tombstone_ids == []
    assert not rt.deliver_tool_result(call.call_id, ToolResult(text="again"))  # a second result is unknown
    assert target.unparks == 1


async def test_the_park_ttl_fails_the_call_and_a_late_result_is_kept(
    rt_target: tuple[RoundTrips, Target], autojump_clock: trio.testing.MockClock
) -> None:
    rt, target = rt_target
    start = trio.current_time()
    result = await rt.call("slow_tool", {})
    assert trio.current_time() - start == pytest.approx(5.0)
    assert result.is_error and "host tool round-trip timed out after 5s" in result.text
    [call_id] = rt.tombstone_ids
    assert target.unparks == 1
    assert any("timed out" in n for n in target.notices())
    # the host tool finishes later: its result is kept for the next fresh turn
    assert rt.deliver_tool_result(call_id, ToolResult(text="finally"))
    assert rt.tombstone_ids == [] and rt.has_late_results
    [late] = rt.take_late_results()
    assert (late.name, late.result.text) == ("slow_tool", "finally")
    assert "timed out after 5s" in late.reason
    assert rt.take_late_results() == []  # consumed once
    assert target.unparks == 1  # the late result does not unpark anything
    prompt = late_result_prompt([late], "and now?")
    assert prompt.startswith("[Late tool delivery]") and prompt.endswith("and now?")
    assert "Result:\nfinally" in prompt


async def test_a_resolved_park_leaves_no_tombstone(rt_target: tuple[RoundTrips, Target]) -> None:
    rt, target = rt_target
    async with trio.open_nursery() as nursery:
        await call_in_background(nursery, rt, "t", {})
        call = await target.next_call()
        rt.deliver_tool_result(call.call_id, ToolResult(text="ok"))
    assert rt.tombstone_ids == [] and not rt.has_late_results


async def test_a_disconnect_aborts_the_park(rt_target: tuple[RoundTrips, Target]) -> None:
    rt, target = rt_target
    gone = trio.Event()
    async with trio.open_nursery() as nursery:
        box = await call_in_background(nursery, rt, "t", {}, disconnected=gone)
        gone.set()
    assert box["result"].is_error and DISCONNECTED in box["result"].text
    assert len(rt.tombstone_ids) == 1 and target.unparks == 1


@pytest.mark.parametrize("rt_target", [ESCALATING], indirect=True)
async def test_a_slow_call_is_acknowledged_then_polled(
    rt_target: tuple[RoundTrips, Target], autojump_clock: trio.testing.MockClock
) -> None:
    rt, target = rt_target
    start = trio.current_time()
    ack = await rt.call("review", {"pr": 7})
    assert trio.current_time() - start == pytest.approx(2.0)
    assert not ack.is_error and ack.text.startswith("STILL RUNNING") and POLL_TOOL in ack.text
    [call_id] = rt.pending_ids
    assert call_id in ack.text and "review" in ack.text
    assert rt.poll(call_id).text.startswith("STILL RUNNING")
    assert target.unparks == 0  # the turn stays parked while the tool runs
    await trio.sleep(80)  # past the plain TTL: an escalated call lives on its own TTL
    assert rt.pending_ids == [call_id]
    assert rt.deliver_tool_result(call_id, ToolResult(text="LGTM", images=[("BBBB", "image/png")]))
    done = rt.poll(call_id)
    assert (done.text, done.images, done.is_error) == ("LGTM", [("BBBB", "image/png")], False)
    assert target.unparks == 1
    unknown = rt.poll("no-such-call")
    assert unknown.is_error and "no escalated host tool call" in unknown.text


@pytest.mark.parametrize("rt_target", [ESCALATING], indirect=True)
async def test_an_escalated_call_times_out_after_its_own_ttl(
    rt_target: tuple[RoundTrips, Target], autojump_clock: trio.testing.MockClock
) -> None:
    rt, target = rt_target
    await rt.call("review", {})
    [call_id] = rt.pending_ids
    await trio.sleep(101)  # escalated at 2 s, so its 100 s TTL ended at 102 s
    failed = rt.poll(call_id)
    assert failed.is_error and "escalated host tool call timed out after 100s" in failed.text
    assert rt.tombstone_ids == [call_id] and target.unparks == 1
    assert rt.deliver_tool_result(call_id, ToolResult(text="too late"))
    [late] = rt.take_late_results()
    assert late.result.text == "too late"


@pytest.mark.parametrize("rt_target", [ESCALATING], indirect=True)
async def test_turn_end_fails_open_parks_and_spares_escalated_ones(
    rt_target: tuple[RoundTrips, Target], autojump_clock: trio.testing.MockClock
) -> None:
    rt, target = rt_target
    await rt.call("slow", {})  # escalated at 2 s
    [escalated] = rt.pending_ids
    async with trio.open_nursery() as nursery:
        box = await call_in_background(nursery, rt, "fast", {})
        assert target.handle is not None
        target.handle.finish(OutcomeActivity(status="ok", stop_reason="stop"))
    assert box["result"].is_error and TURN_ENDED in box["result"].text
    assert rt.pending_ids == [escalated]
    # the escalated call still resolves; its turn is gone, so it becomes a late result
    assert rt.deliver_tool_result(escalated, ToolResult(text="slow result"))
    [late] = rt.take_late_results()
    assert (late.name, late.result.text) == ("slow", "slow result")


async def test_abort_fails_the_park_without_waiting_for_a_disconnect(rt_target: tuple[RoundTrips, Target]) -> None:
    rt, target = rt_target
    async with trio.open_nursery() as nursery:
        box = await call_in_background(nursery, rt, "t", {})
        assert target.handle is not None
        target.handle.abort("user")
    assert box["result"].is_error and ABORTED in box["result"].text
    assert rt.pending_ids == []
    assert not any(ABORTED in n for n in target.notices())  # routine: no warning


@pytest.mark.parametrize("rt_target", [ESCALATING], indirect=True)
async def test_an_unfetched_escalated_result_is_delivered_late_at_turn_end(
    rt_target: tuple[RoundTrips, Target], autojump_clock: trio.testing.MockClock
) -> None:
    rt, target = rt_target
    await rt.call("slow", {})
    [call_id] = rt.pending_ids
    rt.deliver_tool_result(call_id, ToolResult(text="done but never polled"))
    assert not rt.has_late_results  # the agent may still poll for it
    assert target.handle is not None
    rt.turn_ended(target.handle)
    [late] = rt.take_late_results()
    assert late.result.text == "done but never polled"


@pytest.mark.parametrize("rt_target", [ESCALATING], indirect=True)
async def test_the_registry_never_evicts_running_calls(
    rt_target: tuple[RoundTrips, Target], autojump_clock: trio.testing.MockClock
) -> None:
    rt, _ = rt_target
    async with trio.open_nursery() as nursery:
        for i in range(70):
            nursery.start_soon(rt.call, f"tool{i}", {})
    ids = rt.pending_ids
    assert len(ids) == 70
    assert all(rt.escalation(i) is not None for i in ids)  # 70 > the soft cap of 64: all kept
    settled, running = ids[:10], ids[10:]
    for call_id in settled:
        rt.deliver_tool_result(call_id, ToolResult(text="x"))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(rt.call, "one-more", {})
    # a new escalation trims back to the cap, evicting only settled entries
    assert all(rt.escalation(i) is not None for i in running)
    assert sum(rt.escalation(i) is not None for i in settled) == 64 - len(running) - 1


async def test_tombstones_are_capped_oldest_first(
    rt_target: tuple[RoundTrips, Target], autojump_clock: trio.testing.MockClock
) -> None:
    rt, _ = rt_target
    async with trio.open_nursery() as nursery:
        for i in range(70):
            nursery.start_soon(rt.call, f"t{i}", {})
    tombs = rt.tombstone_ids
    assert len(tombs) == 64
    assert not rt.deliver_tool_result("call-1-unknown", ToolResult(text="x"))


async def test_leaving_answers_every_waiting_call() -> None:
    box: dict[str, ToolResult] = {}
    async with trio.open_nursery() as outer:
        async with open_roundtrips(FAST) as rt:
            target = Target()
            rt.attach(target)

            async def agent() -> None:
                box["r"] = await rt.call("t", {})

            outer.start_soon(agent)
            await trio.testing.wait_all_tasks_blocked()
    assert box["r"].is_error and "shutting down" in box["r"].text
    assert target.unparks == 0  # the driver is going away too: nothing to unpark


async def test_holding_stops_inactivity_keeps_the_deadline_and_nests_with_parks(
    rt_target: tuple[RoundTrips, Target], autojump_clock: trio.testing.MockClock
) -> None:
    from agy_host.engine.timers import TurnTimers

    rt, target = rt_target
    timers = TurnTimers(overall_s=100, inactivity_s=2)
    target.handle = TurnHandle(on_park=timers.pause, timers=timers)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(timers.watch)
        with timers.scope:
            timers.arm()
            with rt.holding():  # the bridge works for the agent for 10 s
                assert not timers.parked
                await trio.sleep(10)
            assert timers.fired is None, "a host-side wait is not the agent's silence"
            assert timers.remaining() == pytest.approx(90), "the overall deadline keeps running"
            with rt.holding():
                timers.pause()  # a park inside the hold
            assert timers.parked, "the park outlives the hold"
            await trio.sleep(10)
            assert timers.fired is None and timers.remaining() == pytest.approx(90), "a park pauses both"
            timers.resume()
            await trio.sleep(10)
        timers.stop()
    assert timers.expired() == "inactivity", "after the hold the clocks run again"


async def test_holding_without_a_turn_or_timers_is_a_no_op(rt_target: tuple[RoundTrips, Target]) -> None:
    rt, target = rt_target
    target.handle = None
    with rt.holding():
        pass
    target.handle = TurnHandle()  # an engine that gave the handle no timers
    with rt.holding():
        pass
