"""TurnHandle: the in-loop activity queue between an engine and the turn layer."""

from __future__ import annotations

import trio
import trio.testing

from agy_host.contract.events import (
    BridgeCallActivity,
    NoticeActivity,
    OutcomeActivity,
    TextActivity,
    ThoughtActivity,
)
from agy_host.engine.driver import MERGE_BELOW_CHARS, TurnHandle

OK = OutcomeActivity(status="ok", stop_reason="stop")


async def test_consecutive_text_and_thought_deltas_merge() -> None:
    h = TurnHandle()
    for d in ("a", "b", "c"):
        h.emit(TextActivity(delta=d))
    h.emit(ThoughtActivity(delta="x"))
    h.emit(ThoughtActivity(delta="y"))
    h.emit(TextActivity(delta="d"))
    h.emit(NoticeActivity(message="n"))
    h.emit(TextActivity(delta="e"))
    assert await h.next_batch() == [
        TextActivity(delta="abc"),
        ThoughtActivity(delta="xy"),
        TextActivity(delta="d"),
        NoticeActivity(message="n"),
        TextActivity(delta="e"),
    ]


async def test_merging_never_mutates_the_engines_objects() -> None:
    h = TurnHandle()
    first = TextActivity(delta="hel")
    h.emit(first)
    h.emit(TextActivity(delta="lo"))
    assert await h.next_batch() == [TextActivity(delta="hello")]
    assert first.delta == "hel"


async def test_merge_after_a_drain_starts_a_new_activity() -> None:
    h = TurnHandle()
    h.emit(TextActivity(delta="a"))
    assert await h.next_batch() == [TextActivity(delta="a")]
    h.emit(TextActivity(delta="b"))
    h.emit(TextActivity(delta="c"))
    assert await h.next_batch() == [TextActivity(delta="bc")]


async def test_a_long_stream_arrives_whole() -> None:
    h = TurnHandle()
    for i in range(50_000):
        h.emit(TextActivity(delta=str(i % 10)))
    h.finish(OK)
    [text, outcome] = await h.next_batch()
    assert isinstance(text, TextActivity)
    assert len(text.delta) == 50_000
    assert outcome is OK


async def test_consumer_waits_and_wakes_once_per_batch() -> None:
    h = TurnHandle()
    batches: list[list[object]] = []

    async def consume() -> None:
        while batch := await h.next_batch():
            batches.append(list(batch))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        await trio.testing.wait_all_tasks_blocked()
        assert batches == []
        h.emit(TextActivity(delta="a"))
        h.emit(NoticeActivity(message="n"))
        await trio.testing.wait_all_tasks_blocked()
        h.emit(TextActivity(delta="b"))
        h.finish(OK)
    assert batches == [[TextActivity(delta="a"), NoticeActivity(message="n")], [TextActivity(delta="b"), OK]]


async def test_finish_is_idempotent_and_closes_the_stream() -> None:
    h = TurnHandle()
    h.emit(TextActivity(delta="hi"))
    h.finish(OK)
    h.finish(OutcomeActivity(status="error", stop_reason="error", error="late"))
    h.emit(TextActivity(delta="after"))
    assert h.closed and h.settled.is_set()
    assert h.outcome is OK
    assert await h.next_batch() == [TextActivity(delta="hi"), OK]
    assert await h.next_batch() == []


async def test_push_external_parks_and_calls_on_park() -> None:
    parked: list[int] = []
    h = TurnHandle(on_park=lambda: parked.append(1))
    call = BridgeCallActivity(call_id="c1", name="read", args={"path": "a"})
    assert h.push_external(call) is True
    assert parked == [1]
    assert h.parks == 1
    assert await h.next_batch() == [call]
    h.finish(OK)
    assert h.push_external(BridgeCallActivity(call_id="c2", name="read")) is False
    assert parked == [1]
    assert h.parks == 1


async def test_abort_records_the_first_reason() -> None:
    h = TurnHandle()
    assert not h.abort_requested.is_set()
    h.abort("interrupted")
    h.abort("other")
    assert h.abort_requested.is_set()
    assert h.abort_reason == "interrupted"


async def test_async_for_keeps_the_rest_of_a_batch_for_the_next_loop() -> None:
    h = TurnHandle()
    h.emit(TextActivity(delta="before"))
    h.push_external(BridgeCallActivity(call_id="c1", name="t"))
    h.emit(NoticeActivity(message="queued behind the park"))
    seen = []
    async for activity in h:
        seen.append(activity)
        if isinstance(activity, BridgeCallActivity):
            break
    h.finish(OK)
    rest = [a async for a in h]
    assert seen == [TextActivity(delta="before"), BridgeCallActivity(call_id="c1", name="t")]
    assert rest == [NoticeActivity(message="queued behind the park"), OK]


async def test_turn_ids_are_unique() -> None:
    assert TurnHandle().turn_id != TurnHandle().turn_id


def test_the_conversation_is_told_as_soon_as_known_once_per_id() -> None:
    """Issue 28 item 1: the turn layer binds the session from this, before
    (and whether or not) the turn settles."""
    h = TurnHandle()
    heard: list[str] = []
    h.on_conversation(heard.append)
    h.conversation_known(None)
    h.conversation_known("c1")
    h.conversation_known("c1")
    h.conversation_known("c2")  # replaced: told again
    late: list[str] = []
    h.on_conversation(late.append)  # a listener after the fact hears the current one
    assert (heard, late, h.conversation_id) == (["c1", "c2"], ["c2"], "c2")


async def test_long_deltas_reach_the_consumer_as_the_engine_made_them() -> None:
    """A batched engine's deltas are not joined again: the turn layer keeps
    the very strings the engine keeps for its response, not a second copy."""
    h = TurnHandle()
    first, second = "a" * MERGE_BELOW_CHARS, "b" * MERGE_BELOW_CHARS
    h.emit(TextActivity(delta=first))
    h.emit(TextActivity(delta=second))
    h.emit(TextActivity(delta="c"))  # a small one does not merge into a long one
    h.emit(TextActivity(delta="d"))
    batch = await h.next_batch()
    assert [type(a) for a in batch] == [TextActivity] * 3
    assert batch[0].delta is first and batch[1].delta is second  # type: ignore[union-attr]
    assert batch[2] == TextActivity(delta="cd")


async def test_small_deltas_merge_until_a_long_one_arrives() -> None:
    h = TurnHandle()
    long = "x" * MERGE_BELOW_CHARS
    for d in ("a", "b", long, "c"):
        h.emit(TextActivity(delta=d))
    batch = await h.next_batch()
    assert [a.delta for a in batch] == ["ab", long, "c"]  # type: ignore[union-attr]
    assert batch[1].delta is long  # type: ignore[union-attr]
