"""The terminal's queue: one prompt at a time, first come first served,
across trio runs, telling the person who waits."""

from __future__ import annotations

import threading

import trio
import trio.testing

from agy_host.service.terminal_queue import TerminalQueue, asker, waiting_note


async def test_prompts_take_turns_in_order_and_see_who_waits() -> None:
    queue = TerminalQueue()
    order: list[str] = []
    seen: dict[str, list[str]] = {}

    async def prompt(who: str, started: trio.Event | None = None) -> None:
        async with queue.turn(who):
            if started is not None:
                started.set()
            order.append(who)
            await trio.sleep(0.05)
            seen[who] = queue.waiting()

    async with trio.open_nursery() as nursery:
        first = trio.Event()
        nursery.start_soon(prompt, "session 'a'", first)
        await first.wait()
        for who in ("session 'b'", "session 'c'"):
            nursery.start_soon(prompt, who)
            await trio.testing.wait_all_tasks_blocked()
    assert order == ["session 'a'", "session 'b'", "session 'c'"]
    assert seen["session 'a'"] == ["session 'b'", "session 'c'"]
    assert seen["session 'b'"] == ["session 'c'"] and seen["session 'c'"] == []


async def test_a_cancelled_waiter_leaves_the_queue() -> None:
    queue = TerminalQueue()
    async with queue.turn("session 'a'"):
        with trio.move_on_after(0.05):
            async with queue.turn("session 'b'"):
                raise AssertionError("b got the terminal while a held it")
        assert queue.waiting() == []
    async with queue.turn("session 'c'"):  # free again
        pass


def test_waiters_in_another_trio_run_are_woken() -> None:
    """Two ``Session`` objects under asyncio are two trio guest runs: their
    prompts must still queue together (here: two runs in two threads)."""
    queue = TerminalQueue()
    held = threading.Event()
    release = threading.Event()
    order: list[str] = []

    def first() -> None:
        async def main() -> None:
            async with queue.turn("session 'a'"):
                held.set()
                await trio.to_thread.run_sync(release.wait)
                order.append("a")

        trio.run(main)

    def second() -> None:
        async def main() -> None:
            async with queue.turn("session 'b'"):
                order.append("b")

        trio.run(main)

    a = threading.Thread(target=first)
    a.start()
    assert held.wait(10)
    b = threading.Thread(target=second)
    b.start()
    for _ in range(200):
        if queue.waiting():
            break
        threading.Event().wait(0.01)
    assert queue.waiting() == ["session 'b'"]
    release.set()
    a.join(10)
    b.join(10)
    assert order == ["a", "b"] and not a.is_alive() and not b.is_alive()


def test_the_note_names_who_waits() -> None:
    assert waiting_note([]) == ""
    note = waiting_note([asker("a"), asker("b", "subagent 3f2c"), asker("a")])
    assert note == "  (3 more questions waiting: session 'a' (2), session 'b', subagent 3f2c)\n"
    assert waiting_note([asker("")]) == "  (1 more question waiting: the agent)\n"


async def test_watchers_are_told_who_holds_the_terminal_before_the_prompt_draws() -> None:
    """What else draws on the terminal (the rich renderer's spinner) is told
    when a prompt takes it and when it is done; a watcher that fails is
    dropped and never costs the person their prompt (issue 28 item 6)."""
    queue = TerminalQueue()
    told: list[str | None] = []

    def broken(_asker: str | None) -> None:
        raise RuntimeError("cannot draw")

    unwatch = queue.watch(told.append)
    queue.watch(broken)
    async with queue.turn("session 'a'"):
        assert told == ["session 'a'"], "told before the prompt's first byte"
        told.append("drawn")
    assert told == ["session 'a'", "drawn", None]
    unwatch()
    async with queue.turn("session 'b'"):
        pass
    assert told == ["session 'a'", "drawn", None], "an unwatched watcher is told nothing"
