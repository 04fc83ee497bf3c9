"""Tool round-trips: an agent's host tool call parks its turn until the host answers.

The bridge (a plugin serving MCP over loopback HTTP) receives ``tools/call``
and awaits :meth:`RoundTrips.call`. That call parks the active turn
(:meth:`~agy_host.engine.driver.TurnHandle.push_external`: inactivity suspended, the
deadline paused with its remaining budget), so the turn layer stops with a
``tool_use`` carrying the real tool name and arguments. The host runs the tool
and hands the result to :meth:`RoundTrips.deliver_tool_result`, which answers
the waiting HTTP request and unparks the turn; the turn layer reads on in the
*same* agent turn.

The state lives here, in one object the command run owns, rather than in the
bridge: the turn layer, the host's tool loop and the bridge all talk to it,
and it outlives any single HTTP request:

* **pending parks**, each with a TTL (``bridge.park_ttl_seconds``, 480 s);
* **escalation**: a call still running after ``bridge.escalate_after_seconds``
  (20 s) is answered "STILL RUNNING, poll with callId X" at once, because the
  agent's MCP client drops a ``tools/call`` after about 180 s; the park lives
  on with the escalated TTL (30 min) and the poll tool reads the **registry**
  (soft cap 64: only settled entries are evicted, running ones never);
* **tombstones** of parks that died (TTL, disconnect, abort, turn end; at most
  64): a result that arrives later becomes a **late result**, delivered as a
  prompt on the next fresh turn;
* **the tools themselves** (:meth:`RoundTrips.run_tool`,
  :mod:`agy_host.service.tool_runs`): a tool whose park ends first is no
  longer waited for; the turn reads the agent's reply, and the tool's result
  comes later as a late result.

Fail closed: with no active turn a call is refused with a clear error. A turn
that ends (or is aborted) fails its open parks at once, because some agents
never close the HTTP request of a cancelled turn. Whoever parks unparks: every
park is unparked exactly once, by this object, when it resolves or fails.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol

import msgspec
import trio

from agy_host.contract.events import BridgeCallActivity, HostEvent, Notice
from agy_host.contract.tools import ToolResult
from agy_host.engine.lifecycle import Lifecycle
from agy_host.service import roundtrip_text as texts
from agy_host.service.delegation import DelegationGuard, ServiceContext, add_delegation_guard, delegated_agent
from agy_host.service.tool_runs import NoResult, ToolRuns

if TYPE_CHECKING:
    from agy_host.config import BridgeConfig
    from agy_host.engine.driver import TurnHandle

NO_ACTIVE_TURN = "no active agent turn: host tools can only be called while an agent turn is running"
TURN_SETTLED = "the agent turn already ended"
DISCONNECTED = "the agent disconnected before the tool result arrived"
TURN_ENDED = "the agent turn ended with an unresolved host tool call"
ABORTED = "the turn was aborted"
SHUTDOWN = "agy-host is shutting down"
CANCELLED_BY_HOST = "the host cancelled the tool"
#: Reasons that are the normal end of something else, not worth a warning.
_ROUTINE = {TURN_ENDED, ABORTED, SHUTDOWN, CANCELLED_BY_HOST}
#: Call ids remembered by :meth:`RoundTrips.owns`.
_OWNED_CAP = 1024


class RoundTripSettings(msgspec.Struct, kw_only=True, frozen=True):
    park_ttl_s: float = 480.0
    #: 0 (or less) never escalates.
    escalate_after_s: float = 20.0
    escalated_ttl_s: float = 1800.0
    #: Tombstones kept, and the escalation registry's soft cap.
    soft_cap: int = 64

    @classmethod
    def from_config(cls, bridge: BridgeConfig) -> RoundTripSettings:
        return cls(
            park_ttl_s=bridge.park_ttl_seconds,
            escalate_after_s=bridge.escalate_after_seconds,
            escalated_ttl_s=bridge.escalated_ttl_seconds,
        )


class ParkTarget(Protocol):
    """The turn layer, as the round-trips see it."""

    def active_handle(self) -> TurnHandle | None:
        """The running turn's handle, or ``None`` between turns."""
        ...

    def unpark(self) -> None:
        """One park ended: resume the turn's timers (``driver.kick_idle``)."""
        ...

    def emit(self, event: HostEvent) -> None: ...


class LateResult(msgspec.Struct, kw_only=True):
    """A tool result that arrived after its park had died."""

    call_id: str
    name: str
    reason: str
    result: ToolResult


class _Tombstone(msgspec.Struct, kw_only=True):
    name: str
    reason: str


class Escalation(msgspec.Struct, kw_only=True):
    """An escalated call as the poll tool sees it."""

    name: str
    turn_id: int
    state: Literal["running", "done", "failed"] = "running"
    result: ToolResult | None = None
    reason: str = ""
    #: The agent fetched the finished result (so it is not delivered late).
    fetched: bool = False


class _Park:
    def __init__(self, call_id: str, name: str, handle: TurnHandle, deadline: float, escalate_at: float | None) -> None:
        self.call_id = call_id
        self.name = name
        self.handle = handle
        self.deadline = deadline
        self.escalate_at = escalate_at
        self.escalated = False
        self.done = False
        self.answer: ToolResult | None = None
        self.answered = trio.Event()
        #: Set when the park resolves or fails: its tool, if still running, is
        #: no longer waited for (:meth:`RoundTrips.run_tool`).
        self.ended = trio.Event()
        self.scope = trio.CancelScope()


class RoundTrips:
    """The round-trip state of one command run; see the module docstring.

    Build it with :func:`open_roundtrips`; the turn layer attaches itself
    (:meth:`attach`), the bridge calls :meth:`call` and :meth:`poll`, the
    host's tool loop calls :meth:`deliver_tool_result` (it is a
    :class:`~agy_host.runtime.turn_layer.ToolResultSink`).
    """

    def __init__(self, settings: RoundTripSettings, nursery: trio.Nursery) -> None:
        self.settings = settings
        self._nursery = nursery
        self._target: ParkTarget | None = None
        self._pending: dict[str, _Park] = {}
        self._tombstones: collections.OrderedDict[str, _Tombstone] = collections.OrderedDict()
        self._registry: collections.OrderedDict[str, Escalation] = collections.OrderedDict()
        self._late: list[LateResult] = []
        self._owned: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._ids = itertools.count(1)
        self.closed = False
        self.log = Lifecycle()
        self.stats = dict.fromkeys(("calls", "resolved", "failed", "escalated", "late", "refused"), 0)
        #: The host tools running for the calls (and those that outlived their park).
        self.tools = ToolRuns(nursery, deliver=self.deliver_tool_result, notice=self._notice)

    # -- wiring ----------------------------------------------------------------------

    def attach(self, target: ParkTarget) -> None:
        self._target = target

    def detach(self, target: ParkTarget) -> None:
        if self._target is target:
            self._target = None

    # -- state -----------------------------------------------------------------------

    @property
    def pending_ids(self) -> list[str]:
        return list(self._pending)

    @property
    def tombstone_ids(self) -> list[str]:
        return list(self._tombstones)

    def escalation(self, call_id: str) -> Escalation | None:
        return self._registry.get(call_id)

    def owns(self, call_id: str) -> bool:
        """True for a call id this object parked a turn on (the turn layer then
        leaves unparking to it)."""
        return call_id in self._owned

    @property
    def has_late_results(self) -> bool:
        return bool(self._late)

    def take_late_results(self) -> list[LateResult]:
        """The late results waiting for the next fresh turn (consumed)."""
        late, self._late = self._late, []
        return late

    def return_late_results(self, late: list[LateResult]) -> None:
        """Put back late results a turn took but could not send (it failed to start)."""
        self._late[:0] = late

    # -- the bridge's side -------------------------------------------------------------

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """While the bridge serves the agent (any request in flight, or its
        one-time start-up on the first connection), the active turn's
        inactivity clock is held: the agent is waiting on the host, which is
        not silence (the overall deadline keeps running)."""
        target = self._target
        handle = target.active_handle() if target is not None and not self.closed else None
        if handle is None:
            yield
            return
        with handle.hold():
            yield

    async def call(self, name: str, args: Mapping[str, Any], *, disconnected: trio.Event | None = None) -> ToolResult:
        """Park the active turn on host tool ``name`` and wait for its answer:
        the result, an error (TTL, disconnect, turn end), or the escalation
        acknowledgement. ``disconnected`` is set by the bridge when the agent's
        HTTP request goes away. Never raises for those; returns an error result."""
        target = self._target
        handle = target.active_handle() if target is not None and not self.closed else None
        if handle is None or handle.closed:
            self.stats["refused"] += 1
            self.log.add("refused", tool=name, reason="no-active-turn")
            return ToolResult(text=f"Error: {NO_ACTIVE_TURN}", is_error=True)
        call_id = f"call-{next(self._ids)}-{uuid.uuid4().hex[:8]}"
        now = trio.current_time()
        s = self.settings
        park = _Park(
            call_id,
            name,
            handle,
            deadline=now + s.park_ttl_s,
            escalate_at=now + s.escalate_after_s if s.escalate_after_s > 0 else None,
        )
        self._pending[call_id] = park
        self._own(call_id)
        if not handle.push_external(BridgeCallActivity(call_id=call_id, name=name, args=dict(args))):
            del self._pending[call_id]
            self.stats["refused"] += 1
            return ToolResult(text=f"Error: {TURN_SETTLED}", is_error=True)
        self.stats["calls"] += 1
        self.log.add("parked", tool=name, callId=call_id)
        self._nursery.start_soon(self._watch, park)
        try:
            async with trio.open_nursery() as nursery:
                if disconnected is not None:
                    nursery.start_soon(self._fail_on, park, disconnected, DISCONNECTED)
                await park.answered.wait()
                nursery.cancel_scope.cancel()
        finally:
            if not park.answered.is_set():  # the request itself was cancelled
                self._fail(park, DISCONNECTED)
        assert park.answer is not None
        return park.answer

    def poll(self, call_id: str) -> ToolResult:
        """The poll tool's answer for an escalated call."""
        entry = self._registry.get(call_id)
        if entry is None:
            return texts.poll_unknown(call_id)
        if entry.state == "running":
            return texts.poll_running(entry.name, call_id)
        if entry.state == "failed":
            return texts.poll_failed(entry.name, call_id, entry.reason)
        assert entry.result is not None
        entry.fetched = True
        return texts.poll_done(entry.result)

    # -- the host's side ---------------------------------------------------------------

    async def run_tool(
        self, call_id: str, name: str, handle: TurnHandle, call: Callable[[], Awaitable[ToolResult]]
    ) -> ToolResult | NoResult:
        """Run the host tool of parked call ``call_id`` and wait for it while
        its park lives: its result, or ``"aborted"`` (the turn was aborted,
        the tool cancelled), or ``"detached"``: the park ended first (TTL,
        escalated TTL, hang-up) or the agent's turn settled, so the turn reads
        on while the tool runs on, its result a late result
        (:class:`~agy_host.service.tool_runs.ToolRuns`)."""
        park = self._pending.get(call_id)
        ended = park.ended if park is not None and not park.done else None
        return await self.tools.run(call_id, name, handle, call, park_ended=ended)

    def deliver_tool_result(self, call_id: str, result: ToolResult) -> bool:
        """The host tool finished. Answers the parked call, or records the
        result for the poll tool (escalated), or keeps it as a late result
        (the park died). ``False`` for a call id this object never saw."""
        park = self._pending.pop(call_id, None)
        if park is not None:
            self._settle(park)
            self.stats["resolved"] += 1
            self.log.add("resolved", tool=park.name, callId=call_id, escalated=park.escalated)
            if park.escalated:
                entry = self._registry[call_id]
                entry.state, entry.result = "done", result
                if park.handle.closed:
                    self._add_late(call_id, park.name, "the turn ended while the tool was still running", result)
                    entry.fetched = True
            else:
                park.answer = result
                park.answered.set()
            self._unpark(park)
            return True
        tomb = self._tombstones.pop(call_id, None)
        if tomb is not None:
            self._add_late(call_id, tomb.name, tomb.reason, result)
            return True
        return False

    def discard(self, call_id: str) -> None:
        """The host gave up on the tool (the turn was aborted and the tool
        cancelled): nothing will be delivered for this call."""
        park = self._pending.get(call_id)
        if park is not None:
            self._fail(park, CANCELLED_BY_HOST)
        self.tools.cancel(call_id, "as the host gave up on it")
        self._tombstones.pop(call_id, None)
        entry = self._registry.get(call_id)
        if entry is not None and entry.state == "running":
            entry.state, entry.reason = "failed", CANCELLED_BY_HOST

    def turn_ended(self, handle: TurnHandle) -> None:
        """The turn layer read ``handle``'s outcome: its open parks fail
        (escalated ones live on until their TTL), and escalated results the
        agent never fetched become late results."""
        for park in [p for p in self._pending.values() if p.handle is handle and not p.escalated]:
            self._fail(park, TURN_ENDED)
        for call_id, entry in self._registry.items():
            if entry.turn_id == handle.turn_id and entry.state == "done" and not entry.fetched:
                assert entry.result is not None
                entry.fetched = True
                self._add_late(call_id, entry.name, "the turn ended before the agent fetched the result", entry.result)

    def fail_all(self, reason: str) -> None:
        """Fail every pending park that is not escalated."""
        for park in [p for p in self._pending.values() if not p.escalated]:
            self._fail(park, reason)

    def close(self) -> None:
        """The command is ending: answer every waiting call, stop unparking."""
        self.closed = True
        self.tools.close()
        self._target = None
        for park in list(self._pending.values()):
            self._fail(park, SHUTDOWN)

    # -- internals -----------------------------------------------------------------------

    def _own(self, call_id: str) -> None:
        self._owned[call_id] = None
        while len(self._owned) > _OWNED_CAP:
            self._owned.popitem(last=False)

    async def _watch(self, park: _Park) -> None:
        with park.scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._timer, park)
                nursery.start_soon(self._fail_on, park, park.handle.abort_requested, ABORTED, True)
                nursery.start_soon(self._fail_on, park, park.handle.settled, TURN_ENDED, True)

    async def _timer(self, park: _Park) -> None:
        if park.escalate_at is not None and park.escalate_at < park.deadline:
            await trio.sleep_until(park.escalate_at)
            if park.done:
                return
            self._escalate(park)
        await trio.sleep_until(park.deadline)
        if not park.done:
            if park.escalated:
                why = f"escalated host tool call timed out after {texts.seconds(self.settings.escalated_ttl_s)}"
            else:
                why = f"host tool round-trip timed out after {texts.seconds(self.settings.park_ttl_s)}"
            self._fail(park, why)

    async def _fail_on(self, park: _Park, event: trio.Event, reason: str, spare_escalated: bool = False) -> None:
        await event.wait()
        if not (spare_escalated and park.escalated):
            self._fail(park, reason)

    def _escalate(self, park: _Park) -> None:
        park.escalated = True
        park.deadline = trio.current_time() + self.settings.escalated_ttl_s
        self._registry[park.call_id] = Escalation(name=park.name, turn_id=park.handle.turn_id)
        self._trim_registry()
        self.stats["escalated"] += 1
        self.log.add("escalated", tool=park.name, callId=park.call_id)
        park.answer = ToolResult(text=texts.escalated_ack(park.name, park.call_id))
        park.answered.set()
        self._notice(
            "info",
            f"host tool {park.name!r} is still running after {texts.seconds(self.settings.escalate_after_s)}; "
            f"the agent was told to poll for call {park.call_id}",
        )

    def _fail(self, park: _Park, reason: str) -> None:
        if park.done:
            return
        self._pending.pop(park.call_id, None)
        self._settle(park)
        self.stats["failed"] += 1
        self.log.add("failed", tool=park.name, callId=park.call_id, reason=reason)
        if reason != CANCELLED_BY_HOST:
            self._tombstones[park.call_id] = _Tombstone(name=park.name, reason=reason)
            while len(self._tombstones) > self.settings.soft_cap:
                self._tombstones.popitem(last=False)
        if park.escalated:
            entry = self._registry.get(park.call_id)
            if entry is not None:
                entry.state, entry.reason = "failed", reason
        else:
            park.answer = ToolResult(text=f"Error: {reason}", is_error=True)
            park.answered.set()
        self._unpark(park)
        if reason not in _ROUTINE:
            self._notice("warning", f"host tool call {park.name!r} failed: {reason}")

    def _settle(self, park: _Park) -> None:
        park.done = True
        park.ended.set()
        park.scope.cancel()

    def _unpark(self, park: _Park) -> None:
        # Never for a settled turn: drivers unpark "the" parked turn, which
        # could be a newer one.
        target = self._target
        if target is not None and not park.handle.closed:
            target.unpark()

    def _add_late(self, call_id: str, name: str, reason: str, result: ToolResult) -> None:
        self._late.append(LateResult(call_id=call_id, name=name, reason=reason, result=result))
        self.stats["late"] += 1
        self.log.add("late", tool=name, callId=call_id)
        self._notice(
            "warning",
            f"the result of host tool {name!r} arrived after its call ended ({reason}); "
            "it is sent to the agent with the next turn",
        )

    def _trim_registry(self) -> None:
        while len(self._registry) > self.settings.soft_cap:
            settled = next((cid for cid, e in self._registry.items() if e.state != "running"), None)
            if settled is None:
                return  # running calls are never evicted: the map grows instead
            del self._registry[settled]

    def _notice(self, level: Literal["info", "warning", "error"], message: str) -> None:
        target = self._target
        if target is not None:
            target.emit(Notice(level=level, message=message, code="round-trip"))


@contextlib.asynccontextmanager
async def open_roundtrips(settings: RoundTripSettings | None = None) -> AsyncIterator[RoundTrips]:
    """A :class:`RoundTrips` whose park watchers run in its own nursery;
    leaving answers every call still waiting (``agy-host is shutting down``)."""
    async with trio.open_nursery() as nursery:
        rt = RoundTrips(settings or RoundTripSettings(), nursery)
        try:
            yield rt
        finally:
            rt.close()
            nursery.cancel_scope.cancel()


__all__ = [
    "ABORTED",
    "DISCONNECTED",
    "NO_ACTIVE_TURN",
    "SHUTDOWN",
    "TURN_ENDED",
    "TURN_SETTLED",
    "DelegationGuard",
    "Escalation",
    "LateResult",
    "ParkTarget",
    "RoundTripSettings",
    "RoundTrips",
    "ServiceContext",
    "add_delegation_guard",
    "delegated_agent",
    "open_roundtrips",
]
