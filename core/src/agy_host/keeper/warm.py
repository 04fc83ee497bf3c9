"""One warm session in the keeper: the agent it runs on, its runtime, and
the client the turn belongs to.

A :class:`WarmSession` runs on an :class:`~agy_host.keeper.shared.Agent`
built from the first command's :class:`HostSpec` (its environment, engine
choice and overrides; an agent several sessions share where the engine
allows it) and keeps its own runtime on it (a
:class:`~agy_host.keeper.shared.Lane`) open between turns, so the next
command's turn runs on the same live agent. Whatever only the command
can decide is relayed to the client attached for the turn
(:class:`Relay`): the host's events go to its renderer, permission requests
and questions to its broker (its policy, rules, terminal and callbacks), and
calls of its program's own tools to that program
(:mod:`agy_host.keeper.proxy_tools`).
With nobody attached (a client that went away mid-turn) a request is
answered ``cancelled``, never by the keeper.

:func:`~agy_host.keeper.profile.profile_of` says when a warm session no
longer fits a command (:mod:`agy_host.keeper.profile`); the keeper's host,
whose person is the attached client, is
:class:`~agy_host.keeper.remote_host.RemoteHost`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import trio

from agy_host.builtins.render_common import is_edit
from agy_host.contract.events import CommandsUpdated, ToolCard, TurnStarted
from agy_host.keeper import wire
from agy_host.keeper.profile import config_digest, profile_of

if TYPE_CHECKING:
    from agy_host.contract.events import HostEvent
    from agy_host.contract.rendering import DiffSource
    from agy_host.keeper.relay import Relay
    from agy_host.keeper.remote_host import RemoteHost
    from agy_host.keeper.shared import Agent
    from agy_host.runtime.session import SessionRuntime, TurnSettings
    from agy_host.runtime.turn_layer import TurnResult


class WarmSession:
    """A session's live runtime on its agent, held open between commands."""

    def __init__(self, name: str, cwd: str, spec: wire.HostSpec, keep_alive_s: float, agent: Agent) -> None:
        self.name = name
        self.cwd = cwd
        self.spec = spec
        self.agent = agent
        self.profile = profile_of(name, cwd, spec)
        #: The config file's digest the agent was built with (:func:`differences` names a change).
        self.config = config_digest(spec.env)
        self.keep_alive_s = keep_alive_s
        self.relay: Relay | None = None
        self.runtime: SessionRuntime | None = None
        self.host: RemoteHost | None = None
        self.diffs: DiffSource | None = None
        self.turns = 0
        #: The store's binding after this agent's last turn (see :meth:`outdated`).
        self.seen: tuple[str, str] | None = None
        self.last_used = time.monotonic()
        self.turn_lock = trio.Lock()
        self.model = ""
        self._closing = trio.Event()
        self._closed = trio.Event()

    @property
    def running(self) -> bool:
        return self.turn_lock.locked()

    @property
    def keeps_always(self) -> bool:
        """The agent kept an "always" answer a command gave (it offered no
        one-time option): it must not serve another command."""
        host = self.agent.host
        return host is not None and self.name in host.kept_always

    @property
    def idle_s(self) -> float:
        return 0.0 if self.running else time.monotonic() - self.last_used

    @property
    def expired(self) -> bool:
        return not self.running and self.idle_s >= self.keep_alive_s

    @property
    def alive(self) -> bool:
        """The runtime is open and its agent (when started) still runs."""
        if self.runtime is None or self._closing.is_set():
            return False
        snapshot = self.runtime.snapshot()
        return snapshot is None or snapshot.state not in ("dead", "closed")

    def agent_pid(self) -> int | None:
        snapshot = self.runtime.snapshot() if self.runtime is not None else None
        return snapshot.pid if snapshot is not None else None

    async def hold(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Open this session's lane on its agent, report ready, keep it until
        :meth:`close`; then leave the agent (which ends with its last session)."""
        from agy_host.contract.rendering import DiffSource
        from agy_host.keeper.shared import Lane

        agent = self.agent
        assert agent.host is not None
        self.host = agent.host
        diffs = self.diffs = DiffSource(agent.host.plugins.render_diff, self.cwd)
        lane = Lane(agent, self.name, sink=self._sink, diffs=diffs)
        agent.join(self)
        self.runtime = lane
        try:
            task_status.started()
            await self._closing.wait()
        finally:
            self.runtime = None
            with trio.CancelScope(shield=True):
                await lane.aclose()
                await agent.leave(self)
            self._closed.set()

    async def close(self) -> None:
        """End the agent gracefully (session/close, then its process group)."""
        self._closing.set()
        with trio.CancelScope(shield=True), trio.move_on_after(10):
            await self._closed.wait()

    async def run(self, relay: Relay, request: wire.RunTurn, settings: TurnSettings) -> tuple[TurnResult | None, bool]:
        """One turn with ``relay`` attached; ``(result, was_warm)``."""
        assert self.runtime is not None
        was_warm = self.runtime.layer is not None and self.alive
        self.relay = relay
        self.keep_alive_s = request.keep_alive_s
        if self.diffs is not None:  # this command's renderer decides
            self.diffs.wanted = request.host.draws_diffs
        mark = self.agent.turn_of(self.name)
        try:
            result = await self.runtime.turn(request.session, request.prompt, cwd=request.cwd, settings=settings)
        finally:
            self.agent.forget_turn(mark)
            self.relay = None
            self.turns += 1
            self.last_used = time.monotonic()
        if result is not None:
            self.runtime.write_last_run(request.session, result)
        self.seen = self._binding()
        if settings.model:
            self.model = settings.model
        return result, was_warm

    def _binding(self) -> tuple[str, str] | None:
        """The session's binding as the store has it: (conversation, last write)."""
        runtime = self.runtime
        if runtime is None:
            return None
        try:
            store = runtime.host.store
            store.reload()  # another process may have written it (a moment under the store's lock)
            found = store.get(runtime.engine.store_key(self.name))
        except Exception:
            return None
        return (found.conversation_id, found.updated_at) if found is not None else None

    def outdated(self) -> bool:
        """Another process ran a turn on the session since this agent's last
        one (a cold command, another build, the Python API): the live agent
        does not have that exchange, so it must not answer the next turn."""
        return self.seen is not None and self._binding() != self.seen

    def _sink(self, event: HostEvent) -> None:
        relay = self.relay
        if relay is None:
            return
        diffs = self.diffs
        drawn = isinstance(event, ToolCard) and event.status == "done" and is_edit(event)
        if drawn and diffs is not None and diffs.wanted:
            assert isinstance(event, ToolCard)
            relay.diff(event.call_id, diffs.render(event))  # before the card: the client draws them together
        relay.event(event)
        if isinstance(event, TurnStarted) and self.runtime is not None and self.runtime.layer is not None:
            # A warm agent advertised its commands to an earlier command; this
            # command's output carries them too, as a cold start's would.
            commands = self.runtime.layer.agent_commands
            if commands and self.turns > 0:
                relay.event(CommandsUpdated(commands=list(commands)))


__all__ = ["WarmSession"]
