"""One engine's driver and turn layer, held open across turns.

``run`` builds these for one turn inside :mod:`agy_host.cli.run_cmd`;
``chat`` keeps them for many turns (and swaps them on ``/engine``), ``ask``
for one. The pieces are the same as ``run``'s: the command's round-trips
and services (:func:`command_scope`), the host's engine opening a driver in
the command's trio loop, a :class:`~agy_host.turn_layer.TurnLayer` running
each turn on it, host tool calls (G9) resolved until the turn really ends
(and late tool results carried by follow-up turns), and Ctrl-C aborting the
turn (first), no longer waiting for an agent that does not stop (second; the
driver is restarted so the next turn starts clean), or exiting (third).

The tool loop and the SIGINT watcher mirror ``run_cmd``'s private ``_turn``
and ``_watch_sigint``, copied so that module can change freely.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING

import msgspec
import trio

from agy_host.cli.exit_codes import ExitCode

if TYPE_CHECKING:
    from agy_host.engines import Engine
    from agy_host.events import HostEvent
    from agy_host.host import Host
    from agy_host.prompt import PromptBlock
    from agy_host.roundtrip import RoundTrips
    from agy_host.turn_layer import TurnLayer, TurnResult
    from agy_host.turns import DriverSnapshot, TurnDriver

Say = Callable[[str], None]
#: Follow-up turns that carry late tool results, at most, per message (as ``run``).
MAX_LATE_FOLLOW_UPS = 3


def say_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class TurnSettings(msgspec.Struct, kw_only=True):
    """Per-turn choices; ``None`` means the config decides."""

    model: str | None = None
    effort: str | None = None
    mode: str | None = None
    skip_permissions: bool | None = None
    timeout_s: float | None = None
    inactivity_s: float | None = None


def describe_error(exc: BaseException) -> str:
    """A readable one-liner, flattening trio's exception groups."""
    from agy_host.engines import EngineError

    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe_error(e) for e in exc.exceptions)
    if isinstance(exc, EngineError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


@contextlib.asynccontextmanager
async def command_scope(host: Host, *, engine_name: str, cwd: str) -> AsyncIterator[tuple[RoundTrips, trio.Nursery]]:
    """The command-wide parts every turn shares: the round-trips (G9 parks)
    and the plugin services (the bridge) bound to them, in one nursery."""
    from agy_host.builtins.config_capture import use_config
    from agy_host.roundtrip import RoundTripSettings, ServiceContext, open_roundtrips

    settings = RoundTripSettings.from_config(host.config.bridge)
    async with open_roundtrips(settings) as roundtrips, trio.open_nursery() as nursery:
        try:
            context = ServiceContext(
                roundtrips=roundtrips,
                engine_name=engine_name,
                cwd=cwd,
                config=host.config,
                env=host.env,
                tools=host.plugins.tools,
                warn=host.warn,
            )
            await host.start_services(nursery, context)
            use_config(host.config)
            yield roundtrips, nursery
        finally:
            nursery.cancel_scope.cancel()


class Conversation:
    """A live driver + turn layer for one host and its engine.

    The driver runs in a task of its own in ``nursery`` (it opens a nursery
    of its own, and trio's scopes must close in the order they opened: held
    by the command's task, two drivers could not be swapped on ``/engine``,
    where the new one starts before the old one stops).
    """

    def __init__(
        self,
        host: Host,
        *,
        nursery: trio.Nursery,
        sink: Callable[[HostEvent], None] | None,
        roundtrips: RoundTrips | None = None,
        services: Sequence[object] = (),
        say: Say = say_stderr,
    ) -> None:
        self.host = host
        self.engine: Engine = host.load_engine()
        self.nursery = nursery
        self.sink = sink
        self.roundtrips = roundtrips
        self.services = list(services)
        self.say = say
        self.driver: TurnDriver | None = None
        self.layer: TurnLayer | None = None
        self._release: trio.Event | None = None
        self._released: trio.Event | None = None
        self._turn_scope: trio.CancelScope | None = None
        self._interrupts = 0
        self.turns = 0

    @property
    def running(self) -> bool:
        return self._turn_scope is not None

    async def _hold(
        self, release: trio.Event, released: trio.Event, *, task_status: trio.TaskStatus[TurnDriver]
    ) -> None:
        started = False
        try:
            async with self.engine.open_driver() as driver:
                task_status.started(driver)
                started = True
                await release.wait()
        except Exception as exc:
            if not started:
                raise  # to ``open``'s caller, through ``nursery.start``
            self.host.warn(f"the {self.engine.ENGINE_NAME} driver failed: {describe_error(exc)}")
        finally:
            released.set()

    async def open(self) -> None:
        from agy_host.turn_layer import TurnLayer

        release, released = trio.Event(), trio.Event()
        driver = await self.nursery.start(self._hold, release, released)
        self._release, self._released = release, released
        self.driver = driver
        self.layer = TurnLayer(
            engine=self.engine,
            driver=driver,
            store=self.host.store,
            plugins=self.host.plugins,
            config=self.host.config,
            sink=self.sink,
            warn=self.host.warn,
            roundtrips=self.roundtrips,
        )

    async def aclose(self) -> None:
        """Stop the agent and wait until it is gone."""
        if self.layer is not None and self.roundtrips is not None:
            self.roundtrips.detach(self.layer)
        self.layer = None
        self.driver = None
        release, released = self._release, self._released
        self._release = self._released = None
        if release is not None and released is not None:
            release.set()
            with trio.CancelScope(shield=True):
                await released.wait()

    async def restart(self) -> None:
        """A fresh driver and turn layer (after a turn was left behind)."""
        await self.aclose()
        await self.open()

    def snapshot(self) -> DriverSnapshot | None:
        if self.driver is None:
            return None
        try:
            return self.driver.snapshot()
        except Exception as exc:
            self.host.warn(f"the driver could not describe itself: {describe_error(exc)}")
            return None

    async def turn(
        self,
        session: str,
        blocks: Sequence[PromptBlock],
        *,
        cwd: str,
        settings: TurnSettings | None = None,
        message_count: int | None = None,
    ) -> TurnResult | None:
        """Run one turn to its end, host tool calls included. ``None`` when the
        user stopped waiting for it (the driver is restarted then)."""
        if self.layer is None or self.driver is None:
            await self.open()
        layer, driver = self.layer, self.driver
        assert layer is not None and driver is not None
        s = settings or TurnSettings()
        result: TurnResult | None = None
        self._interrupts = 0
        started = trio.current_time()
        with trio.CancelScope() as scope:
            self._turn_scope = scope
            try:
                result = await self._run(
                    layer, driver, session, list(blocks), cwd=cwd, s=s, message_count=message_count
                )
            finally:
                self._turn_scope = None
        self.turns += 1
        if scope.cancelled_caught or result is None:
            from agy_host.events import TurnEnded

            # Renderers and the transcript still see the turn end.
            layer.emit(
                TurnEnded(
                    stop_reason="aborted",
                    duration_s=trio.current_time() - started,
                    error="agy-host stopped waiting for the agent",
                )
            )
            self.say("agy-host: the agent did not stop; restarting it for the next turn")
            await self.restart()
            return None
        return result

    async def _run(
        self,
        layer: TurnLayer,
        driver: TurnDriver,
        session: str,
        blocks: list[PromptBlock],
        *,
        cwd: str,
        s: TurnSettings,
        message_count: int | None,
    ) -> TurnResult:
        """The turn, its host tools, and follow-up turns for late tool results."""
        from agy_host.turn_layer import ToolResultSink

        tools = {tool.name: tool for tool in self.host.plugins.tools()}
        found = [x for x in [*self.services, driver] if isinstance(x, ToolResultSink)]
        sinks: list[ToolResultSink] = [self.roundtrips, *found] if self.roundtrips is not None else found
        prompt = blocks
        follow_ups = 0
        while True:
            result = await layer.run_turn(
                session,
                prompt,
                cwd=cwd,
                model=s.model,
                effort=s.effort,
                mode=s.mode,
                skip_permissions=s.skip_permissions,
                timeout_s=s.timeout_s,
                inactivity_s=s.inactivity_s,
                message_count=message_count,
            )
            while result.stop_reason == "tool_use":
                result = await layer.resolve_tool_use(tools, sinks)
            late = self.roundtrips is not None and self.roundtrips.has_late_results
            if result.stop_reason == "aborted" or not late or follow_ups >= MAX_LATE_FOLLOW_UPS:
                return result
            follow_ups += 1
            prompt = []  # the late results are the whole prompt

    def interrupt(self) -> bool:
        """Ctrl-C: abort the running turn, then stop waiting, then exit.
        ``False`` when no turn is running (the caller decides)."""
        scope = self._turn_scope
        if scope is None:
            return False
        self._interrupts += 1
        if self._interrupts == 1:
            self.say("\nagy-host: interrupting the turn (Ctrl-C again to stop waiting)")
            if self.layer is not None:
                self.layer.abort("interrupted")
        elif self._interrupts == 2:
            self.say("agy-host: not waiting for the agent any longer")
            scope.cancel()
        else:
            os._exit(ExitCode.INTERRUPTED)
        return True


async def watch_interrupts(
    conversation: Callable[[], Conversation | None],
    on_idle: Callable[[], None] | None = None,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Route SIGINT to the running turn of ``conversation()`` (which may change,
    ``/engine`` swaps it); between turns call ``on_idle``."""
    with trio.open_signal_receiver(signal.SIGINT) as signals:
        task_status.started()
        async for _ in signals:
            conv = conversation()
            if (conv is None or not conv.interrupt()) and on_idle is not None:
                on_idle()


def write_last_run(host: Host, conv: Conversation, session: str, result: TurnResult | None) -> None:
    """What ``doctor`` shows as the last run (best effort)."""
    snapshot = conv.snapshot()
    if snapshot is None:
        return
    from agy_host.cli.last_run import LastRun
    from agy_host.cli.last_run import write_last_run as write
    from agy_host.store import utc_now

    write(
        host,
        LastRun(
            written_at=utc_now(),
            session=session,
            engine=conv.engine.ENGINE_NAME,
            exit_code=result.exit_code if result is not None else ExitCode.INTERRUPTED,
            stop_reason=result.stop_reason if result is not None else "",
            snapshot=snapshot,
        ),
    )


__all__ = [
    "MAX_LATE_FOLLOW_UPS",
    "Conversation",
    "TurnSettings",
    "command_scope",
    "describe_error",
    "say_stderr",
    "watch_interrupts",
    "write_last_run",
]
