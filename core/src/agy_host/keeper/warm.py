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

:func:`profile_of` says when a warm session no longer fits a command: a
different engine, agent, working directory, overrides, environment or
config file start cold, and the old warm agent ends.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from agy_host.builtins.render_common import is_edit
from agy_host.config import config_path
from agy_host.contract.events import CommandsUpdated, ToolCard, TurnStarted
from agy_host.contract.interactions import Answer, Question
from agy_host.contract.permissions import PermissionDecision, PermissionRequest
from agy_host.contract.tool_calls import ToolCall, ToolVerdict
from agy_host.keeper import wire
from agy_host.keeper.always import for_warm_agent
from agy_host.keeper.relay import Relay
from agy_host.runtime.host import Host

if TYPE_CHECKING:
    from agy_host.contract.events import HostEvent
    from agy_host.contract.rendering import DiffSource
    from agy_host.keeper.shared import Agent
    from agy_host.runtime.session import SessionRuntime, TurnSettings
    from agy_host.runtime.turn_layer import TurnResult

#: Variables that change from shell to shell without changing what an agent
#: sees: a difference in them does not make a warm agent cold.
VOLATILE_ENV = frozenset(
    {
        "_",
        "OLDPWD",
        "PWD",
        "SHLVL",
        "COLUMNS",
        "LINES",
        "TERM",
        "TERM_PROGRAM",
        "TERM_PROGRAM_VERSION",
        "COLORTERM",
        "TMUX",
        "TMUX_PANE",
        "STY",
        "WINDOW",
        "WINDOWID",
        "SSH_TTY",
        "SSH_CLIENT",
        "SSH_CONNECTION",
        "PS1",
        "PS2",
        "PROMPT_COMMAND",
        "HISTFILE",
        "HISTSIZE",
        "HISTCONTROL",
        "HISTFILESIZE",
        "HISTTIMEFORMAT",
        "GPG_TTY",
        "LS_COLORS",
        "LSCOLORS",
        # what a shell's init scripts and terminal apps set for the shell itself
        "PYENV_SHELL",
        "PYENV_VIRTUALENV_INIT",
        "VIRTUAL_ENV_PROMPT",
        "STARSHIP_SHELL",
        "STARSHIP_SESSION_KEY",
        "TERM_SESSION_ID",
        "SHELL_SESSION_ID",
        "ITERM_SESSION_ID",
        "ITERM_PROFILE",
        "KONSOLE_DBUS_SESSION",
        "KONSOLE_DBUS_WINDOW",
        "KONSOLE_VERSION",
        "VTE_VERSION",
        "WT_SESSION",
        "WT_PROFILE_ID",
        "AGY_HOST_TTY",
        "AGY_HOST_THIN",
        "PYTEST_CURRENT_TEST",
    }
)

#: The command-line names of the :class:`~agy_host.keeper.wire.HostSpec`
#: fields a warm agent is fitted to (what :func:`differences` names).
_SETTING_NAMES = {
    "engine": "--engine",
    "agent": "--agent",
    "permissions": "--permissions",
    "trace": "--trace",
    "system_prompt": "--system-prompt",
    "digest": "--digest",
    "tools": "the program's tools",
    "allowed_tools": "the allowed tools",
    "disallowed_tools": "the disallowed tools",
    "before_tool": "the program's before_tool",
}


def profile_of(name: str, cwd: str, spec: wire.HostSpec) -> str:
    """A digest of everything that decides which agent a session gets: a
    command whose profile differs from the warm session's starts cold.

    That includes the config file the command reads (its bytes, read here on
    every request): the warm host was built from the file as it was, so an
    edit (a rule, a model, an agent profile) must not be ignored until the
    agent happens to expire.

    The environment is taken in sorted order: it is a mapping, and two
    terminals list the same variables in different orders (a command from
    the other one would otherwise never find the agent left warm)."""
    env = {k: spec.env[k] for k in sorted(spec.env) if k not in VOLATILE_ENV}
    # whether the command draws diffs is the turn's, not the agent's (WarmSession.run)
    fixed = msgspec.structs.replace(spec, env=env, draws_diffs=False)
    blob = msgspec.json.encode({"session": name, "cwd": cwd, "host": fixed, "config": config_digest(spec.env)})
    return hashlib.sha256(blob).hexdigest()


def differences(warm: WarmSession, cwd: str, spec: wire.HostSpec) -> str:
    """What keeps ``warm`` from serving a command of ``cwd`` and ``spec``, in
    a person's words: the settings by their option names, the environment by
    the names of its variables (never their values: they hold API keys)."""
    said = [name for field, name in _SETTING_NAMES.items() if getattr(warm.spec, field) != getattr(spec, field)]
    if warm.cwd != cwd:
        said.append("the working directory")
    if warm.config != config_digest(spec.env):
        said.append("the config file")
    before = {k: v for k, v in warm.spec.env.items() if k not in VOLATILE_ENV}
    now = {k: v for k, v in spec.env.items() if k not in VOLATILE_ENV}
    changed = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
    if changed:
        named = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        said.append(f"the environment ({named})")
    return ", ".join(said) or "the command's settings"


def config_digest(env: Mapping[str, str]) -> str:
    """The digest of the config file ``env`` selects; ``""`` when there is
    none, and a marker naming the error when it cannot be read (the command's
    own host reports that error; the profile only has to differ)."""
    try:
        return hashlib.sha256(config_path(env).read_bytes()).hexdigest()
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return f"unreadable: {type(exc).__name__}"


class RemoteHost(Host):
    """A :class:`Host` whose person is elsewhere: permission requests and
    questions go to the client attached for the turn of the session that
    asks (``relay(session)``), and so does a tool call its program's
    ``before_tool`` must see (:meth:`asks_client`); the command's tool
    lists apply here, from its spec (the config's from the keeper's own)."""

    def __init__(self, relay: Callable[[str], Relay | None], spec: wire.HostSpec, **kw: Any) -> None:
        self._relay = relay
        #: Sessions whose agent keeps an "always" answer of a command (:mod:`agy_host.keeper.always`).
        self.kept_always: set[str] = set()
        super().__init__(**kw)
        self.allowed_tools = list(spec.allowed_tools)
        self.disallowed_tools = list(spec.disallowed_tools)
        if spec.before_tool:
            self.before_tool = self.asks_client

    async def asks_client(self, call: ToolCall) -> ToolVerdict:
        """The attached client's verdict (its tool gate, its program's
        ``before_tool``); nobody attached: refused."""
        relay = self._relay(call.session)
        if relay is None:
            return ToolVerdict(allow=False, by="keeper", reason="no command is attached; refused")
        return await relay.check_tool(call)

    async def decide_permission(self, request: PermissionRequest) -> PermissionDecision:
        relay = self._relay(request.session)
        if relay is None:
            return PermissionDecision(option_id=None, policy="keeper", reason="no command is attached; cancelled")
        decision, kept = for_warm_agent(request, await relay.ask_permission(request))
        if kept and request.session not in self.kept_always:
            self.kept_always.add(request.session)
            relay.warning(
                f"the agent offered no one-time answer, so it keeps this 'always' answer: session "
                f"{request.session!r} is not kept warm for another command (it ends after this one)"
            )
        return decision

    async def ask_question(self, question: Question) -> Answer:
        relay = self._relay(question.session)
        if relay is None:
            return Answer(action="cancel", by="keeper", reason="no command is attached", unanswered=True)
        return await relay.ask_question(question)


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


__all__ = ["VOLATILE_ENV", "RemoteHost", "WarmSession", "config_digest", "differences", "profile_of"]
