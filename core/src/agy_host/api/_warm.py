"""A Python session on its warm agent, as ``agy-host run --session NAME`` runs.

With ``session="NAME"`` (or ``keep_alive=`` minutes) a session's turns run on
the session's warm agent, held by this build's keeper (:mod:`agy_host.keeper`):
started there by the first turn and kept for ``keep_alive`` idle minutes
after each, so the next program or command on the session starts nothing.

This program still decides everything only it can decide. The keeper relays
the agent's permission requests and questions to this program's broker
(``permissions=``, ``answers=``, ``on_question=``), and the program's own
``tools=`` run here, in this process, when the agent calls them through the
warm agent: the keeper knows only their specs
(:mod:`agy_host.keeper.proxy_tools`). Tools of installed plugins run in the
keeper, where their plugins are.

What cannot cross to another process runs cold, said on the ``agy_host``
logger (:func:`cold_reason`): ``plugins=`` (objects of this program) and an
engine registered in this process. A keeper that cannot be reached or
started runs the session cold as well (a warning); one that ends mid-turn is
:class:`~agy_host.api.errors.KeeperLost`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING

import trio

from agy_host.api.errors import AgyHostError, KeeperLost
from agy_host.keeper.keep_alive import keep_alive_s as keep_alive_rule

if TYPE_CHECKING:
    from agy_host.api._loops import Runtime
    from agy_host.api._setup import Options
    from agy_host.contract.events import HostEvent
    from agy_host.contract.prompt import PromptBlock
    from agy_host.contract.turn_result import TurnResult
    from agy_host.keeper.client import KeeperRefused
    from agy_host.runtime.host import Host
    from agy_host.runtime.session import SessionRuntime, TurnSettings

log = logging.getLogger("agy_host")

Sink = Callable[["HostEvent"], None]


def keep_alive_s(host: Host, options: Options) -> float:
    """How long the session's agent stays warm after a turn (seconds):
    ``keep_alive=``, else the config's for a named session; an unnamed
    session keeps nothing unless asked."""
    return keep_alive_rule(options.keep_alive, host.config.turn.keep_alive_minutes, named=options.named)


def cold_reason(host: Host, options: Options) -> str | None:
    """Why this session cannot run on a warm agent, or ``None``: the keeper
    builds the session's host from what crosses a socket, so objects of this
    program's own (its plugins, an engine it registered) cannot go there."""
    if options.plugins:
        return "plugins= are objects of this program, which the keeper cannot load"
    engine = host.engine_choice().name
    if engine in host.plugins.engines():
        return f"engine {engine!r} is registered in this program only, so the keeper cannot load it"
    return None


def open_runtime(host: Host, options: Options, sink: Sink) -> contextlib.AbstractAsyncContextManager[Runtime]:
    """The session's runtime: its warm agent's when it may have one, else a
    local one that ends with the session."""
    keep = keep_alive_s(host, options)
    if keep > 0:
        why = cold_reason(host, options)
        if why is None:
            return WarmRuntime.open(host, options, sink, keep)
        say = log.warning if options.keep_alive else log.info  # asked for, or only the default
        say("agy-host: session %r runs without a warm agent: %s", options.session, why)
    return _cold(host, options, sink)


def _cold(host: Host, options: Options, sink: Sink) -> contextlib.AbstractAsyncContextManager[SessionRuntime]:
    from agy_host.api._setup import WAITING
    from agy_host.runtime.session import SessionRuntime, say_nothing

    return SessionRuntime.open(host, cwd=options.cwd, sink=sink, say=say_nothing, **WAITING)


class WarmRuntime:
    """A session's turns through the keeper, with this program attached: the
    :class:`~agy_host.api._loops.Runtime` a warm :class:`~agy_host.Session` drives.

    Cancelling a turn aborts it in the keeper (the agent gets its cancel);
    stopping waiting leaves it there (the keeper aborts a turn whose client
    left). A turn still queued behind another program's on the same warm
    agent, or not yet sent, is left at once: nothing was sent. When no keeper
    can be had, the session continues on a local runtime."""

    def __init__(self, host: Host, options: Options, sink: Sink, keep_alive_s: float, nursery: trio.Nursery) -> None:
        from agy_host.keeper.client import RemoteRuntime
        from agy_host.runtime.session import say_nothing

        self.host = host
        self.engine = host.load_engine()
        self.nursery = nursery
        self.keep_alive_s = keep_alive_s
        self._options = options
        self._sink = sink
        self._remote = RemoteRuntime(host, sink=self._event, say=say_nothing, tools=options.host_tools)
        self._local: SessionRuntime | None = None
        self._closing = trio.Event()
        self._local_closed = trio.Event()
        self._scope: trio.CancelScope | None = None
        #: The turn waits behind another program's turn on the warm agent.
        self._queued = False
        self._aborted = False
        self._nothing_sent = False

    @property
    def was_warm(self) -> bool:
        """The last turn ran on a warm agent that was alive before it."""
        return self._local is None and self._remote.was_warm

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, host: Host, options: Options, sink: Sink, keep_alive_s: float) -> AsyncIterator[WarmRuntime]:
        async with trio.open_nursery() as nursery:
            runtime = cls(host, options, sink, keep_alive_s, nursery)
            try:
                yield runtime
            finally:
                await runtime._close()
                nursery.cancel_scope.cancel()

    async def turn(
        self, session: str, blocks: Sequence[PromptBlock], *, cwd: str, settings: TurnSettings | None = None
    ) -> TurnResult | None:
        """One turn on the warm agent; ``None`` when this program stopped
        waiting for it (:meth:`stop_waiting`)."""
        from agy_host.keeper.client import KeeperGone, KeeperRefused, KeeperUnavailable, run_request
        from agy_host.runtime.session import TurnSettings

        s = settings or TurnSettings()
        if self._local is None:
            request = run_request(
                self.host,
                session,
                list(blocks),
                cwd=cwd,
                settings=s,
                keep_alive_s=self.keep_alive_s,
                no_wait=not s.wait,
                system_prompt=self._options.system_prompt,
                trace=self._options.trace,
                tools=self._options.host_tools,
            )
            self._queued = self._aborted = self._nothing_sent = False
            started = trio.current_time()
            try:
                with trio.CancelScope() as self._scope:
                    return await self._remote.turn(session, request)
                return self._left(session, started)
            except KeeperUnavailable as exc:
                log.warning("agy-host: warm agents are not available (%s); session %r runs without one", exc, session)
                await self.nursery.start(self._hold_local)
            except KeeperRefused as exc:
                return self._refused(session, s, exc)
            except KeeperGone as exc:
                raise KeeperLost(f"{exc}; the session binding is kept, the next turn starts the agent again") from None
            finally:
                self._scope = None
        assert self._local is not None
        return await self._local.turn(session, blocks, cwd=cwd, settings=s)

    def abort(self, reason: str = "cancelled by the program") -> bool:
        """Ask the agent to stop the running turn (in the keeper); a turn not
        sent yet, or queued behind another's, is left at once."""
        if self._local is not None:
            return self._local.abort(reason)
        scope = self._scope
        if scope is None:
            return False
        if self._queued or not self._remote.running:
            self._nothing_sent = True
            scope.cancel()
        elif not self._aborted:
            self._aborted = True
            self._remote.interrupt()  # the keeper's first interrupt: abort
        return True

    def stop_waiting(self) -> bool:
        """Leave the running turn at once; the keeper aborts it, as it does
        for any client that leaves mid-turn."""
        if self._local is not None:
            return self._local.stop_waiting()
        if self._scope is None:
            return False
        self._scope.cancel()
        return True

    # -- what the keeper sends -----------------------------------------------------------

    def _event(self, event: HostEvent) -> None:
        from agy_host.contract.events import Notice

        if isinstance(event, Notice) and event.code == "session-busy":
            # the keeper queues this turn behind another's on the warm agent:
            # said as a local runtime says a busy session (the logger), in the API's words
            from agy_host.api._setup import WAITING

            self._queued = True
            WAITING["on_wait"](
                f"agy-host: session {self._options.session!r} is busy: its warm agent is running a turn "
                f"for another command; waiting for it to end ({WAITING['wait_hint']})"
            )
            return
        self._queued = False
        self._sink(event)

    def _left(self, session: str, started: float) -> TurnResult | None:
        """The turn this program left: ``None`` (stopped waiting for the
        agent), or, when nothing had been sent, the local runtime's result
        for a wait that was given up."""
        if not self._nothing_sent:
            return None
        from agy_host.runtime.unstarted_turns import gave_up_waiting

        return gave_up_waiting(session, trio.current_time() - started)

    def _refused(self, session: str, s: TurnSettings, refused: KeeperRefused) -> TurnResult:
        """``wait=False`` on a warm agent busy with another command's turn:
        the local runtime's busy turn (exit 7, error kind ``busy``)."""
        from agy_host.exit_codes import ExitCode
        from agy_host.runtime.unstarted_turns import busy_turn

        if refused.code != ExitCode.SESSION_BUSY:
            raise AgyHostError(str(refused), exit_code=refused.code)
        return busy_turn(self.host, self.engine, self._sink, session=session, settings=s, error=str(refused))

    # -- without a keeper -------------------------------------------------------------------

    async def _hold_local(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """A local runtime for the rest of the session, held in this
        runtime's nursery (trio's scopes close in the task that opened them)."""
        try:
            async with _cold(self.host, self._options, self._sink) as local:
                self._local = local
                task_status.started()
                await self._closing.wait()
        finally:
            self._local_closed.set()

    async def _close(self) -> None:
        self._closing.set()
        if self._local is not None:
            with trio.CancelScope(shield=True):
                await self._local_closed.wait()


__all__ = ["WarmRuntime", "cold_reason", "keep_alive_s", "open_runtime"]
