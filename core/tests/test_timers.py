"""Turn timers under trio's MockClock (autojump): the deadline and inactivity
fire at exact virtual instants, parks freeze the remaining budget, and no
resume ever hands out a fresh cap."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
import trio
import trio.testing

from agy_host.engine.timers import TurnTimers, minutes


async def _run_turn(timers: TurnTimers, body: Callable[[TurnTimers], Awaitable[None]]) -> float:
    """Run ``body`` as an engine would (watcher + scope); return the virtual
    time at which the scope ended, relative to the start."""
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(timers.watch)
        with timers.scope:
            timers.arm()
            await body(timers)
        timers.stop()
    return trio.current_time() - start


async def _forever(_t: TurnTimers) -> None:
    await trio.sleep_forever()


async def test_deadline_fires_at_the_overall_budget(autojump_clock: trio.testing.MockClock) -> None:
    timers = TurnTimers(overall_s=600, inactivity_s=0)
    took = await _run_turn(timers, _forever)
    assert took == pytest.approx(600)
    assert timers.expired() == "deadline"


async def test_inactivity_fires_after_the_last_output(autojump_clock: trio.testing.MockClock) -> None:
    async def chatty_then_silent(t: TurnTimers) -> None:
        for _ in range(3):
            await trio.sleep(4)
            t.touch()
        await trio.sleep_forever()

    timers = TurnTimers(overall_s=0, inactivity_s=5)
    took = await _run_turn(timers, chatty_then_silent)
    # touch() is a flag the watcher samples every 1/8 of the budget
    assert 12 + 5 <= took <= 12 + 5 * 9 / 8
    assert timers.expired() == "inactivity"


async def test_output_keeps_inactivity_away_but_not_the_deadline(autojump_clock: trio.testing.MockClock) -> None:
    async def always_talking(t: TurnTimers) -> None:
        while True:
            await trio.sleep(1)
            t.touch()

    timers = TurnTimers(overall_s=30, inactivity_s=5)
    took = await _run_turn(timers, always_talking)
    assert took == pytest.approx(30)
    assert timers.expired() == "deadline"


async def test_a_hold_stops_inactivity_but_not_the_deadline(autojump_clock: trio.testing.MockClock) -> None:
    # The bridge holds the clock while it serves the agent: a request that
    # never ends must still meet the turn's overall cap.
    async def served_forever(t: TurnTimers) -> None:
        t.hold()
        await trio.sleep_forever()

    timers = TurnTimers(overall_s=60, inactivity_s=5)
    took = await _run_turn(timers, served_forever)
    assert took == pytest.approx(60)
    assert timers.expired() == "deadline"


async def test_silence_is_counted_from_the_last_release(autojump_clock: trio.testing.MockClock) -> None:
    async def held_twice_then_silent(t: TurnTimers) -> None:
        t.hold()
        t.hold()  # nested: two requests in flight
        await trio.sleep(20)
        t.release()
        await trio.sleep(20)  # still held by the other one
        t.release()
        t.release()  # an extra release is a no-op
        await trio.sleep_forever()

    timers = TurnTimers(overall_s=0, inactivity_s=5)
    took = await _run_turn(timers, held_twice_then_silent)
    assert 40 + 5 <= took <= 40 + 5 * 9 / 8
    assert timers.expired() == "inactivity"


async def test_pause_keeps_the_remaining_budget(autojump_clock: trio.testing.MockClock) -> None:
    seen: dict[str, float] = {}

    async def park_for_long(t: TurnTimers) -> None:
        await trio.sleep(4)
        t.pause()
        seen["at_pause"] = t.remaining()
        await trio.sleep(1000)  # a slow human: neither timer may fire
        seen["after_park"] = t.remaining()
        assert t.parked
        t.resume()
        await trio.sleep_forever()

    timers = TurnTimers(overall_s=10, inactivity_s=5)
    took = await _run_turn(timers, park_for_long)
    assert seen == {"at_pause": pytest.approx(6), "after_park": pytest.approx(6)}
    # Resumed at 1004 with 6 s left; inactivity (5 s from resume) fires first.
    assert took == pytest.approx(1004 + 5)
    assert timers.expired() == "inactivity"


async def test_resumed_deadline_uses_what_was_left(autojump_clock: trio.testing.MockClock) -> None:
    async def park(t: TurnTimers) -> None:
        await trio.sleep(9)
        t.pause()
        await trio.sleep(11)
        t.resume()
        await trio.sleep_forever()

    timers = TurnTimers(overall_s=10, inactivity_s=0)
    took = await _run_turn(timers, park)
    assert took == pytest.approx(21)  # never 20 + a fresh 10
    assert timers.expired() == "deadline"


async def test_nested_parks_resume_only_when_the_last_one_ends(autojump_clock: trio.testing.MockClock) -> None:
    async def two_parks(t: TurnTimers) -> None:
        await trio.sleep(2)
        t.pause()
        await trio.sleep(1)
        t.pause()
        assert t.parks == 2
        await trio.sleep(47)
        t.resume()  # one park left: still frozen
        assert t.parked
        assert t.remaining() == pytest.approx(8)
        await trio.sleep(10)
        t.resume()
        await trio.sleep_forever()

    timers = TurnTimers(overall_s=10, inactivity_s=0)
    took = await _run_turn(timers, two_parks)
    assert took == pytest.approx(60 + 8)
    assert timers.expired() == "deadline"


async def test_park_before_arm_is_paused_from_birth(autojump_clock: trio.testing.MockClock) -> None:
    timers = TurnTimers(overall_s=10, inactivity_s=3)
    timers.pause()  # a bridge call during setup, before the engine armed
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(timers.watch)
        with timers.scope:
            timers.arm()
            await trio.sleep(500)
            assert timers.remaining() == pytest.approx(10)
            timers.resume()
            await trio.sleep_forever()
        timers.stop()
    assert trio.current_time() - start == pytest.approx(503)
    assert timers.expired() == "inactivity"


async def test_arming_twice_does_not_reset_the_deadline(autojump_clock: trio.testing.MockClock) -> None:
    async def rearm(t: TurnTimers) -> None:
        await trio.sleep(6)
        t.arm()
        await trio.sleep_forever()

    timers = TurnTimers(overall_s=10, inactivity_s=0)
    assert await _run_turn(timers, rearm) == pytest.approx(10)


async def test_extra_resume_is_a_no_op(autojump_clock: trio.testing.MockClock) -> None:
    async def stray_resume(t: TurnTimers) -> None:
        await trio.sleep(3)
        t.resume()
        assert t.parks == 0
        await trio.sleep_forever()

    timers = TurnTimers(overall_s=10, inactivity_s=0)
    assert await _run_turn(timers, stray_resume) == pytest.approx(10)


async def test_disabled_timers_never_fire(autojump_clock: trio.testing.MockClock) -> None:
    timers = TurnTimers(overall_s=0, inactivity_s=0)

    async def long_turn(_t: TurnTimers) -> None:
        await trio.sleep(10_000)

    assert await _run_turn(timers, long_turn) == pytest.approx(10_000)
    assert timers.expired() is None
    assert not timers.scope.cancelled_caught


async def test_a_turn_that_finishes_in_time_reports_nothing(autojump_clock: trio.testing.MockClock) -> None:
    timers = TurnTimers(overall_s=10, inactivity_s=5)

    async def quick(_t: TurnTimers) -> None:
        await trio.sleep(1)

    assert await _run_turn(timers, quick) == pytest.approx(1)
    assert timers.expired() is None


async def test_stop_ends_the_watcher(autojump_clock: trio.testing.MockClock) -> None:
    timers = TurnTimers(overall_s=10, inactivity_s=5)
    with trio.fail_after(1):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(timers.watch)
            await trio.sleep(0)
            timers.stop()


@pytest.mark.parametrize(("seconds", "text"), [(600, "10m"), (90, "1.5m"), (30, "30s"), (0.5, "0.5s")])
def test_minutes(seconds: float, text: str) -> None:
    assert minutes(seconds) == text
