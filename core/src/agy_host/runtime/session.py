"""One runtime for every front-end: :class:`SessionRuntime` runs turns.

``run``, ``chat``, ``ask``, the benchmarks and the Python API
(:mod:`agy_host.api`) all drive turns through a SessionRuntime, so there is one
place that knows the order things start and stop in:

1. the command's round-trips (:mod:`agy_host.service.roundtrips`: host tool calls that
   park a turn, and results that arrive after their call died);
2. the plugin services bound to them (the MCP bridge);
3. the engine's driver (the agent process), in a task of its own;
4. a :class:`~agy_host.runtime.turn_layer.TurnLayer` on that driver, which runs each
   turn, resolves host tool calls until the turn really ends, and carries
   late tool results in follow-up turns of the same conversation.

Each turn holds its session's turn lock (:mod:`agy_host.runtime.turn_lock`)
from before the binding is read until after it is written, so a second
command on the session, in this process or another, waits for it and then
continues the conversation this one left (or, with ``wait=False``, fails
at once: exit 7).

Interrupts are explicit: :meth:`SessionRuntime.interrupt` aborts the running turn
(first call), stops waiting for an agent that does not stop (second: the
driver is closed and re-opened lazily for the next turn), and exits the
process (third, only when the front-end asks for it; a library never does).
The run context (config, env, plugins, cwd) is the :class:`~agy_host.runtime.host.Host`
the session is opened with: nothing is read from process globals.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING

import trio

from agy_host.contract.turn_result import TurnResult
from agy_host.exit_codes import ExitCode
from agy_host.runtime.error_text import describe_error
from agy_host.runtime.held_driver import HeldDriver
from agy_host.runtime.turn_settings import TurnSettings
from agy_host.runtime.unstarted_turns import busy_turn, gave_up_waiting

if TYPE_CHECKING:
    from agy_host.contract.events import AgentCommand, HostEvent
    from agy_host.contract.prompt import PromptBlock
    from agy_host.contract.rendering import DiffSource
    from agy_host.engine.base import Engine
    from agy_host.engine.driver import DriverSnapshot, TurnDriver
    from agy_host.runtime.host import Host
    from agy_host.runtime.turn_layer import TurnLayer
    from agy_host.runtime.turn_lock import TurnLock
    from agy_host.service.roundtrips import RoundTrips

Say = Callable[[str], None]
#: Follow-up turns that carry late tool results, at most, per prompt.
MAX_LATE_FOLLOW_UPS = 3
STOPPED_WAITING = "agy-host stopped waiting for the agent"
#: How to leave the wait for a busy session, in the CLI's words.
WAIT_HINT = "Ctrl-C to stop waiting, --no-wait to fail instead"


def say_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def say_nothing(message: str) -> None:
    """For embedders: the events and the result already say it."""


class SessionRuntime:
    """A live runtime for one host: its engine's driver and turn layer, the
    command's round-trips and services, and the turns run on them.

    Open one with :meth:`open`; ``sink`` receives every
    :class:`~agy_host.contract.events.HostEvent` (a renderer's ``handle``, or the
    Python API's event stream).
    """

    def __init__(
        self,
        host: Host,
        *,
        nursery: trio.Nursery,
        roundtrips: RoundTrips | None,
        sink: Callable[[HostEvent], None] | None,
        services: Sequence[object] = (),
        say: Say = say_stderr,
        exit_on_third_interrupt: bool = False,
        diffs: DiffSource | None = None,
        on_wait: Say | None = None,
        wait_hint: str = WAIT_HINT,
        keep_answer: bool = True,
    ) -> None:
        self.host = host
        #: ``False``: the command does not want ``TurnResult.response`` (``run``
        #: drew the answer as it came): a long one is spilled to a file and
        #: left out of memory where every observer can do without.
        self.keep_answer = keep_answer
        self.diffs = diffs
        self.engine: Engine = host.load_engine()
        self.nursery = nursery
        self.roundtrips = roundtrips
        self.sink = sink
        self.services = list(services)
        self.say = say
        #: Who hears that a turn waits for another command's turn on its session.
        self.on_wait = on_wait or say
        self.wait_hint = wait_hint
        self.exit_on_third_interrupt = exit_on_third_interrupt
        self.layer: TurnLayer | None = None
        self._held: HeldDriver | None = None
        self._turn_scope: trio.CancelScope | None = None
        #: Set while a turn waits for its session's turn lock.
        self._queue_scope: trio.CancelScope | None = None
        #: Set while a finished turn waits for host tools that outlived their park.
        self._tools_waiting = False
        self._interrupts = 0
        self.turns = 0
        #: The last finished turn (``None`` before one, or when it was left behind).
        self.result: TurnResult | None = None

    @classmethod
    @contextlib.asynccontextmanager
    async def open(
        cls,
        host: Host,
        *,
        cwd: str,
        sink: Callable[[HostEvent], None] | None = None,
        say: Say = say_stderr,
        start: bool = True,
        exit_on_third_interrupt: bool = False,
        diffs: DiffSource | None = None,
        on_wait: Say | None = None,
        wait_hint: str = WAIT_HINT,
        keep_answer: bool = True,
    ) -> AsyncIterator[SessionRuntime]:
        """Round-trips, services and (with ``start``) the agent, torn down in
        reverse order when the block ends, however it ends."""
        from agy_host.service.roundtrips import RoundTripSettings, ServiceContext, open_roundtrips

        settings = RoundTripSettings.from_config(host.config.bridge)
        async with open_roundtrips(settings) as roundtrips, trio.open_nursery() as nursery:
            try:
                context = ServiceContext(
                    roundtrips=roundtrips,
                    engine_name=host.load_engine().ENGINE_NAME,
                    cwd=cwd,
                    config=host.config,
                    env=host.env,
                    tools=host.plugins.tools,
                    warn=host.warn,
                )
                await host.start_services(nursery, context)
                session = cls(
                    host,
                    nursery=nursery,
                    roundtrips=roundtrips,
                    sink=sink,
                    services=host.services,
                    say=say,
                    exit_on_third_interrupt=exit_on_third_interrupt,
                    diffs=diffs,
                    on_wait=on_wait,
                    wait_hint=wait_hint,
                    keep_answer=keep_answer,
                )
                try:
                    if start:
                        await session.start()
                    yield session
                finally:
                    await session.aclose()
            finally:
                nursery.cancel_scope.cancel()

    # -- the agent ------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """A turn is in progress."""
        return self._turn_scope is not None

    @property
    def driver(self) -> TurnDriver | None:
        return self._held.driver if self._held is not None else None

    async def start(self) -> None:
        """Start the agent now (turns start it on demand otherwise)."""
        from agy_host.runtime.turn_layer import TurnLayer

        if self.layer is not None:
            return
        driver = await self.held_driver()
        self.layer = TurnLayer(
            engine=self.engine,
            driver=driver,
            store=self.host.store,
            plugins=self.host.plugins,
            config=self.host.config,
            sink=self.sink,
            warn=self.host.warn,
            roundtrips=self.roundtrips,
            env=self.host.env,
            diffs_wanted=lambda: self.diffs is not None and self.diffs.wanted,
            spill_answer=not self.keep_answer,
        )

    async def held_driver(self) -> TurnDriver:
        """The driver this runtime's turns run on: its own, started in a task of
        its own on first use. (A keeper's lane runs on a driver it shares with
        other sessions: :mod:`agy_host.keeper.shared`.)"""
        if self._held is None or self._held.driver is None:
            held = HeldDriver(self.host, self.engine)
            await self.nursery.start(held.hold)
            self._held = held
        assert self._held.driver is not None
        return self._held.driver

    async def aclose(self) -> None:
        """Stop the agent and wait until it is gone (the session can start it again)."""
        if self.layer is not None and self.roundtrips is not None:
            self.roundtrips.detach(self.layer)
        self.layer = None
        await self.release_driver()

    async def release_driver(self) -> None:
        """End the driver this runtime started (a lane leaves a shared one be)."""
        held, self._held = self._held, None
        if held is not None:
            await held.close()

    async def switch(self, host: Host) -> None:
        """Continue on ``host``'s engine with the same round-trips and services;
        the current agent stays up until the new one started (so a failed
        switch leaves the session as it was)."""
        other = SessionRuntime(
            host,
            nursery=self.nursery,
            roundtrips=self.roundtrips,
            sink=self.sink,
            services=self.services,
            say=self.say,
            exit_on_third_interrupt=self.exit_on_third_interrupt,
            diffs=self.diffs,
            on_wait=self.on_wait,
            keep_answer=self.keep_answer,
            wait_hint=self.wait_hint,
        )
        await other.start()
        await self.aclose()
        self.host, self.engine, self.layer, self._held = host, other.engine, other.layer, other._held

    @property
    def agent_commands(self) -> list[AgentCommand]:
        """The slash commands the agent advertised last; empty before it did."""
        return self.layer.agent_commands if self.layer is not None else []

    def snapshot(self) -> DriverSnapshot | None:
        """The driver's own account for ``doctor`` (best effort)."""
        driver = self.driver
        if driver is None:
            return None
        try:
            return driver.snapshot()
        except Exception as exc:
            self.host.warn(f"the driver could not describe itself: {describe_error(exc)}")
            return None

    # -- turns ------------------------------------------------------------------------

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
        caller stopped waiting for it (:meth:`interrupt` twice): the agent is
        then closed and started afresh by the next turn.

        The turn first takes its session's turn lock (:meth:`_queue`): while
        another command runs a turn on the session this one waits, and ends
        without running when told not to wait (exit 7) or interrupted while
        it waits (exit 130)."""
        await self.start()
        layer = self.layer
        assert layer is not None
        s = settings or TurnSettings()
        result: TurnResult | None = None
        self._interrupts = 0
        queued = await self._queue(layer, session, s)
        if isinstance(queued, TurnResult):
            return queued
        # Held until the agent is done with the turn, also one left behind.
        with queued:
            started = trio.current_time()
            with trio.CancelScope() as scope:
                self._turn_scope = scope
                try:
                    result = await self._run(layer, session, list(blocks), cwd=cwd, s=s, message_count=message_count)
                finally:
                    self._turn_scope = None
            self.turns += 1
            self.result = result
            if scope.cancelled_caught or result is None:
                from agy_host.contract.events import TurnEnded

                # Renderers and the transcript still see the turn end; the
                # conversation, when the engine named one, is bound already.
                left = layer.handle
                layer.emit(
                    TurnEnded(
                        stop_reason="aborted",
                        duration_s=trio.current_time() - started,
                        conversation_id=left.conversation_id if left is not None else None,
                        error=STOPPED_WAITING,
                    )
                )
                await self.aclose()
                return None
            return result

    async def _queue(
        self, layer: TurnLayer, session: str, s: TurnSettings
    ) -> contextlib.AbstractContextManager[object] | TurnResult:
        """Take the session's turn lock, then re-read the store: the binding
        this turn continues is the one the previous holder left. A
        :class:`TurnResult` when the turn does not run: the session is busy
        and ``s.wait`` is off, or the wait was interrupted. Without a lock
        file (an unwritable state dir, said as a warning) the turn runs
        unlocked rather than not at all."""
        from agy_host.runtime.turn_lock import Busy, acquire, lock_path

        path = lock_path(self.host.state_dir, self.engine.store_key(session))
        started = trio.current_time()

        def waiting(holder: str) -> None:
            self.on_wait(f"agy-host: session {session!r} is busy: {holder}; waiting for it to end ({self.wait_hint})")

        lock: TurnLock | None = None
        with trio.CancelScope() as scope:
            self._queue_scope = scope
            try:
                lock = await acquire(path, wait=s.wait, on_wait=waiting)
            except Busy as busy:
                error = f"session {session!r} is busy: {busy.holder}"
                return busy_turn(self.host, self.engine, layer.emit, session=session, settings=s, error=error)
            except OSError as exc:
                self.host.warn(
                    f"cannot lock session {session!r} for this turn ({describe_error(exc)}); "
                    "another command on it at the same time may lose an exchange"
                )
            finally:
                self._queue_scope = None
        if scope.cancelled_caught:
            return gave_up_waiting(session, trio.current_time() - started)
        try:
            self.host.store.reload()
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        return lock if lock is not None else contextlib.nullcontext()

    async def _run(
        self,
        layer: TurnLayer,
        session: str,
        blocks: list[PromptBlock],
        *,
        cwd: str,
        s: TurnSettings,
        message_count: int | None,
    ) -> TurnResult:
        """The turn, its host tools, and follow-up turns for late tool results."""
        from agy_host.runtime.turn_layer import ToolResultSink

        tools = {tool.name: tool for tool in self.host.plugins.tools()}
        found = [x for x in [*self.services, self.driver] if isinstance(x, ToolResultSink)]
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
                additional_directories=s.additional_directories,
                max_tokens=s.max_tokens,
                max_cost=s.max_cost,
                resume=s.resume,
            )
            while result.stop_reason == "tool_use":
                result = await layer.resolve_tool_use(tools, sinks)
            if result.stop_reason == "aborted":
                return result
            # Only a turn that went well gets a follow-up: one after a failure would hide its exit code.
            no_follow_up = (
                f"at once: its turn ended with exit {result.exit_code}, and no follow-up turn is sent after that"
                if result.exit_code != ExitCode.OK
                else f"at once: the {MAX_LATE_FOLLOW_UPS} follow-up turns of this prompt were sent"
                if follow_ups >= MAX_LATE_FOLLOW_UPS
                else ""
            )
            await self._wait_for_detached_tools(no_follow_up)
            late = self.roundtrips is not None and self.roundtrips.has_late_results
            if no_follow_up or not late:
                return result
            follow_ups += 1
            prompt = []  # the late results are the whole prompt

    async def _wait_for_detached_tools(self, no_follow_up: str) -> None:
        """The turn is over, and host tools that outlived their park still run:
        their results go to the agent in a follow-up turn, so wait for them,
        each at most until its turn's deadline. An interrupt cancels them
        (:meth:`abort`). When no follow-up turn will be sent (``no_follow_up``
        says why) they are cancelled at once instead, said with that reason."""
        if self.roundtrips is None or not self.roundtrips.tools.detached:
            return
        if no_follow_up:
            await self.roundtrips.tools.drop_detached(no_follow_up)
            return
        self._tools_waiting = True
        try:
            await self.roundtrips.tools.wait_detached()
        finally:
            self._tools_waiting = False

    def abort(self, reason: str = "user") -> bool:
        """Ask the agent to stop the running turn (a turn still waiting for
        its session stops waiting, one waiting for its detached host tools
        cancels them); ``False`` when none runs."""
        if self._leave_queue():
            return True
        if self._turn_scope is None or self.layer is None:
            return False
        if self._tools_waiting and self.roundtrips is not None:
            self.roundtrips.tools.cancel_detached("as the user stopped waiting for it")
            return True
        self.layer.abort(reason)
        return True

    def stop_waiting(self) -> bool:
        """Leave the running turn behind at once; ``False`` when none runs."""
        if self._leave_queue():
            return True
        if self._turn_scope is None:
            return False
        self._turn_scope.cancel()
        return True

    def interrupt(self, sig: signal.Signals | None = None) -> bool:
        """Ctrl-C (or ``sig``, SIGTERM or SIGHUP): abort the running turn,
        then stop waiting, then (for a front-end that asked for it) SIGKILL
        every agent group and exit. ``False`` when no turn is running (the
        caller decides)."""
        from agy_host.engine.process import kill_every_group
        from agy_host.runtime.signals import signal_exit_code

        if self._queue_scope is not None:
            self.say("\nagy-host: stopped waiting for the session; nothing was sent")
            return self._leave_queue()
        if self._turn_scope is None:
            return False
        self._interrupts += 1
        what = "interrupting" if sig is None else f"{sig.name}: ending"
        again = "Ctrl-C" if sig is None else sig.name
        if self._interrupts == 1:
            self.say(f"\nagy-host: {what} the turn ({again} again to stop waiting)")
            self.abort("interrupted" if sig is None else sig.name)
        elif self._interrupts == 2 or not self.exit_on_third_interrupt:
            self.say("agy-host: not waiting for the agent any longer")
            self.stop_waiting()
        else:
            kill_every_group()
            os._exit(signal_exit_code(sig))
        return True

    def _leave_queue(self) -> bool:
        """Stop waiting for the session's turn lock; ``False`` when not waiting."""
        if self._queue_scope is None:
            return False
        self._queue_scope.cancel()
        return True

    def write_last_run(self, session: str, result: TurnResult | None) -> None:
        """What ``doctor`` shows as the last run (best effort)."""
        snapshot = self.snapshot()
        if snapshot is None:
            return
        from agy_host.runtime.last_run import LastRun, write_last_run
        from agy_host.runtime.store import utc_now

        write_last_run(
            self.host,
            LastRun(
                written_at=utc_now(),
                session=session,
                engine=self.engine.ENGINE_NAME,
                exit_code=result.exit_code if result is not None else ExitCode.INTERRUPTED,
                stop_reason=result.stop_reason if result is not None else "",
                snapshot=snapshot,
                commands=self.agent_commands,
            ),
        )


__all__ = [
    "MAX_LATE_FOLLOW_UPS",
    "SessionRuntime",
    "TurnSettings",
    "WAIT_HINT",
    "busy_turn",
    "describe_error",
    "gave_up_waiting",
    "say_nothing",
    "say_stderr",
]
