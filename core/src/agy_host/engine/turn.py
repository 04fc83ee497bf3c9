"""What every engine's turn needs, written once: the turn's clocks and handle,
parked-turn bookkeeping, permission requests answered always and bounded,
one typed failure and the failed outcome.

Every engine runs a turn the same way around its own wire: a
:class:`~agy_host.engine.timers.TurnTimers` and a :class:`~agy_host.engine.driver.TurnHandle`
wired together (a park pauses the clocks, a hold stops inactivity), a cancel
scope the abort cancels, and on the driver a list of parked turns for
:meth:`~agy_host.engine.driver.TurnDriver.reentry` and
:meth:`~agy_host.engine.driver.TurnDriver.kick_idle`. Subclass :class:`EngineTurn`
for the wire-specific state; keep a :class:`ParkedTurns` on the driver.

:func:`driver_scope` gives a driver its nursery and its shielded close.

A turn that cannot go on raises :class:`TurnFailed` with an
:data:`~agy_host.contract.events.ErrorKind`; :func:`failed_outcome` turns that into
the outcome the host shows (``aborted`` instead, when the user asked to
abort: an abort is never reported as the error it caused).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

import trio

from agy_host.contract.events import ErrorKind, OutcomeActivity
from agy_host.engine.concurrency import unwrap_single
from agy_host.engine.driver import TurnHandle, TurnRequest
from agy_host.engine.lifecycle import Lifecycle
from agy_host.engine.timers import TurnTimers

#: A permission decision or a question's answer.
AnswerT = TypeVar("AnswerT")

if TYPE_CHECKING:
    from agy_host.contract.interactions import Answer, Question, QuestionAsker
    from agy_host.contract.permissions import PermissionDecision, PermissionRequest
    from agy_host.contract.tool_calls import ToolCall, ToolGateView, ToolVerdict
    from agy_host.engine.base import PermissionDecider


class TurnFailed(Exception):
    """The turn cannot go on; the message is for the user, ``kind`` for exit codes."""

    def __init__(self, message: str, kind: ErrorKind) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind


class EngineTurn:
    """One running turn: request, clocks, handle, abort scope and park count."""

    def __init__(self, request: TurnRequest) -> None:
        self.request = request
        self.timers = TurnTimers(request.timeout_s, request.inactivity_s)
        self.handle = TurnHandle(on_park=self.park, timers=self.timers)
        self.scope = trio.CancelScope()
        self._conversation_id: str | None = None
        self.aborted = False
        self.parked = 0
        #: Called with the turn each time it parks (the driver's :class:`ParkedTurns`).
        self.on_parked: list[Callable[[EngineTurn], None]] = []
        self._open_permissions: set[trio.CancelScope] = set()

    def response(self) -> str:
        """The answer so far (for outcomes of turns cut short)."""
        return ""

    @property
    def conversation_id(self) -> str | None:
        """The agent conversation this turn runs in, once known."""
        return self._conversation_id

    @conversation_id.setter
    def conversation_id(self, value: str | None) -> None:
        # Told to the handle at once: the host binds the session as soon as
        # the conversation exists, not when (or if) the turn settles.
        self._conversation_id = value
        self.handle.conversation_known(value)

    # -- parks -------------------------------------------------------------------------

    def park(self) -> None:
        self.parked += 1
        self.timers.pause()
        for callback in self.on_parked:
            callback(self)

    def unpark(self) -> None:
        if self.parked > 0:
            self.parked -= 1
            self.timers.resume()

    # -- permissions ---------------------------------------------------------------------

    async def decide_permission(
        self, decide: PermissionDecider, request: PermissionRequest, *, bound_s: float | None = None
    ) -> PermissionDecision:
        """Ask the host's policy about ``request`` and always get an answer.

        The turn's clocks stop while a person or a policy thinks. An abort
        answers every open request ``cancelled`` at once
        (:meth:`cancel_permissions`). A policy that raises, or that runs past
        ``bound_s``, is a cancelled decision with the reason: the agent
        waiting on the wire is never left without an answer."""
        from agy_host.contract.permissions import PermissionDecision

        def cancelled(reason: str, nobody: bool) -> PermissionDecision:
            return PermissionDecision(option_id=None, policy="host", reason=reason)

        return await self._always_answered(lambda: decide(request), cancelled, "policy failed", bound_s)

    async def check_tool(self, gate: ToolGateView, call: ToolCall, *, bound_s: float | None = None) -> ToolVerdict:
        """Ask the host's tool gate about ``call`` (an engine that sees its
        agent's steps before they run: the harness's pre-tool hook) the way
        :meth:`decide_permission` asks the policy: clocks stopped, bounded, an
        abort answers at once. No answer is a denial: the step must not run
        on a verdict nobody gave."""
        from agy_host.contract.tool_calls import ToolVerdict

        def cancelled(reason: str, nobody: bool) -> ToolVerdict:
            return ToolVerdict(allow=False, reason=f"{reason}; refused", by="host")

        return await self._always_answered(lambda: gate.check(call), cancelled, "the tool gate failed", bound_s)

    def cancel_permissions(self) -> None:
        """Abort: every open permission request and question is answered ``cancelled``."""
        for scope in list(self._open_permissions):
            scope.cancel()

    # -- questions -----------------------------------------------------------------------

    async def ask(self, asker: QuestionAsker, question: Question, *, bound_s: float | None = None) -> Answer:
        """Hand ``question`` to the host's broker and always get an answer,
        the way :meth:`decide_permission` does: clocks stopped meanwhile, an
        abort answers ``cancel`` at once, a broker that raises or runs past
        ``bound_s`` is a ``cancel`` that counts as unanswered. The question
        and its answer are reported (a ``question`` event; a form's values
        by name only), so no engine can forget to show one."""
        from agy_host.contract.events import QuestionActivity
        from agy_host.contract.interactions import Answer

        def cancelled(reason: str, nobody: bool) -> Answer:
            return Answer(action="cancel", by="host", reason=reason, unanswered=nobody)

        answer = await self._always_answered(lambda: asker(question), cancelled, "asking failed", bound_s)
        answered = sorted(answer.values) if question.kind == "form" and answer.action == "accept" else []
        self.handle.emit(
            QuestionActivity(
                kind=question.kind,
                message=question.message,
                action=answer.action,
                by=answer.by,
                origin=question.origin,
                reason=answer.reason,
                fields=answered,
                unanswered=answer.unanswered,
            )
        )
        return answer

    async def _always_answered(
        self,
        call: Callable[[], Awaitable[AnswerT]],
        cancelled: Callable[[str, bool], AnswerT],
        failed: str,
        bound_s: float | None,
    ) -> AnswerT:
        """The one wait behind permissions and questions: clocks paused, bounded,
        cancelled by an abort; ``cancelled(reason, nobody)`` stands in for an
        answer that did not come (``nobody``: no one answered, as opposed to
        the turn being aborted)."""
        if self.aborted:
            return cancelled("turn aborted", False)
        scope = trio.CancelScope()
        self._open_permissions.add(scope)
        self.timers.pause()
        try:
            with scope, trio.move_on_after(bound_s if bound_s is not None else math.inf) as limit:
                try:
                    return await call()
                except Exception as exc:  # a broken policy or broker must still answer
                    return cancelled(f"{failed}: {exc}", True)
            if limit.cancelled_caught and not scope.cancelled_caught:
                return cancelled(f"no answer within {bound_s:g}s", True)
            return cancelled("turn aborted", False)
        finally:
            self._open_permissions.discard(scope)
            self.timers.resume()

    # -- outcomes ----------------------------------------------------------------------

    def failed(self, error: str, kind: ErrorKind, agent_stop_reason: str = "") -> OutcomeActivity:
        return failed_outcome(self, error, kind, agent_stop_reason)


def failed_outcome(turn: EngineTurn, error: str, kind: ErrorKind, agent_stop_reason: str = "") -> OutcomeActivity:
    """An error outcome with the partial answer, or ``aborted`` when the user asked for that."""
    if turn.aborted:
        return OutcomeActivity(
            status="ok",
            stop_reason="aborted",
            aborted=True,
            conversation_id=turn.conversation_id,
            response=turn.response(),
        )
    return OutcomeActivity(
        status="error",
        stop_reason="error",
        agent_stop_reason=agent_stop_reason,
        conversation_id=turn.conversation_id,
        response=turn.response(),
        error=error,
        error_kind=kind,
    )


class ParkedTurns:
    """The driver's side of parks: which turns are parked, newest last."""

    def __init__(self) -> None:
        self._turns: list[EngineTurn] = []

    def add(self, turn: EngineTurn) -> None:
        self._turns.append(turn)

    def discard(self, turn: EngineTurn) -> None:
        while turn in self._turns:
            self._turns.remove(turn)

    def of_session(self, session: str) -> list[EngineTurn]:
        return [t for t in self._turns if t.request.session == session]

    def supersede(self, session: str, log: Lifecycle | None = None) -> None:
        """A new turn on ``session`` aborts its parked turn (which would
        otherwise wait for the new one, and the new one for it)."""
        for turn in self.of_session(session):
            if log is not None:
                log.add("parked-turn-superseded", session=session)
            turn.handle.abort("superseded by a new turn on the same session")

    def reentry(self) -> TurnHandle | None:
        """The newest parked turn still open (:meth:`TurnDriver.reentry`)."""
        for turn in reversed(self._turns):
            if not turn.handle.closed:
                return turn.handle
        return None

    def kick(self, log: Lifecycle | None = None, session: str | None = None) -> EngineTurn | None:
        """Unpark the newest open parked turn (of ``session``, when given: one
        agent shared by several sessions' turns) once
        (:meth:`TurnDriver.kick_idle`); it stays listed while it has parks left."""
        while True:
            mine = [i for i, t in enumerate(self._turns) if session is None or t.request.session == session]
            if not mine:
                return None
            turn = self._turns.pop(mine[-1])
            if not turn.handle.closed:
                turn.unpark()
                if turn.parked:
                    self._turns.append(turn)
                if log is not None:
                    log.add("unparked", session=turn.request.session)
                return turn


TurnT = TypeVar("TurnT", bound=EngineTurn)


class DriverTurns(Generic[TurnT]):
    """A driver's running turns, written once for every engine: a new turn
    supersedes its session's parked one, parks are listed for
    :meth:`~agy_host.engine.driver.TurnDriver.reentry` and
    :meth:`~agy_host.engine.driver.TurnDriver.kick_idle`, and each turn runs
    as a task of the driver's nursery."""

    def __init__(self, nursery: trio.Nursery, lifecycle: Lifecycle) -> None:
        self._nursery = nursery
        self.lifecycle = lifecycle
        self.parked = ParkedTurns()
        #: Turns started and not yet done, by their handle's id.
        self.open: dict[int, TurnT] = {}

    def supersede(self, session: str) -> None:
        """Call before a new turn on ``session`` waits for anything."""
        self.parked.supersede(session, self.lifecycle)

    def start(self, turn: TurnT, task: Callable[..., Awaitable[object]], *args: object) -> TurnHandle:
        """Run ``task(turn, *args)`` in the driver's nursery; the turn's handle."""
        turn.on_parked.append(self.parked.add)
        self.open[turn.handle.turn_id] = turn
        self._nursery.start_soon(task, turn, *args)
        return turn.handle

    def done(self, turn: TurnT) -> None:
        """The turn's task is over (call it in the task's ``finally``)."""
        self.open.pop(turn.handle.turn_id, None)
        self.parked.discard(turn)

    def reentry(self) -> TurnHandle | None:
        return self.parked.reentry()

    def kick_idle(self, session: str | None = None) -> None:
        """:meth:`TurnDriver.kick_idle`; with ``session``, that session's park only."""
        self.parked.kick(self.lifecycle, session)


class _Closable(Protocol):
    async def aclose(self) -> None: ...


DriverT = TypeVar("DriverT", bound=_Closable)


@contextlib.asynccontextmanager
async def driver_scope(make: Callable[[trio.Nursery], DriverT], *, owner: object = None) -> AsyncIterator[DriverT]:
    """A driver in a nursery of its own, for ``Engine.open_driver``: leaving
    closes the driver shielded (an agent is never left running because the
    caller was cancelled), then cancels whatever the driver still runs; a
    lone error comes out as itself, not wrapped in an exception group.

    An ``owner`` (the engine, which ``doctor`` asks about its live driver)
    has its ``driver`` attribute set to this driver while it is open."""
    with unwrap_single():
        async with trio.open_nursery() as nursery:
            driver = make(nursery)
            if owner is not None:
                owner.driver = driver  # type: ignore[attr-defined]
            try:
                yield driver
            finally:
                if owner is not None and getattr(owner, "driver", None) is driver:
                    owner.driver = None  # type: ignore[attr-defined]
                with trio.CancelScope(shield=True):
                    await driver.aclose()
                nursery.cancel_scope.cancel()


__all__ = ["DriverTurns", "DriverT", "EngineTurn", "ParkedTurns", "TurnFailed", "driver_scope", "failed_outcome"]
