"""Who holds the terminal, and who waits for it: one question at a time, in order.

Every question and permission prompt for the person takes a ticket here and
waits its turn, first come, first served. The queue is the *process's*, not
one trio run's: a program that opens two :class:`agy_host.Session` objects
under asyncio gets one trio guest run per session, and their prompts must
still never interleave on the one terminal. A waiter is woken through its own
run's trio token (``run_sync_soon`` is thread-safe and may be called from
any run), so tickets from different runs, or threads, queue together.

Each ticket carries who asks (``session 'a'``, ``session 'a', subagent 3f2c``):
the prompt that holds the terminal shows who else is waiting, so a person
answering one session's question knows another session is blocked on them.
A waiter that is cancelled (its turn aborted, its deadline passed) leaves the
queue; a ticket handed to a run that already ended passes to the next.

Whatever else draws on the terminal (the rich renderer's "waiting for the
agent" status) **watches** the queue: it is told, synchronously and before
the prompt writes its first byte, who takes the terminal, and told again
when the prompt is done. A status that redrew its line while a person typed
would erase what they type (issue 28 item 6); told first, it stops and says
who waits for whom instead.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

#: Told who holds the terminal for a prompt (the asker's name), then ``None``
#: when the prompt is done. Called in the asking thread; it must not block.
Watcher = Callable[[str | None], None]


@dataclass(eq=False)
class Ticket:
    """One asker's place in the queue."""

    asker: str
    wake: Callable[[], None] = field(repr=False)


class TerminalQueue:
    """A fair (FIFO) lock over the terminal that can say who is waiting."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._holder: Ticket | None = None
        self._waiting: deque[Ticket] = deque()
        self._watchers: list[Watcher] = []

    @property
    def held(self) -> bool:
        """A prompt holds the terminal now: nothing else may draw over it (the
        rich renderer's spinner waits)."""
        return self._holder is not None

    def waiting(self) -> list[str]:
        """Who waits for the terminal now, in order (not the holder)."""
        with self._mutex:
            return [ticket.asker for ticket in self._waiting]

    def watch(self, watcher: Watcher) -> Callable[[], None]:
        """Tell ``watcher`` when a prompt takes the terminal and when it is
        done; returns the call that stops telling it."""
        with self._mutex:
            self._watchers.append(watcher)

        def unwatch() -> None:
            with self._mutex, contextlib.suppress(ValueError):
                self._watchers.remove(watcher)

        return unwatch

    def _tell(self, asker: str | None) -> None:
        with self._mutex:
            watchers = list(self._watchers)
        for watcher in watchers:
            try:
                watcher(asker)
            except Exception:  # a watcher that cannot draw must never cost the person their prompt
                with self._mutex, contextlib.suppress(ValueError):
                    self._watchers.remove(watcher)

    @contextlib.asynccontextmanager
    async def turn(self, asker: str) -> AsyncIterator[Ticket]:
        """Hold the terminal for one prompt; wait (cancellably) until it is ours."""
        import trio

        granted = trio.Event()
        token = trio.lowlevel.current_trio_token()
        ticket = Ticket(asker, lambda: token.run_sync_soon(granted.set))
        with self._mutex:
            if self._holder is None:
                self._holder = ticket
                granted.set()
            else:
                self._waiting.append(ticket)
        told = False
        try:
            await granted.wait()
            # a waiter cancelled while its turn came (its request answered by
            # an "always" meanwhile, its turn aborted) leaves before drawing
            await trio.lowlevel.checkpoint_if_cancelled()
            self._tell(asker)
            told = True
            yield ticket
        finally:
            if told:
                self._tell(None)
            self._leave(ticket)

    def _leave(self, ticket: Ticket) -> None:
        import trio

        with self._mutex:
            if self._holder is not ticket:
                with contextlib.suppress(ValueError):
                    self._waiting.remove(ticket)  # cancelled while waiting
                return
            self._holder = None
            while self._waiting:
                following = self._waiting.popleft()
                try:
                    following.wake()
                except trio.RunFinishedError:
                    continue  # its program ended while it waited
                self._holder = following
                return


#: The process's one queue (there is one terminal).
QUEUE = TerminalQueue()


def asker(session: str, origin: str = "") -> str:
    """How an asker is named to the person: the session, and who in it asks."""
    from agy_host.contract.rendering import clip

    name = f"session {session!r}" if session else "the agent"
    return f"{name}, {clip(origin)}" if origin else name  # the agent names who asks


def waiting_note(waiting: list[str]) -> str:
    """A line telling the person who else waits for an answer, or ``""``."""
    if not waiting:
        return ""
    counts: dict[str, int] = {}
    for asker in waiting:
        counts[asker] = counts.get(asker, 0) + 1
    listed = ", ".join(f"{asker} ({n})" if n > 1 else asker for asker, n in counts.items())
    noun = "question" if len(waiting) == 1 else "questions"
    return f"  ({len(waiting)} more {noun} waiting: {listed})\n"


__all__ = ["QUEUE", "TerminalQueue", "Ticket", "Watcher", "asker", "waiting_note"]
