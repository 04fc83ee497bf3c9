"""The engine contract: a turn request, the handle of a running turn, and the
``TurnDriver`` protocol every engine implements.

A driver owns one agent (a process, a connection) and runs turns on it:

* :meth:`TurnDriver.run` starts a turn and returns its :class:`TurnHandle` at
  once; the work continues in the driver's nursery. Turns on one host session
  are serialized by the driver: a second ``run`` waits for the first turn to
  settle.
* A host tool call parks the turn (:meth:`TurnHandle.push_external` with a
  :class:`~agy_host.contract.events.BridgeCallActivity`). The turn layer stops reading,
  the host runs the tool, and :meth:`TurnDriver.reentry` hands back the *same*
  handle; :meth:`TurnDriver.kick_idle` unparks the timers. A parked turn never
  holds up anything but its own session.
* While the host itself is busy on the agent's behalf (a bridge request in
  flight, the bridge's first-connection start-up), :meth:`TurnHandle.hold`
  pauses the turn's timers without parking it: that wait is the host's, and
  must never be charged to the agent as silence.
* :meth:`TurnDriver.snapshot` feeds doctor; :meth:`TurnDriver.aclose` shuts the
  agent down.

The handle is a cheap in-loop queue, not a trio channel: engines call
:meth:`TurnHandle.emit` for every activity on their hot path, consecutive text
deltas are merged, and the consumer wakes once per scheduling round to drain
everything that arrived. This keeps a 200,000-chunk stream fast.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import msgspec
import trio

from agy_host.contract.events import (
    Activity,
    BridgeCallActivity,
    OutcomeActivity,
    TextActivity,
    ThoughtActivity,
)
from agy_host.contract.prompt import PromptBlock
from agy_host.engine.lifecycle import LifecycleEntry

if TYPE_CHECKING:
    from agy_host.engine.timers import TurnTimers

_turn_ids = itertools.count(1)


class TurnRequest(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Everything an engine needs to run one turn."""

    #: Host session name (the store key is derived from it per engine).
    session: str
    prompt: list[PromptBlock]
    cwd: str
    #: The agent conversation to continue (ACP session id, agy conversation id).
    conversation_id: str | None = None
    #: ``--resume``: ``conversation_id`` must be continued. An engine that
    #: cannot continue it fails the turn with error kind ``no_session``
    #: (exit 4) and the agent's own reason; without it, the engine starts a
    #: new conversation and says so with a ``conversation-replaced`` notice.
    resume: bool = False
    model: str | None = None
    effort: str | None = None
    mode: str | None = None
    skip_permissions: bool = False
    #: Overall deadline and inactivity budget; 0 disables one.
    timeout_s: float = 600.0
    inactivity_s: float = 300.0
    #: More workspace roots beyond ``cwd`` (absolute; ``--add-dir``). An
    #: engine whose agent cannot take them says so with a notice.
    additional_directories: list[str] = msgspec.field(default_factory=list)


class DriverSnapshot(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What doctor shows about a driver. ``extra`` holds engine-specific rows."""

    engine: str
    state: str
    pid: int | None = None
    conversation_id: str | None = None
    stats: dict[str, int] = msgspec.field(default_factory=dict)
    last_recycle_reason: str | None = None
    lifecycle: list[LifecycleEntry] = msgspec.field(default_factory=list)
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


#: A text or thought delta this long is never merged into the one before
#: it (:meth:`TurnHandle.emit`).
MERGE_BELOW_CHARS = 4096


class TurnHandle:
    """The stream of :class:`~agy_host.contract.events.Activity` of one running turn.

    Producer side (the engine): :meth:`emit`, :meth:`finish`,
    :meth:`conversation_known`.
    Consumer side (the turn layer): ``async for activity in handle`` or
    :meth:`next_batch`; :meth:`abort` to request an abort;
    :meth:`on_conversation` to hear the conversation id early.
    Bridge side: :meth:`push_external` to park the turn on a host tool call.
    """

    def __init__(self, *, on_park: Callable[[], None] | None = None, timers: TurnTimers | None = None) -> None:
        self.turn_id = next(_turn_ids)
        self._queue: collections.deque[Activity] = collections.deque()
        #: Deltas merged into the queue's last (text or thought) activity, joined
        #: once when the consumer drains: repeated ``str +=`` on a long tail
        #: would copy the whole answer on every chunk.
        self._tail: list[str] | None = None
        self._pending: collections.deque[Activity] = collections.deque()
        self._wakeup = trio.Event()
        self._closed = False
        self._on_park = on_park
        #: The turn's clocks, for :meth:`hold`; an engine that passes none
        #: simply has its timers run through host-side waits.
        self._timers = timers
        self.outcome: OutcomeActivity | None = None
        self.abort_requested = trio.Event()
        self.abort_reason = ""
        self.settled = trio.Event()
        self.parks = 0
        #: The agent conversation the turn runs in, once the engine knows it
        #: (:meth:`conversation_known`); ``None`` before.
        self.conversation_id: str | None = None
        self._on_conversation: list[Callable[[str], None]] = []

    # -- producer --------------------------------------------------------------

    def emit(self, activity: Activity) -> None:
        """Queue one activity. Consecutive small text (or thought) deltas merge.

        A delta of :data:`MERGE_BELOW_CHARS` or more is queued as it is, and
        nothing merges into one: an engine that batches a pipe read into one
        delta (a flood's 64 KiB) already gives the consumer few activities,
        and joining two of them would copy the text the engine holds as the
        turn's response, so the turn layer and the engine would each hold a
        copy of a long answer (measured: two thirds of a 12 MB one).

        The engine's activity objects are never mutated: the first merge
        replaces the queued one with a copy the handle owns.
        """
        if self._closed:
            return
        q = self._queue
        if (
            q
            and isinstance(activity, (TextActivity, ThoughtActivity))
            and type(q[-1]) is type(activity)
            and len(activity.delta) < MERGE_BELOW_CHARS
            and (self._tail is not None or len(q[-1].delta) < MERGE_BELOW_CHARS)
        ):
            if self._tail is None:
                last = q[-1]
                assert isinstance(last, (TextActivity, ThoughtActivity))
                q[-1] = type(last)(delta=last.delta)
                self._tail = [last.delta]
            self._tail.append(activity.delta)
            return
        self._seal_tail()
        q.append(activity)
        if not self._wakeup.is_set():
            self._wakeup.set()

    def _seal_tail(self) -> None:
        if self._tail is not None:
            last = self._queue[-1]
            assert isinstance(last, (TextActivity, ThoughtActivity))
            last.delta = "".join(self._tail)
            self._tail = None

    def finish(self, outcome: OutcomeActivity) -> None:
        """Settle the turn: the outcome is the last activity. Idempotent."""
        if self._closed:
            return
        self.emit(outcome)
        self.outcome = outcome
        self._closed = True
        self.settled.set()

    @property
    def closed(self) -> bool:
        return self._closed

    def conversation_known(self, conversation_id: str | None) -> None:
        """The engine learned the turn's conversation (a new session
        answered, a conversation opened or continued): the host binds the
        session to it now, not only when the turn settles, so a turn that is
        never settled (the user stopped waiting for an agent that would not
        stop) still leaves its session bound. Each new id is told once."""
        if not conversation_id or conversation_id == self.conversation_id:
            return
        self.conversation_id = conversation_id
        for callback in list(self._on_conversation):
            callback(conversation_id)

    def on_conversation(self, callback: Callable[[str], None]) -> None:
        """Call ``callback`` with the turn's conversation id as soon as it is
        known (at once when it already is), and again if it changes."""
        self._on_conversation.append(callback)
        if self.conversation_id is not None:
            callback(self.conversation_id)

    # -- bridge ----------------------------------------------------------------

    def push_external(self, activity: BridgeCallActivity) -> bool:
        """Park the turn on a host tool call (timers pause) and tell the consumer.

        Returns ``False`` (and parks nothing) when the turn has already
        settled, so the bridge can fail the call at once instead of waiting
        for a result that no turn will ask for.
        """
        if self._closed:
            return False
        self.parks += 1
        if self._on_park is not None:
            self._on_park()
        self.emit(activity)
        return True

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Stop the turn's inactivity clock while the host works for the agent
        (the agent is waiting on the host, not silent). The overall deadline
        keeps running: a request that never ends cannot keep the turn alive
        past its cap. Nests with parks and other holds."""
        timers = self._timers
        if timers is None or self._closed:
            yield
            return
        timers.hold()
        try:
            yield
        finally:
            timers.release()

    def remaining_s(self) -> float:
        """Seconds left of the turn's overall deadline (``math.inf`` without
        one). Frozen while a park pauses it, and running on after the turn
        settled: a host tool that outlived its park is bounded by it."""
        return self._timers.remaining() if self._timers is not None else math.inf

    # -- consumer --------------------------------------------------------------

    def abort(self, reason: str = "user") -> None:
        """Ask the engine to abort the turn; the outcome will say ``aborted``."""
        if not self.abort_requested.is_set():
            self.abort_reason = reason
            self.abort_requested.set()

    async def next_batch(self) -> list[Activity]:
        """Everything queued so far (waiting if nothing is); ``[]`` once the
        outcome was delivered."""
        if self._pending:  # left over by ``async for`` that stopped mid-batch
            batch = list(self._pending)
            self._pending.clear()
            return batch
        while not self._queue:
            if self._closed:
                return []
            await self._wakeup.wait()
            self._wakeup = trio.Event()
        self._seal_tail()
        batch = list(self._queue)
        self._queue.clear()
        return batch

    def __aiter__(self) -> TurnHandle:
        # Iterating again (after a park) continues where the last loop stopped:
        # activities of a half-consumed batch are kept, not dropped.
        return self

    async def __anext__(self) -> Activity:
        pending = self._pending
        if not pending:
            batch = await self.next_batch()
            if not batch:
                raise StopAsyncIteration
            pending.extend(batch)
        return pending.popleft()


@runtime_checkable
class TurnDriver(Protocol):
    """What an engine's driver implements. See the module docstring."""

    engine_name: str

    async def run(self, request: TurnRequest) -> TurnHandle:
        """Start a turn; return its handle at once. Waits only for an earlier
        turn on the same session to settle (serialization)."""
        ...

    def reentry(self) -> TurnHandle | None:
        """The handle of the parked turn, to continue reading after a host tool
        call; ``None`` when no turn is parked."""
        ...

    def kick_idle(self) -> None:
        """One park resolved: re-arm inactivity and resume the deadline with
        the remaining budget once no park is left."""
        ...

    def snapshot(self) -> DriverSnapshot: ...

    async def aclose(self) -> None:
        """Shut the agent down (settling any open turn as an error)."""
        ...


__all__ = ["MERGE_BELOW_CHARS", "DriverSnapshot", "TurnDriver", "TurnHandle", "TurnRequest"]
