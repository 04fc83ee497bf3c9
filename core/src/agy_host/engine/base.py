"""Engines: the base class every engine plugin subclasses, and selection by name.

An engine is found through the entry point group ``agy_host.engines`` (the
entry point name is the engine name) and :func:`load_engine_class` imports
only the selected one, so an engine that is not selected is never imported:
a user who installed only the stream-json engine pays nothing for ACP, and a
broken engine cannot break the others. Engines may also be registered
in-process through the ``agy_host_register_engines`` hook (tests, one-off
plugins); entry points win on a name clash.
"""

from __future__ import annotations

import abc
import contextlib
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from agy_host import entry_points
from agy_host.contract.interactions import QuestionAsker, nobody_answers

if TYPE_CHECKING:
    from agy_host.config import Config
    from agy_host.contract.diagnostics import DiagnosticReport
    from agy_host.contract.permissions import PermissionDecision, PermissionRequest
    from agy_host.contract.tool_calls import ToolGateView
    from agy_host.contract.tools import HostTool
    from agy_host.engine.driver import TurnDriver
    from agy_host.engine.trace import TraceTap, WireTrace

ENGINE_GROUP = "agy_host.engines"


class EngineError(Exception):
    """An engine could not be selected or loaded; the message says how to fix it."""


class NotOffered(EngineError):
    """The engine, or its agent, does not offer what was asked (forking a
    conversation, listing the agent's sessions); the message says which
    and what would."""


class ModelInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One model an engine can run. ``efforts`` lists tiers (``low``...) when the
    model takes an effort setting."""

    id: str
    name: str = ""
    efforts: list[str] = msgspec.field(default_factory=list)
    current: bool = False


class ModelCatalog(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The models an engine offers, with where the list came from (``agy-host models``, chat's ``/model``)."""

    models: list[ModelInfo]
    #: Where the list came from: ``agent`` (asked live), ``cache``, ``fallback``.
    source: str = "agent"
    current: str | None = None


class AgentMode(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """One mode the agent offers: what ``--mode ID`` and the chat's ``/mode`` take."""

    id: str
    name: str = ""
    description: str = ""


class ModeCatalog(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The modes an agent offers (``/mode`` lists them); empty when it has none."""

    modes: list[AgentMode]
    #: The mode a new conversation starts in, when the agent says.
    current: str | None = None
    #: Other names the engine takes for a mode: ``{"accept-edits": "auto_edit"}``
    #: on Antigravity's ACP server.
    aliases: dict[str, str] = msgspec.field(default_factory=dict)

    def offers(self, mode: str) -> bool:
        """``mode`` is one of the agent's, by its id or another name the engine takes."""
        ids = {m.id for m in self.modes}
        return mode in ids or self.aliases.get(mode) in ids

    def names(self) -> str:
        """``default, autoEdit, yolo; accept-edits is auto_edit``: the ids and the other names."""
        aliases = "".join(f"; {alias} is {target}" for alias, target in sorted(self.aliases.items()))
        return ", ".join(m.id for m in self.modes) + aliases

    def lines(self) -> list[str]:
        """One line per mode (``* plan  Plan: Read-only mode``; ``*`` marks
        the current one), then the other names the engine takes."""
        out = []
        for mode in self.modes:
            mark = "*" if mode.id == self.current else " "
            about = ": ".join(part for part in (mode.name if mode.name != mode.id else "", mode.description) if part)
            out.append(f"{mark} {mode.id}{'  ' + about if about else ''}")
        return out + [f"  {alias} (is {target})" for alias, target in sorted(self.aliases.items())]

    def summary(self) -> str:
        """``default, autoEdit, yolo, plan (current: default)``, for a doctor row."""
        if not self.modes:
            return "none advertised"
        names = ", ".join(m.id for m in self.modes)
        current = f" (current: {self.current})" if self.current else ""
        return names + current + "".join(f"; {alias} is {target}" for alias, target in sorted(self.aliases.items()))


class McpServerSpec(msgspec.Struct, kw_only=True, omit_defaults=True):
    """An MCP server the host asks the agent to connect to (the bridge)."""

    name: str
    url: str
    type: str = "http"
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    #: ``"host-tools"`` when the server offers the host's own tools (the
    #: bridge): an engine that answers host tools in-process keeps the
    #: server only for what else it offers (:attr:`offers`), with the host
    #: tools hidden there, and leaves it out when that is nothing.
    role: str = ""
    #: For a host-tools server: the tools it offers besides the host tools
    #: (``activate_skill`` when skills exist), as of when it was asked.
    offers: list[str] = msgspec.field(default_factory=list)


class EngineCapabilities(msgspec.Struct, kw_only=True):
    """What the engine can do, so the turn layer and CLI can refuse early."""

    reports_usage: bool = False
    plan_mode: bool = False
    images: bool = False
    resources: bool = False
    load_session: bool = False
    #: The engine takes the host's system block out of the first prompt and
    #: sends it through its own configuration (the harness), so a slash
    #: command can open a conversation without holding the block back.
    system_out_of_band: bool = False
    #: One agent process runs several host sessions' conversations at once,
    #: independently (the harness): a keeper runs every warm session with
    #: equal settings on one agent (docs/sessions.md).
    serves_many_sessions: bool = False
    #: The modes are the agent's own (ACP agents other than Antigravity): the
    #: driver passes any mode the agent advertises, ``plan`` included, and
    #: refuses another with the list; the turn layer leaves ``plan`` to it.
    agent_modes: bool = False
    #: The engine offers the host's tools to its agent itself (the harness);
    #: otherwise they reach the agent through the MCP bridge only
    #: (:mod:`agy_host.runtime.tool_reach`).
    host_tools_in_process: bool = False


PermissionDecider = Callable[["PermissionRequest"], Awaitable["PermissionDecision"]]
McpServersProvider = Callable[[], list[McpServerSpec]]


class EngineContext:
    """What the host hands an engine: config, state dir, the permission
    decider, MCP servers to register, the host tools, a sink for
    user-visible notices, the wire trace when one was asked for, and the
    tool gate.

    Plain attributes, so an engine author can build one in a test.
    """

    def __init__(
        self,
        *,
        config: Config,
        state_dir: Path,
        decide_permission: PermissionDecider,
        mcp_servers: McpServersProvider = list,
        agent: str | None = None,
        env: Mapping[str, str] | None = None,
        warn: Callable[[str], None] | None = None,
        tools: Callable[[], list[HostTool]] = list,
        permission_policy: str = "",
        ask_question: QuestionAsker | None = None,
        trace: WireTrace | None = None,
        tool_gate: ToolGateView | None = None,
    ) -> None:
        from agy_host.contract.tool_calls import OpenGate

        self.config = config
        self.state_dir = state_dir
        self.decide_permission = decide_permission
        self.mcp_servers = mcp_servers
        #: ``--agent "CMD ARGS"`` or a profile name from config, if given.
        self.agent = agent
        self.env: Mapping[str, str] = os.environ if env is None else env
        self.warn: Callable[[str], None] = warn or (lambda _msg: None)
        #: The host tools (``agy_host_register_tools``), asked again per call:
        #: for engines whose agent takes tool declarations in-process.
        self.tools = tools
        #: The name of the selected permission policy (``auto``, ``deny``,
        #: ``ask``, ``rules``...), for engines that can hand a static decision
        #: to their agent; the decider is still the one that answers.
        self.permission_policy = permission_policy
        #: The host's interaction broker: hand it every question the agent
        #: asks the user (an ACP elicitation); it always answers, and fails
        #: closed (``cancel``, ``unanswered``) when nobody can.
        self.ask_question: QuestionAsker = ask_question or nobody_answers
        #: ``--trace FILE`` / ``AGY_HOST_TRACE``: where every frame in and out
        #: is written; ``None`` when tracing is off. Engines write through
        #: :meth:`Engine.wire_trace`.
        self.trace = trace
        #: The host's tool gate (the tool lists, a program's ``before_tool``):
        #: an engine that sees its agent's tool calls before they run (the
        #: harness's pre-tool hook) asks it about each while it is ``active``.
        #: Permission requests pass it inside :attr:`decide_permission`.
        self.tool_gate: ToolGateView = tool_gate if tool_gate is not None else OpenGate()


class PlanRequest(msgspec.Struct, kw_only=True, frozen=True):
    """A one-shot, review-only plan in an agent's print mode (``ask --mode plan``)."""

    prompt: str
    cwd: str
    env: Mapping[str, str]
    model: str | None = None
    effort: str | None = None
    #: The conversation to continue, if the session has one.
    conversation_id: str | None = None
    #: The agent's own deadline in minutes; 0 disables it.
    timeout_min: float = 10.0
    skip_permissions: bool = False


class PlanOutcome(msgspec.Struct, kw_only=True, omit_defaults=True):
    #: ``ok``, ``aborted``, ``timeout``, ``error``, or ``usage`` (a bad option).
    status: str
    text: str = ""
    conversation_id: str | None = None
    exit_code: int | None = None
    error: str = ""
    stderr: str = ""
    usage: dict[str, Any] | None = None
    #: The signal that ended the run (SIGTERM, SIGHUP), when one did: the
    #: command then exits ``128 + signal``, as after a turn.
    ended_by_signal: int | None = None


class Engine(abc.ABC):
    """Base class of engine plugins.

    Subclasses set :attr:`ENGINE_NAME` (the name users select) and implement
    :meth:`open_driver`. The optional :attr:`hooks` object is registered with
    the plugin manager after the engine is selected, so an engine can also
    implement fan-out hooks (diagnostics, commands) without being imported when
    it is not selected.
    """

    #: The name used for selection (``--engine NAME``); also the entry point name.
    ENGINE_NAME: ClassVar[str] = ""
    #: One line for ``agy-host engine`` and ``plugins``.
    DESCRIPTION: ClassVar[str] = ""
    #: Suffix of this engine's session store keys. ``None`` (the default)
    #: means ``"@<ENGINE_NAME>"``: two engines must never share a key, or one
    #: would resume the other's conversation ids. Only stream-json, whose keys
    #: predate the suffix scheme, uses ``""``.
    STORE_SUFFIX: ClassVar[str | None] = None

    hooks: object | None = None
    #: True when the engine fell back to a bundled sandbox agent because no
    #: real agent is installed; the turn layer says so plainly to the user.
    sandbox: bool = False

    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx

    @property
    def capabilities(self) -> EngineCapabilities:
        return EngineCapabilities()

    def advertised_capabilities(self) -> EngineCapabilities | None:
        """What the agent itself said it can do, once :meth:`diagnose` asked
        it (an ACP agent's ``initialize``); ``None`` when :attr:`capabilities`
        is all there is to say. ``doctor`` shows these."""
        return None

    @staticmethod
    async def print_mode_plan(request: PlanRequest) -> PlanOutcome | None:
        """A one-shot, review-only plan in the agent's print mode, for ``ask
        --mode plan`` whatever engine is selected (the ACP server has no plan
        mode); ``None`` when this engine has none. Only the stream-json
        engine offers one (``agy -p --mode plan``). Called on the class: no
        engine is built for it."""
        return None

    def store_key(self, session: str) -> str:
        """The session store key of a host session on this engine."""
        suffix = self.STORE_SUFFIX if self.STORE_SUFFIX is not None else f"@{self.ENGINE_NAME}"
        return f"{session}{suffix}"

    def wire_trace(self) -> TraceTap | None:
        """This engine's pen on the host's wire trace, ``None`` when tracing
        is off: every frame to and from the agent goes through it
        (:mod:`agy_host.engine.trace`)."""
        trace = self.ctx.trace
        return trace.tap(self.ENGINE_NAME) if trace is not None else None

    def agent_label(self) -> str:
        """Which agent this engine drives (a command or profile), for display."""
        return self.ENGINE_NAME

    @abc.abstractmethod
    def open_driver(self) -> contextlib.AbstractAsyncContextManager[TurnDriver]:
        """A driver bound to a nursery; leaving the context shuts the agent down."""

    async def list_models(self) -> ModelCatalog:
        """The models this engine can run (may start the agent)."""
        return ModelCatalog(models=[], source="none")

    async def list_modes(self) -> ModeCatalog:
        """The modes ``--mode`` takes on this engine's agent (may start the
        agent; spends no tokens); none by default."""
        return ModeCatalog(modes=[])

    async def diagnose(self, report: DiagnosticReport) -> None:
        """Fill doctor rows: binary resolution, handshake, auth state, ..."""
        return None

    async def list_agent_sessions(self, cwd: str | None = None) -> list[AgentSession]:
        """The agent's own sessions (ACP ``session/list``), ``cwd`` filtering
        when given; :class:`EngineError` when the agent cannot list them."""
        raise EngineError(f"the {self.ENGINE_NAME} engine cannot list its agent's own sessions")

    async def delete_agent_session(self, session_id: str) -> None:
        """Delete one of the agent's own sessions (ACP ``session/delete``);
        :class:`EngineError` when the agent cannot."""
        raise EngineError(f"the {self.ENGINE_NAME} engine cannot delete its agent's own sessions")

    async def fork_conversation(self, conversation_id: str, cwd: str) -> str:
        """A new agent conversation holding ``conversation_id``'s history
        (ACP ``session/fork``), whose id is returned; the original goes on
        unchanged. :class:`NotOffered` when the engine or agent cannot."""
        raise NotOffered(
            f"the {self.ENGINE_NAME} engine cannot fork a conversation: only an ACP agent that offers "
            "session/fork (sessionCapabilities.fork) can"
        )


class AgentSession(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One of the agent's own sessions, as the agent lists it."""

    id: str
    cwd: str = ""
    title: str = ""
    #: ISO 8601, as the agent gave it.
    updated_at: str = ""


EngineFactory = Callable[[EngineContext], Engine]


class EngineEntry(msgspec.Struct, kw_only=True):
    name: str
    value: str
    distribution: str = ""
    version: str = ""


def installed_engines() -> list[EngineEntry]:
    """Engines installed as entry points, without importing any of them."""
    found: dict[str, EngineEntry] = {}
    for ep in entry_points.group(ENGINE_GROUP):
        dist = getattr(ep, "dist", None)
        found.setdefault(
            ep.name,
            EngineEntry(
                name=ep.name,
                value=ep.value,
                distribution=dist.name if dist is not None else "",
                version=dist.version if dist is not None else "",
            ),
        )
    return sorted(found.values(), key=lambda e: e.name)


def load_engine_class(name: str, extra: Mapping[str, EngineFactory] | None = None) -> EngineFactory:
    """Import exactly the engine called ``name``.

    Entry points are looked up first (several distributions claiming one
    name is an error naming them); then in-process registrations. An unknown
    name is an :class:`EngineError` listing what is installed. The entry
    point is loaded directly, not through stevedore: stevedore's import
    brings :mod:`importlib.metadata` back into every command and keeps a
    list of entry points of its own, on disk and per process
    (docs/performance.md, "Cold path").
    """
    claims = [ep for ep in entry_points.group(ENGINE_GROUP) if ep.name == name]
    if len(claims) > 1:
        dists = ", ".join(sorted(_distribution(ep) or ep.value for ep in claims))
        raise EngineError(f"engine {name!r} could not be loaded: several distributions claim it ({dists})")
    if claims:
        _import_trio()
        try:
            factory: EngineFactory = claims[0].load()
        except Exception as exc:
            raise EngineError(f"engine {name!r} failed to import: {type(exc).__name__}: {exc}") from exc
        return factory
    if extra and name in extra:
        return extra[name]
    names = [e.name for e in installed_engines()]
    available = sorted(set(names) | set(extra or {}))
    listing = ", ".join(available) if available else "none"
    from agy_host.engine.install_hint import ENGINE_DISTS, engine_hint

    hint = engine_hint(name) if name in ENGINE_DISTS else "" if available else engine_hint()
    raise EngineError(f"unknown engine {name!r}; installed engines: {listing}.{' ' + hint if hint else ''}")


def _import_trio() -> None:
    """Import trio (every engine does) without its fork of ``/sbin/ldconfig -p``.

    At import, trio looks up ``pthread_setname_np`` to name its worker
    threads, through :func:`ctypes.util.find_library`, which on Linux runs
    ``ldconfig -p`` and reads its output: about 10 ms and a fork of the
    whole process on every command's way to its agent. On glibc the answer
    is always ``libpthread.so.0``, so that is what trio is told while it
    imports (thread names as before); elsewhere the lookup runs as it did.
    """
    if "trio" in sys.modules or not sys.platform.startswith("linux"):
        return
    try:
        glibc = bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError):
        glibc = False
    if not glibc:
        return
    import ctypes.util

    real = ctypes.util.find_library

    def find_library(name: str) -> str | None:
        return "libpthread.so.0" if name == "pthread" else real(name)

    ctypes.util.find_library = find_library
    try:
        import trio  # noqa: F401 - imported here for the lookup above
    finally:
        ctypes.util.find_library = real


def _distribution(ep: entry_points.EntryPoint) -> str:
    dist = ep.dist
    return str(dist.name) if dist is not None else ""


__all__ = [
    "ENGINE_GROUP",
    "AgentMode",
    "AgentSession",
    "PlanOutcome",
    "PlanRequest",
    "Engine",
    "EngineCapabilities",
    "EngineContext",
    "EngineEntry",
    "EngineError",
    "EngineFactory",
    "McpServerSpec",
    "ModeCatalog",
    "ModelCatalog",
    "ModelInfo",
    "NotOffered",
    "installed_engines",
    "load_engine_class",
]
