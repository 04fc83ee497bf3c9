"""Round-trips through the real turn layer: a scripted in-process agent calls
a host tool the way the bridge does (``RoundTrips.call`` from inside its
turn), the layer stops with ``tool_use``, the host runs the tool, and the
agent's turn goes on. The driver uses the real :class:`TurnTimers`, so the
paused deadline, the suspended inactivity clock and the park TTL are
exercised with small budgets on trio's autojump clock."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
import trio
import trio.testing

from agy_host.config import Config
from agy_host.contract.events import Notice, OutcomeActivity, TextActivity, ToolUseRequested
from agy_host.contract.permissions import PermissionDecision, PermissionRequest
from agy_host.contract.prompt import TextBlock, prompt_text
from agy_host.contract.tools import HostTool, ToolResult
from agy_host.engine.base import Engine, EngineContext
from agy_host.engine.driver import DriverSnapshot, TurnHandle, TurnRequest
from agy_host.engine.timers import TurnTimers
from agy_host.plugins import Plugins
from agy_host.runtime.store import SessionStore
from agy_host.runtime.turn_layer import TurnLayer
from agy_host.service.roundtrips import RoundTrips, RoundTripSettings, open_roundtrips

Script = Callable[["ScriptDriver", TurnRequest, TurnHandle], Awaitable[OutcomeActivity]]


class ScriptDriver:
    """A driver whose turns run a test's script; timers are the real ones."""

    engine_name = "script"

    def __init__(self, nursery: trio.Nursery, script: Script) -> None:
        self._nursery = nursery
        self.script = script
        self.requests: list[TurnRequest] = []
        self.timers: TurnTimers | None = None
        self.kicks = 0
        self.rt: RoundTrips | None = None

    async def run(self, request: TurnRequest) -> TurnHandle:
        self.requests.append(request)
        timers = TurnTimers(request.timeout_s, request.inactivity_s)
        handle = TurnHandle(on_park=timers.pause, timers=timers)
        self.timers = timers
        self._nursery.start_soon(self._turn, request, handle, timers)
        return handle

    def reentry(self) -> TurnHandle | None:
        return None  # round-trip parks never need it

    def kick_idle(self) -> None:
        self.kicks += 1
        if self.timers is not None:
            self.timers.resume()

    def snapshot(self) -> DriverSnapshot:
        return DriverSnapshot(engine="script", state="ready")

    async def aclose(self) -> None:
        return None

    async def _turn(self, request: TurnRequest, handle: TurnHandle, timers: TurnTimers) -> None:
        outcome: OutcomeActivity | None = None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(timers.watch)

            async def on_abort() -> None:
                await handle.abort_requested.wait()
                timers.scope.cancel()

            nursery.start_soon(on_abort)
            with timers.scope:
                timers.arm()
                outcome = await self.script(self, request, handle)
            timers.stop()
            nursery.cancel_scope.cancel()
        if handle.abort_requested.is_set():  # like real drivers: an abort wins
            outcome = None
        if outcome is None:
            if handle.abort_requested.is_set():
                outcome = OutcomeActivity(status="ok", stop_reason="aborted", aborted=True)
            else:
                fired = timers.expired() or "deadline"
                outcome = OutcomeActivity(
                    status="error",
                    stop_reason="error",
                    error=f"{fired} fired",
                    error_kind="inactivity" if fired == "inactivity" else "timeout",
                )
        handle.finish(outcome)

    async def agent_calls(self, handle: TurnHandle, name: str, args: dict[str, Any]) -> ToolResult:
        """What the bridge does for the agent's ``tools/call``."""
        assert self.rt is not None
        result = await self.rt.call(name, args)
        assert self.timers is not None
        self.timers.touch()
        return result


class ScriptEngine(Engine):
    ENGINE_NAME: ClassVar[str] = "script"
    STORE_SUFFIX: ClassVar[str | None] = "@script"

    def open_driver(self) -> contextlib.AbstractAsyncContextManager[Any]:
        raise NotImplementedError


async def _decide(request: PermissionRequest) -> PermissionDecision:
    return PermissionDecision(option_id=None, policy="test")


class Rig:
    def __init__(self, layer: TurnLayer, driver: ScriptDriver, rt: RoundTrips, events: list[Any]) -> None:
        self.layer = layer
        self.driver = driver
        self.rt = rt
        self.events = events

    def text(self) -> str:
        return "".join(getattr(e, "delta", "") for e in self.events if type(e).__name__ == "TextDelta")

    def notices(self) -> list[str]:
        return [e.message for e in self.events if isinstance(e, Notice)]


@contextlib.asynccontextmanager
async def rig(tmp_path: Path, script: Script, settings: RoundTripSettings) -> AsyncIterator[Rig]:
    config = Config()
    engine = ScriptEngine(EngineContext(config=config, state_dir=tmp_path, decide_permission=_decide))
    events: list[Any] = []
    async with open_roundtrips(settings) as rt, trio.open_nursery() as nursery:
        driver = ScriptDriver(nursery, script)
        driver.rt = rt
        layer = TurnLayer(
            engine=engine,
            driver=driver,
            store=SessionStore(tmp_path),
            plugins=Plugins({}, load_entry_points=False),
            config=config,
            sink=events.append,
            roundtrips=rt,
        )
        yield Rig(layer, driver, rt, events)
        nursery.cancel_scope.cancel()


def tool(name: str, fn: Callable[[dict[str, Any]], Awaitable[ToolResult]]) -> dict[str, HostTool]:
    return {name: HostTool(name=name, description="", input_schema={"type": "object"}, call=fn)}


def never_ending() -> tuple[Callable[[dict[str, Any]], Awaitable[ToolResult]], trio.Event]:
    """A tool that never returns, and the event set when it is cancelled."""
    cancelled = trio.Event()

    async def forever(args: dict[str, Any]) -> ToolResult:
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()

    return forever, cancelled


async def run(r: Rig, prompt: str = "go", **kw: Any) -> Any:
    return await r.layer.run_turn("s", [TextBlock(text=prompt)], cwd="/work", **kw)


async def calls_once(d: ScriptDriver, req: TurnRequest, h: TurnHandle) -> OutcomeActivity:
    h.emit(TextActivity(delta="asking. "))
    result = await d.agent_calls(h, "lookup", {"q": "x"})
    h.emit(TextActivity(delta=f"agent got: {result.text}"))
    return OutcomeActivity(status="ok", stop_reason="stop", conversation_id="c1")


async def test_a_bridge_call_parks_and_its_result_resumes_the_same_turn(tmp_path: Path) -> None:
    async def lookup(args: dict[str, Any]) -> ToolResult:
        return ToolResult(text=f"found {args['q']}")

    async with rig(tmp_path, calls_once, RoundTripSettings()) as r:
        parked = await run(r)
        assert parked.stop_reason == "tool_use"
        assert parked.tool_use is not None
        assert (parked.tool_use.name, parked.tool_use.args) == ("lookup", {"q": "x"})
        assert r.layer.parked and r.rt.owns(parked.tool_use.call_id)
        result = await r.layer.resolve_tool_use(tool("lookup", lookup), [r.rt])
    assert (result.stop_reason, result.exit_code) == ("stop", 0)
    assert r.text() == "asking. agent got: found x"
    assert [e for e in r.events if isinstance(e, ToolUseRequested)] == [parked.tool_use]
    assert r.driver.kicks == 1  # unparked exactly once
    assert len(r.driver.requests) == 1  # the same turn, no second prompt


async def test_parked_time_does_not_count_against_the_deadline(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async def agent(d: ScriptDriver, req: TurnRequest, h: TurnHandle) -> OutcomeActivity:
        await trio.sleep(4)
        await d.agent_calls(h, "human", {})
        await trio.sleep_forever()  # then the agent hangs: the deadline must still fire

    async def human(args: dict[str, Any]) -> ToolResult:
        await trio.sleep(100)  # a slow human, far beyond the 10 s budget
        return ToolResult(text="ok")

    async with rig(tmp_path, agent, RoundTripSettings(park_ttl_s=500)) as r:
        start = trio.current_time()
        parked = await run(r, timeout_s=10.0, inactivity_s=0)
        result = await r.layer.resolve_tool_use(tool("human", human), [r.rt])
        elapsed = trio.current_time() - start
    assert (result.stop_reason, result.error_kind) == ("error", "timeout")
    assert parked.stop_reason == "tool_use"
    # 4 s before the park + 100 s parked + the 6 s that were left
    assert elapsed == pytest.approx(110, abs=0.01)


async def test_inactivity_is_suspended_while_parked_and_rearmed_after(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async def agent(d: ScriptDriver, req: TurnRequest, h: TurnHandle) -> OutcomeActivity:
        await d.agent_calls(h, "human", {})
        await trio.sleep_forever()

    async def human(args: dict[str, Any]) -> ToolResult:
        await trio.sleep(60)
        return ToolResult(text="ok")

    async with rig(tmp_path, agent, RoundTripSettings(park_ttl_s=500)) as r:
        start = trio.current_time()
        await run(r, timeout_s=0, inactivity_s=5.0)
        result = await r.layer.resolve_tool_use(tool("human", human), [r.rt])
        elapsed = trio.current_time() - start
    assert result.error_kind == "inactivity"
    assert elapsed == pytest.approx(65, abs=0.01)


async def test_a_result_after_the_park_ttl_is_delivered_on_the_next_fresh_turn(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async def slow(args: dict[str, Any]) -> ToolResult:
        await trio.sleep(20)
        return ToolResult(text="the slow answer")

    async def agent(d: ScriptDriver, req: TurnRequest, h: TurnHandle) -> OutcomeActivity:
        if "Late tool delivery" in prompt_text(req.prompt):
            h.emit(TextActivity(delta="thanks for the late result"))
            return OutcomeActivity(status="ok", stop_reason="stop", conversation_id="c1")
        return await calls_once(d, req, h)

    async with rig(tmp_path, agent, RoundTripSettings(park_ttl_s=5)) as r:
        await run(r)
        first = await r.layer.resolve_tool_use(tool("lookup", slow), [r.rt])
        assert first.stop_reason == "stop"
        assert trio.current_time() == pytest.approx(5)  # the turn did not wait for the tool (issue 28 item 2)
        assert "agent got: Error: host tool round-trip timed out after 5s" in r.text()
        assert r.rt.tools.detached == ["lookup"] and not r.rt.has_late_results
        await r.rt.tools.wait_detached()
        assert trio.current_time() == pytest.approx(20)
        assert r.driver.kicks == 1  # the failed park unparked once; the late result did not
        assert r.rt.has_late_results
        assert any("sent to the agent with the next turn" in n for n in r.notices())
        second = await run(r, "what next?")
    sent = prompt_text(r.driver.requests[1].prompt)
    assert sent.startswith("[Late tool delivery]") and "the slow answer" in sent
    assert sent.endswith("what next?")
    assert second.stop_reason == "stop" and not r.rt.has_late_results


async def test_abort_while_the_tool_runs_cancels_it(tmp_path: Path) -> None:
    forever, cancelled = never_ending()

    async with rig(tmp_path, calls_once, RoundTripSettings()) as r:
        await run(r)

        async def abort_soon() -> None:
            await trio.testing.wait_all_tasks_blocked()
            r.layer.abort("interrupted")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(abort_soon)
            result = await r.layer.resolve_tool_use(tool("lookup", forever), [r.rt])
    assert result.stop_reason == "aborted" and result.exit_code == 130
    assert cancelled.is_set()
    assert r.rt.tombstone_ids == [] and not r.rt.has_late_results  # nothing left to deliver


async def test_a_tool_may_refuse(tmp_path: Path) -> None:
    async def gated(args: dict[str, Any]) -> ToolResult:
        return ToolResult(text="refused: lookups are not allowed in this project", is_error=True)

    async with rig(tmp_path, calls_once, RoundTripSettings()) as r:
        await run(r)
        result = await r.layer.resolve_tool_use(tool("lookup", gated), [r.rt])
    assert result.stop_reason == "stop"
    assert r.text().endswith("agent got: refused: lookups are not allowed in this project")


async def test_an_escalated_call_is_polled_while_the_host_runs_the_tool(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    polls: list[str] = []

    async def agent(d: ScriptDriver, req: TurnRequest, h: TurnHandle) -> OutcomeActivity:
        ack = await d.agent_calls(h, "review", {})
        call_id = next(w for w in ack.text.replace("(", " ").replace(")", " ").split() if w.startswith("call-"))
        while True:
            answer = d.rt.poll(call_id) if d.rt else ToolResult()
            polls.append(answer.text[:13])
            if not answer.text.startswith("STILL RUNNING"):
                break
            await trio.sleep(5)
        h.emit(TextActivity(delta=f"review says {answer.text}"))
        return OutcomeActivity(status="ok", stop_reason="stop")

    async def review(args: dict[str, Any]) -> ToolResult:
        await trio.sleep(30)
        return ToolResult(text="LGTM")

    settings = RoundTripSettings(park_ttl_s=10, escalate_after_s=2, escalated_ttl_s=100)
    async with rig(tmp_path, agent, settings) as r:
        await run(r)
        result = await r.layer.resolve_tool_use(tool("review", review), [r.rt])
    assert result.stop_reason == "stop"
    assert r.text() == "review says LGTM"
    assert polls[0] == "STILL RUNNING" and polls[-1] == "LGTM"
    assert r.driver.kicks == 1


async def test_a_tool_that_never_ends_is_cancelled_at_its_turns_deadline(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Issue 28 item 2: the TTL ends the park, the turn reads on and ends,
    and the tool, detached, runs on until the turn's deadline: the 4 s spent
    before the park count, the parked 3 s do not (100 - 4 = 96 s left)."""
    forever, cancelled = never_ending()

    async def agent(d: ScriptDriver, req: TurnRequest, h: TurnHandle) -> OutcomeActivity:
        await trio.sleep(4)
        return await calls_once(d, req, h)

    async with rig(tmp_path, agent, RoundTripSettings(park_ttl_s=3)) as r:
        await run(r, timeout_s=100.0, inactivity_s=0)
        result = await r.layer.resolve_tool_use(tool("lookup", forever), [r.rt])
        assert result.stop_reason == "stop" and trio.current_time() == pytest.approx(7)
        await r.rt.tools.wait_detached()
        assert trio.current_time() == pytest.approx(7 + 96)
    assert cancelled.is_set() and not r.rt.has_late_results
    assert any("'lookup' was cancelled at its turn's deadline" in n for n in r.notices()), r.notices()


async def test_an_abort_cancels_a_detached_tool(tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    """The agent goes on after the TTL and the person aborts the turn: the
    tool that outlived its park is cancelled with it, and says so."""
    forever, cancelled = never_ending()

    async def agent(d: ScriptDriver, req: TurnRequest, h: TurnHandle) -> OutcomeActivity:
        await d.agent_calls(h, "lookup", {})
        await trio.sleep_forever()

    async with rig(tmp_path, agent, RoundTripSettings(park_ttl_s=3)) as r:
        await run(r, timeout_s=0, inactivity_s=0)

        async def abort_later() -> None:
            await trio.sleep(10)
            r.layer.abort("interrupted")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(abort_later)
            result = await r.layer.resolve_tool_use(tool("lookup", forever), [r.rt])
        await r.rt.tools.wait_detached()
    assert result.stop_reason == "aborted" and cancelled.is_set()
    assert any("'lookup' was cancelled as its turn was aborted" in n for n in r.notices()), r.notices()
