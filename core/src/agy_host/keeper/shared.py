"""The agent a warm session runs on, and the sessions that share one.

An :class:`Agent` is what the keeper holds for one agent process: a host
built from the first command's :class:`~agy_host.keeper.wire.HostSpec` and
its runtime (round-trips, services, the engine's driver). Each warm session
on it runs its turns on a :class:`Lane`: a
:class:`~agy_host.runtime.session.SessionRuntime` of its own (its turn
layer, its turn scope for Ctrl-C and aborts, its events, its diffs) over the
agent's driver.

Where the engine runs several conversations in one process
(``EngineCapabilities.serves_many_sessions``: the harness), every warm
session whose engine, agent, working directory, environment and overrides
are equal (:func:`share_key`) runs on one agent: one harness process serves
them all, each session its own conversation. Elsewhere (stream-json's ``agy``
holds one conversation; an ACP agent's bridge and MCP servers belong to one
command) each session has an agent of its own, as before.

What the agent asks is answered by the command attached to the session that
asks: a permission request and a question name their host session, and the
agent routes them to that session's client (:meth:`Agent.attached`); a host
tool's call, which names none, goes to the session whose turn runs it.

Crash isolation: an agent that dies takes down the sessions on it and no
other (their turns end as on the cold path, their next command finds them
not alive and starts a new agent, continuing the conversation); a session
that leaves a shared agent (stopped, expired, replaced) closes its own
conversation only, and the agent ends with its last session. A lane that
stops waiting for a turn (the second Ctrl-C) closes an agent of its own, as
a cold command does, but never a shared one: the other sessions' turns run
on it, and the engine ends the abandoned turn itself (the harness halts it,
then closes its conversation).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import trio

from agy_host.engine.turn import DriverTurns
from agy_host.keeper import wire
from agy_host.keeper.profile import profile_of
from agy_host.keeper.remote_host import RemoteHost
from agy_host.runtime.session import SessionRuntime

if TYPE_CHECKING:
    from agy_host.contract.events import HostEvent
    from agy_host.contract.rendering import DiffSource
    from agy_host.engine.driver import DriverSnapshot, TurnDriver, TurnHandle, TurnRequest
    from agy_host.keeper.proxy_tools import CallClient
    from agy_host.keeper.relay import Relay

#: The session whose turn is running in this task (set by :meth:`Agent.turn_of`):
#: a host tool called from the turn's own task answers to that session's client.
_CURRENT: contextvars.ContextVar[str] = contextvars.ContextVar("agy_host_keeper_session", default="")
#: How long a session leaving its agent waits for the agent to end.
CLOSE_BOUND_S = 10.0


class OnAgent(Protocol):
    """A warm session as its agent sees it (a :class:`~agy_host.keeper.warm.WarmSession`):
    its name, and the client attached for its turn."""

    @property
    def name(self) -> str: ...
    @property
    def relay(self) -> Relay | None: ...


def share_key(cwd: str, spec: wire.HostSpec) -> str | None:
    """What sessions must have equal to share an agent: a warm profile
    without the session's name (:func:`~agy_host.keeper.profile.profile_of`);
    ``None`` when the command's sessions never share (a program's own tools
    run in its one client, which a shared agent could not tell apart)."""
    return None if spec.tools else profile_of("", cwd, spec)


class Agent:
    """One agent process in the keeper and the warm sessions on it (see the
    module docstring). ``key``: the :func:`share_key` other sessions join it
    by, ``None`` for an agent of one session."""

    def __init__(self, cwd: str, spec: wire.HostSpec, key: str | None, warn: Callable[[str], None]) -> None:
        self.cwd = cwd
        self.spec = spec
        self.key = key
        self.log = warn
        self.host: RemoteHost | None = None
        self.runtime: SessionRuntime | None = None
        #: The warm sessions on this agent, by name.
        self.lanes: dict[str, OnAgent] = {}
        self._starting = trio.Lock()
        self._closing = trio.Event()
        self._closed = trio.Event()

    # -- its life ----------------------------------------------------------------------

    async def hold(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Build the host and open its runtime (the agent itself starts with
        the first turn), report ready, keep them until the last session left."""
        from agy_host.cli.turn_options import apply_overrides
        from agy_host.keeper.proxy_tools import ProxyTools

        spec = self.spec
        host = RemoteHost(
            self.attached,
            spec,
            env=spec.env,
            engine=spec.engine,
            agent=spec.agent,
            permissions=spec.permissions,
            trace=spec.trace,
            warn=self._warn,
            extra_plugins=[ProxyTools(spec.tools, self._tool_caller)] if spec.tools else (),
        )
        apply_overrides(host, spec.system_prompt, spec.digest)
        self.host = host
        try:
            async with SessionRuntime.open(host, cwd=self.cwd, say=_quiet, start=False) as runtime:
                self.runtime = runtime
                task_status.started()
                await self._closing.wait()
        finally:
            self.runtime = None
            host.close()
            self._closed.set()

    @property
    def shares(self) -> bool:
        """Other sessions may join this agent: a share key, and an engine that
        runs several conversations in one process."""
        runtime = self.runtime
        return self.key is not None and runtime is not None and runtime.engine.capabilities.serves_many_sessions

    @property
    def usable(self) -> bool:
        """Open, and its process (when started) not dead: a new session may join."""
        if self.runtime is None or self._closing.is_set():
            return False
        snapshot = self.snapshot()
        return snapshot is None or snapshot.state not in ("dead", "closed")

    def snapshot(self) -> DriverSnapshot | None:
        return self.runtime.snapshot() if self.runtime is not None else None

    def join(self, warm: OnAgent) -> None:
        self.lanes[warm.name] = warm

    async def leave(self, warm: OnAgent) -> None:
        """``warm`` is done with this agent: its conversation is closed where
        the agent goes on for others, and the agent ends with its last session."""
        if self.lanes.get(warm.name) is warm:
            del self.lanes[warm.name]
        with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_BOUND_S):
            # a driver that ends one session's conversation and keeps the others' (the harness)
            close_session = getattr(self.runtime.driver if self.runtime is not None else None, "close_session", None)
            if self.lanes and callable(close_session):
                try:
                    await close_session(warm.name)
                except Exception as exc:
                    self.log(f"session {warm.name!r}: closing its conversation failed: {type(exc).__name__}: {exc}")
            if not self.lanes:
                self._closing.set()
                await self._closed.wait()

    async def driver(self) -> TurnDriver:
        """The agent's driver, started by the first turn that needs it (one
        start, however many sessions ask at once)."""
        assert self.runtime is not None
        async with self._starting:
            return await self.runtime.held_driver()

    # -- who answers ---------------------------------------------------------------------

    def attached(self, session: str) -> Relay | None:
        """The client attached to ``session``'s turn; for a request that names
        no session (a host tool's question), the client of the turn this task
        runs, else of the only session on the agent."""
        warm = self.lanes.get(session) or self.lanes.get(_CURRENT.get())
        if warm is None and len(self.lanes) == 1:
            [warm] = self.lanes.values()
        return warm.relay if warm is not None else None

    def turn_of(self, session: str) -> contextvars.Token[str]:
        """Mark the running task as ``session``'s turn (see :meth:`attached`)
        until :meth:`forget_turn` is given the returned mark."""
        return _CURRENT.set(session)

    def forget_turn(self, mark: contextvars.Token[str]) -> None:
        _CURRENT.reset(mark)

    def _tool_caller(self) -> CallClient | None:
        relay = self.attached("")
        return relay.call_tool if relay is not None else None

    def _warn(self, message: str) -> None:
        """The host's warnings concern every session on the agent."""
        for warm in list(self.lanes.values()):
            if warm.relay is not None:
                warm.relay.warning(message)


class Lane(SessionRuntime):
    """One warm session's turns on its :class:`Agent`: its own turn layer,
    turn scope, events and diffs; the agent's driver, round-trips and
    services."""

    def __init__(self, agent: Agent, session: str, *, sink: Callable[[HostEvent], None], diffs: DiffSource) -> None:
        owner = agent.runtime
        assert owner is not None
        super().__init__(
            owner.host,
            nursery=owner.nursery,
            roundtrips=owner.roundtrips,
            sink=sink,
            services=owner.services,
            say=_quiet,
            diffs=diffs,
        )
        self.agent = agent
        self.session = session

    @property
    def driver(self) -> TurnDriver | None:
        owner = self.agent.runtime
        return owner.driver if owner is not None else None

    async def held_driver(self) -> TurnDriver:
        return _OwnTurns(await self.agent.driver(), self)

    async def release_driver(self) -> None:
        """A turn left behind (or the session leaving): an agent of this
        session's own ends (the next turn starts it again), a shared one goes on."""
        owner = self.agent.runtime
        if owner is not None and not self.agent.shares:
            await owner.release_driver()


class _OwnTurns:
    """The agent's driver as one lane's turn layer sees it: the parked turn
    it re-enters after a host tool, and the one whose clocks a resolved park
    resumes, are this session's, never another's on the same agent (the
    driver's own ``reentry`` and ``kick_idle`` take its newest parked turn)."""

    def __init__(self, driver: TurnDriver, lane: Lane) -> None:
        self._driver = driver
        self._lane = lane
        self.engine_name = driver.engine_name

    async def run(self, request: TurnRequest) -> TurnHandle:
        return await self._driver.run(request)

    def reentry(self) -> TurnHandle | None:
        layer = self._lane.layer
        handle = layer.handle if layer is not None else None
        return handle if handle is not None and not handle.closed else None

    def kick_idle(self) -> None:
        turns = getattr(self._driver, "turns", None)
        if isinstance(turns, DriverTurns):  # every engine of this repository keeps its turns there
            turns.kick_idle(self._lane.session)
        else:
            self._driver.kick_idle()

    def snapshot(self) -> DriverSnapshot:
        return self._driver.snapshot()

    async def aclose(self) -> None:
        """The agent's driver is the agent's to close (:meth:`Lane.release_driver`)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._driver, name)


def _quiet(_message: str) -> None:
    """The runtime's own interrupt messages: the client says them where its user is."""


__all__ = ["CLOSE_BOUND_S", "Agent", "Lane", "OnAgent", "share_key"]
