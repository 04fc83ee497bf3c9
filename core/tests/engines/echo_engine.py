"""A test-only in-process engine that echoes, scripted by words in the prompt.

It implements the real engine contract (``Engine``, a ``TurnDriver`` with
``TurnTimers``, turn serialization, parks) so the turn layer and the CLI are
tested against the same shapes a real engine produces, without a subprocess.

Directives (anywhere in the prompt text):

``!tool``      a tool call sent twice (same call id), then done
``!toolfail``  a tool call that fails
``!perm``      ask the host's permission decider once
``!question``  ask an ``interaction_`` question through the decider
``!usage``     report usage
``!thought``   think out loud
``!notice``    a warning notice
``!silent``    stream nothing; the outcome carries the response
``!bridge``    park on a host tool call ``host_echo`` and continue after it
``!hang``      wait until aborted or a timer fires
``!slow``      stream ``tick`` lines for a long time (for Ctrl-C tests)
``!fail``      end with an agent error
``!lose-turn`` park, then forget the parked turn (reentry returns None)
``!selfint``   stream a line, send SIGINT to this process, wait to be aborted
``!selfint2``  the same, but ignore the abort and send SIGINT twice

Otherwise the answer is ``echo: <prompt>`` in three chunks.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import trio

from agy_host import hookimpl
from agy_host.contract.diagnostics import DiagnosticReport
from agy_host.contract.events import (
    BridgeCallActivity,
    NoticeActivity,
    OutcomeActivity,
    PermissionActivity,
    PermissionOption,
    TextActivity,
    ThoughtActivity,
    ToolDoneActivity,
    ToolErrorActivity,
    ToolStartActivity,
    UsageActivity,
    UsageCounts,
)
from agy_host.contract.permissions import PermissionRequest
from agy_host.contract.prompt import prompt_text
from agy_host.contract.tools import ToolResult
from agy_host.engine.base import Engine, EngineCapabilities, EngineContext, ModelCatalog, ModelInfo
from agy_host.engine.driver import DriverSnapshot, TurnHandle, TurnRequest
from agy_host.engine.lifecycle import Lifecycle
from agy_host.engine.timers import TurnTimers

OPTIONS = [
    PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
    PermissionOption(option_id="no", name="Reject", kind="reject_once"),
]
_conversations = itertools.count(1)


class EchoHooks:
    """Registered by the host after the engine is selected (``Engine.hooks``)."""

    @hookimpl
    def agy_host_diagnostics(self, report: DiagnosticReport) -> None:
        report.section("echo hooks").add("registered", "yes", "ok")


class EchoEngine(Engine):
    ENGINE_NAME: ClassVar[str] = "echo"
    DESCRIPTION: ClassVar[str] = "test engine: echoes the prompt"
    STORE_SUFFIX: ClassVar[str | None] = "@echo"

    def __init__(self, ctx: EngineContext, recorder: list[TurnRequest] | None = None) -> None:
        super().__init__(ctx)
        self.recorder = recorder if recorder is not None else []
        self.hooks = EchoHooks()
        section = ctx.config.section("echo")
        self._resources = bool(section.get("resources", False))
        #: ``[echo] slow_open = "PATH"``: touch PATH, then take forever to start
        #: (for Ctrl-C during agent start-up).
        self._slow_open = str(section.get("slow_open", ""))

    @property
    def capabilities(self) -> EngineCapabilities:
        return EngineCapabilities(reports_usage=True, resources=self._resources, load_session=True)

    def agent_label(self) -> str:
        return self.ctx.agent or "echo"

    @contextlib.asynccontextmanager
    async def _open(self) -> AsyncIterator[EchoDriver]:
        if self._slow_open:
            with open(self._slow_open, "w") as marker:
                marker.write("opening\n")
            await trio.sleep(600)
        async with trio.open_nursery() as nursery:
            driver = EchoDriver(self, nursery)
            try:
                yield driver
            finally:
                await driver.aclose()
                nursery.cancel_scope.cancel()

    def open_driver(self) -> contextlib.AbstractAsyncContextManager[EchoDriver]:
        return self._open()

    async def list_models(self) -> ModelCatalog:
        return ModelCatalog(
            models=[
                ModelInfo(id="echo-1", name="Echo One", efforts=["low", "high"], current=True),
                ModelInfo(id="echo-2"),
            ],
            source="agent",
            current="echo-1",
        )

    async def diagnose(self, report: DiagnosticReport) -> None:
        report.section("echo engine").add("binary", "built in", "ok")


class EchoDriver:
    engine_name = "echo"

    def __init__(self, engine: EchoEngine, nursery: trio.Nursery) -> None:
        self.engine = engine
        self._nursery = nursery
        self._locks: dict[str, trio.Semaphore] = {}
        self._parked: TurnHandle | None = None
        self._timers: TurnTimers | None = None
        self._unparked = trio.Event()
        self.delivered: dict[str, ToolResult] = {}
        self.lifecycle = Lifecycle()
        self.turns = 0
        self.conversation_id: str | None = None
        self.state = "ready"

    async def run(self, request: TurnRequest) -> TurnHandle:
        self.engine.recorder.append(request)
        lock = self._locks.setdefault(request.session, trio.Semaphore(1))
        await lock.acquire()
        timers = TurnTimers(request.timeout_s, request.inactivity_s)
        handle = TurnHandle(on_park=timers.pause)
        self._nursery.start_soon(self._turn, request, handle, timers, lock)
        return handle

    def reentry(self) -> TurnHandle | None:
        return self._parked

    def kick_idle(self) -> None:
        if self._timers is not None:
            self._timers.resume()
        self._unparked.set()

    def deliver_tool_result(self, call_id: str, result: ToolResult) -> bool:
        """The echo engine is its own bridge: it takes host tool results."""
        if self._parked is None:
            return False
        self.delivered[call_id] = result
        return True

    def snapshot(self) -> DriverSnapshot:
        return DriverSnapshot(
            engine="echo",
            state=self.state,
            pid=os.getpid(),
            conversation_id=self.conversation_id,
            stats={"turns": self.turns},
            lifecycle=self.lifecycle.entries(),
            extra={"echo note": "in-process"},
        )

    async def aclose(self) -> None:
        self.state = "closed"

    # -- one turn --------------------------------------------------------------------

    async def _turn(self, request: TurnRequest, handle: TurnHandle, timers: TurnTimers, lock: trio.Semaphore) -> None:
        self.turns += 1
        cid = request.conversation_id or f"echo-{next(_conversations)}"
        self.conversation_id = cid
        self.lifecycle.add("turn", session=request.session, conversation=cid)
        self._timers = timers
        outcome: OutcomeActivity | None = None
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(timers.watch)

                async def on_abort() -> None:
                    await handle.abort_requested.wait()
                    timers.scope.cancel()

                if "!selfint2" not in prompt_text(request.prompt).split():
                    nursery.start_soon(on_abort)
                with timers.scope:
                    timers.arm()
                    outcome = await self._script(request, handle, timers, cid)
                timers.stop()
                nursery.cancel_scope.cancel()
        finally:
            self._parked = None
            self._timers = None
            lock.release()
        if outcome is None:
            if handle.abort_requested.is_set():
                outcome = OutcomeActivity(status="error", stop_reason="aborted", aborted=True, conversation_id=cid)
            else:
                fired = timers.expired() or "deadline"
                kind = "inactivity" if fired == "inactivity" else "timeout"
                outcome = OutcomeActivity(
                    status="error",
                    stop_reason="error",
                    error=f"echo: {fired} fired",
                    error_kind=kind,
                    conversation_id=cid,
                )
        handle.finish(outcome)

    async def _script(self, request: TurnRequest, handle: TurnHandle, timers: TurnTimers, cid: str) -> OutcomeActivity:
        text = prompt_text(request.prompt)
        words = set(text.split())

        def emit(activity: Any) -> None:
            timers.touch()
            handle.emit(activity)

        await trio.sleep(0)
        if "!thought" in words:
            emit(ThoughtActivity(delta="pondering"))
        if "!notice" in words:
            emit(NoticeActivity(level="warning", message="echo notice"))
        if "!tool" in words:
            emit(ToolStartActivity(call_id="t1", name="read_file", kind="read", title="Read a.txt"))
            await trio.sleep(0.25)
            emit(ToolStartActivity(call_id="t1", name="read_file", kind="read", title="Read a.txt"))
            await trio.sleep(0.25)
            emit(ToolDoneActivity(call_id="t1", name="read_file", output="contents"))
        if "!toolfail" in words:
            emit(ToolStartActivity(call_id="t2", name="write_file", kind="edit"))
            emit(ToolErrorActivity(call_id="t2", name="write_file", message="disk full"))
        if "!perm" in words or "!question" in words:
            question = "!question" in words
            call_id = "interaction_1" if question else "p1"
            req = PermissionRequest(
                session=request.session, call_id=call_id, title="Run ls", options=OPTIONS, is_question=question
            )
            decision = await self.engine.ctx.decide_permission(req)
            emit(
                PermissionActivity(
                    call_id=call_id,
                    title="Run ls",
                    options=OPTIONS,
                    selected=decision.option_id,
                    policy=decision.policy,
                    reason=decision.reason,
                    is_question=question,
                )
            )
        if "!bridge" in words or "!lose-turn" in words:
            self._unparked = trio.Event()
            self._parked = handle
            handle.push_external(BridgeCallActivity(call_id="b1", name="host_echo", args={"x": 1}))
            if "!lose-turn" in words:
                self._parked = None
            await self._unparked.wait()
            self._parked = None
            result = self.delivered.get("b1")
            emit(TextActivity(delta=f"tool said: {result.text if result else '(nothing)'}\n"))
        if "!selfint" in words or "!selfint2" in words:
            emit(TextActivity(delta="working\n"))
            await trio.sleep(0.05)
            for _ in range(2 if "!selfint2" in words else 1):
                os.kill(os.getpid(), signal.SIGINT)
                await trio.sleep(0.05)
            await trio.sleep_forever()
        if "!hang" in words:
            await trio.sleep_forever()
        if "!slow" in words:
            for i in range(600):
                emit(TextActivity(delta=f"tick {i}\n"))
                await trio.sleep(0.1)
        if "!usage" in words:
            emit(UsageActivity(turn=UsageCounts(input_tokens=3, output_tokens=5)))
        if "!fail" in words:
            return OutcomeActivity(
                status="error",
                stop_reason="error",
                error="echo: asked to fail",
                error_kind="agent",
                conversation_id=cid,
            )
        if "!silent" in words:
            return OutcomeActivity(status="ok", stop_reason="stop", response="silent answer", conversation_id=cid)
        answer = f"echo: {text}"
        third = max(1, len(answer) // 3)
        for i in range(0, len(answer), third):
            emit(TextActivity(delta=answer[i : i + third]))
            await trio.sleep(0)
        return OutcomeActivity(status="ok", stop_reason="stop", agent_stop_reason="end_turn", conversation_id=cid)


class EchoPlugin:
    """Registers the echo engine in-process (``agy_host_register_engines``)."""

    name = "echo-test-plugin"

    def __init__(self) -> None:
        self.recorder: list[TurnRequest] = []
        self.engines: list[EchoEngine] = []

    @hookimpl
    def agy_host_register_engines(self, register: Any) -> None:
        def factory(ctx: EngineContext) -> EchoEngine:
            engine = EchoEngine(ctx, recorder=self.recorder)
            self.engines.append(engine)
            return engine

        register("echo", factory)


__all__ = ["EchoDriver", "EchoEngine", "EchoPlugin"]
