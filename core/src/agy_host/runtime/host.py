"""The host: what every command builds once before it does anything.

A :class:`Host` holds the effective config (warnings go to stderr as
``agy-host: warning: ...``), the plugin manager, the session store, and knows
which engine is selected and *why*, so ``agy-host engine`` can explain it.
Nothing here imports trio or an engine at module level: ``config`` and
``plugins`` commands build a Host too. Loading the engine imports exactly that engine, builds its
:class:`~agy_host.engine.base.EngineContext` and registers its optional ``hooks``.

The permission decider handed to engines keeps the one promise the agent
depends on: a permission request is always answered. The configured policy is
bounded by ``turn.permission_timeout_seconds``; a policy that times out,
raises, or picks an option the agent did not offer yields a *cancelled*
decision with the reason. It never raises and never hangs. When nobody chose
a policy the default asks where a person is and fails closed elsewhere
(:func:`~agy_host.service.unattended.chosen_policy`); ``front`` says whether a
CLI command or a Python program asks, which decides where a person can be.

Policies and services may take part in the command through optional
methods the host calls when present: a policy's ``configure(config, env)``
once it is selected (and ``check_ready()``, a reason the command must not
start), a service's ``bind_host(ctx)`` with the command's
:class:`~agy_host.service.roundtrips.ServiceContext` before it starts.

The wire trace (``--trace FILE``, else ``AGY_HOST_TRACE``) is opened with
the engine, so commands that load no engine never create the file; it is
told the secrets of the environment, the config and the MCP servers' headers
(the bridge's token), which it then redacts wherever they appear.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

import msgspec

from agy_host import config as config_mod
from agy_host.engine.base import EngineError, installed_engines, load_engine_class
from agy_host.engine.trace import trace_target
from agy_host.plugins import Plugins
from agy_host.service import unattended

if TYPE_CHECKING:
    import trio

    from agy_host.config import AnswerRule
    from agy_host.contract.interactions import Answer, Question, QuestionAsker
    from agy_host.contract.permissions import PermissionDecision, PermissionPolicy, PermissionRequest
    from agy_host.contract.tool_calls import ToolCall, ToolVerdict
    from agy_host.engine.base import Engine, EngineContext, EngineFactory, McpServerSpec
    from agy_host.engine.trace import WireTrace
    from agy_host.runtime.store import SessionStore
    from agy_host.runtime.tool_gate import BeforeTool, ToolGate
    from agy_host.service.base import Service
    from agy_host.service.interactions import InteractionBroker
    from agy_host.service.roundtrips import ServiceContext
    from agy_host.service.tool_lists import Entry, ToolLists
    from agy_host.service.unattended import Front

#: Chosen when nothing else decides and it is installed (the spec's default).
DEFAULT_ENGINE = "stream-json"
#: The policy when nobody chose one (``ask``: where nobody can be asked, it fails closed).
DEFAULT_POLICY = unattended.DEFAULT_POLICY
LAST_RUN_FILE = "last-driver.json"
#: A service that has not reported ready by then is skipped with a warning.
SERVICE_START_TIMEOUT_S = 15.0

EngineSource = Literal["flag", "env", "config", "only", "default", "first"]


class EngineChoice(msgspec.Struct, kw_only=True):
    """Which engine a command uses and why (``agy-host engine`` prints it)."""

    name: str
    source: EngineSource
    reason: str
    installed: list[str]


def stderr_warning(message: str) -> None:
    """The default warning sink; ``sys.stderr`` is looked up per call so a
    test runner's capture sees it."""
    print(f"agy-host: warning: {message}", file=sys.stderr, flush=True)


class Host:
    """Config, plugins, store and engine selection for one command."""

    def __init__(
        self,
        *,
        env: Mapping[str, str] | None = None,
        engine: str | None = None,
        agent: str | None = None,
        permissions: str | None = None,
        plugins: Plugins | None = None,
        extra_plugins: Sequence[object] = (),
        warn: Callable[[str], None] | None = None,
        config_path: Path | None = None,
        trace: str | os.PathLike[str] | None = None,
        front: Front = "cli",
    ) -> None:
        self.env: Mapping[str, str] = os.environ if env is None else env
        #: Who asks for the agent: a CLI command, or a Python program (which the default policy never prompts).
        self.front: Front = front
        #: Where the wire trace goes (``trace``, else ``AGY_HOST_TRACE``); ``None``: off.
        self.trace_path = trace_target(trace, self.env)
        self._trace: WireTrace | None = None
        self.warnings: list[str] = []
        self._sink = warn or stderr_warning
        self.config_path = config_path or config_mod.config_path(self.env)
        self.config = config_mod.load(self.env, self.warn, self.config_path)
        if self.config.turn.permission_timeout_seconds <= 0:
            self.warn(
                "config: 'turn.permission_timeout_seconds' must be positive so a policy can never hang a turn; "
                f"using {config_mod.TurnConfig().permission_timeout_seconds:g}"
            )
            self.config.turn.permission_timeout_seconds = config_mod.TurnConfig().permission_timeout_seconds
        self.plugins = plugins if plugins is not None else Plugins(self.env)
        for plugin in extra_plugins:
            if self.plugins.pm.is_registered(plugin):
                continue
            self.plugins.register(plugin, name=getattr(plugin, "name", None) or type(plugin).__name__)
        self.plugins.check()
        self.state_dir = config_mod.state_dir(self.env)
        self.engine_flag = engine or None
        self.agent = agent or None
        self.permissions_flag = permissions or None
        self._choice: EngineChoice | None = None
        self._engine: Engine | None = None
        self._store: SessionStore | None = None
        self._policy: PermissionPolicy | None = None
        self._broker: InteractionBroker | None = None
        #: ``--answers FILE`` rules (before the config's ``[[answer]]``).
        self.answer_rules: list[AnswerRule] = []
        self._question_callback: QuestionAsker | None = None
        #: ``--allow-tool``/``--deny-tool``, a program's ``allowed_tools=``/``disallowed_tools=``
        #: (the config's lists apply as well: :attr:`tool_lists`).
        self.allowed_tools: list[Entry] = []
        self.disallowed_tools: list[Entry] = []
        #: A program's ``before_tool``, run on its loop (:mod:`agy_host.api._hooks`).
        self.before_tool: BeforeTool | None = None
        self._gate: ToolGate | None = None
        #: Services handed out by ``agy_host_services`` for this command.
        self.services: list[Service] = []
        from agy_host.contract.run_context import RunContext

        self.plugins.configure(
            RunContext(config=self.config, env=self.env, state_dir=self.state_dir, ask_question=self.ask_question)
        )

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        self._sink(message)

    # -- engines -------------------------------------------------------------------

    def installed_engines(self) -> dict[str, str]:
        """Engine name -> where it comes from, without importing any engine."""
        found: dict[str, str] = {}
        for name in self.plugins.engines():
            found[name] = "registered in-process"
        for entry in installed_engines():
            origin = f"{entry.distribution} {entry.version}".strip() or entry.value
            found[entry.name] = f"entry point ({origin})"
        return dict(sorted(found.items()))

    def engine_choice(self) -> EngineChoice:
        """flag > ``--agent`` (an ACP agent command: the ``acp`` engine, when
        installed) > ``AGY_HOST_ENGINE`` > config ``engine`` > the only installed
        engine > ``stream-json`` if installed > the first installed (by name)."""
        if self._choice is not None:
            return self._choice
        installed = list(self.installed_engines())
        env_value = self.env.get("AGY_HOST_ENGINE", "").strip()
        if self.engine_flag:
            choice = EngineChoice(
                name=self.engine_flag, source="flag", reason="--engine on the command line", installed=installed
            )
        elif self.agent and "acp" in installed:
            choice = EngineChoice(
                name="acp", source="flag", reason="--agent names an ACP agent to run", installed=installed
            )
        elif env_value:
            choice = EngineChoice(name=env_value, source="env", reason="AGY_HOST_ENGINE is set", installed=installed)
        elif self.config.engine:
            choice = EngineChoice(
                name=self.config.engine, source="config", reason=f"'engine' in {self.config_path}", installed=installed
            )
        elif len(installed) == 1:
            choice = EngineChoice(
                name=installed[0], source="only", reason="the only engine installed", installed=installed
            )
        elif DEFAULT_ENGINE in installed:
            choice = EngineChoice(
                name=DEFAULT_ENGINE,
                source="default",
                reason="the default when several are installed (it reports usage; the ACP server does not yet)",
                installed=installed,
            )
        elif installed:
            choice = EngineChoice(
                name=installed[0], source="first", reason="the first installed engine by name", installed=installed
            )
        else:
            from agy_host.engine.install_hint import engine_hint

            raise EngineError(f"no engine is installed. {engine_hint()}")
        self._choice = choice
        return choice

    def load_engine(self) -> Engine:
        """Import and build the selected engine (once); register its hooks."""
        if self._engine is not None:
            return self._engine
        choice = self.engine_choice()
        extra: dict[str, EngineFactory] = self.plugins.engines()
        factory = load_engine_class(choice.name, extra=extra)
        try:
            engine = factory(self.engine_context(choice.name))
        except EngineError:
            raise
        except Exception as exc:
            raise EngineError(f"engine {choice.name!r} failed to start: {type(exc).__name__}: {exc}") from exc
        hooks = getattr(engine, "hooks", None)
        if hooks is not None:
            self.plugins.register(hooks, name=f"engine:{choice.name}")
        self.plugins.check()
        self._engine = engine
        return engine

    def engine_context(self, engine_name: str) -> EngineContext:
        from agy_host.engine.base import EngineContext

        return EngineContext(
            config=self.config,
            state_dir=self.state_dir,
            decide_permission=self.decide_permission,
            mcp_servers=lambda: self.mcp_servers(engine_name),
            agent=self.agent,
            env=self.env,
            warn=self.warn,
            tools=self.plugins.tools,
            permission_policy=unattended.chosen_policy(self.permissions_flag, self.config.permissions.policy)[0],
            ask_question=self.ask_question,
            trace=self.wire_trace(),
            tool_gate=self.tool_gate,
        )

    def mcp_servers(self, engine_name: str) -> list[McpServerSpec]:
        """The MCP servers for the engine; their secret headers (the bridge's
        token) are told to the wire trace first."""
        servers = self.plugins.mcp_servers(engine_name)
        if self._trace is not None:
            from agy_host.engine.redact import sensitive_name

            self._trace.add_secrets(v for srv in servers for k, v in srv.headers.items() if sensitive_name(k))
        return servers

    # -- the wire trace ------------------------------------------------------------------

    def wire_trace(self) -> WireTrace | None:
        """The wire trace, opened on first use; ``None`` when tracing is off.
        A file that cannot be opened is an :class:`EngineError` naming it."""
        if self.trace_path is None or self._trace is not None:
            return self._trace
        from agy_host.engine.trace import WireTrace

        try:
            self._trace = WireTrace.open(self.trace_path, env=self.env, config=self.config)
        except OSError as exc:
            raise EngineError(f"cannot write the wire trace to {self.trace_path}: {exc.strerror or exc}") from exc
        return self._trace

    def close(self) -> None:
        """Close what the host opened for its command (the wire trace)."""
        trace, self._trace = self._trace, None
        if trace is not None:
            trace.close()

    # -- questions ---------------------------------------------------------------------

    async def ask_question(self, question: Question) -> Answer:
        """The interaction broker's answer (rules, the program, the terminal, or fail closed)."""
        return await self.broker.ask(question)

    @property
    def question_callback(self) -> QuestionAsker | None:
        """The program's question callback (the Python API's ``on_question``)."""
        return self._question_callback

    @question_callback.setter
    def question_callback(self, callback: QuestionAsker | None) -> None:
        self._question_callback = callback
        if self._broker is not None:
            self._broker.callback = callback

    @property
    def broker(self) -> InteractionBroker:
        """This host's one broker (it remembers "always" answers for as long as
        the host lives), over the rules (``--answers`` first, then the
        config's), the program's callback and the permission policy."""
        if self._broker is None:
            from agy_host.service.interactions import InteractionBroker

            self._broker = InteractionBroker(
                rules=lambda: [*self.answer_rules, *self.config.answer],
                env=self.env,
                callback=self.question_callback,
                policy=self.permission_policy,
                bound_s=lambda: self.config.turn.permission_timeout_seconds,
            )
        return self._broker

    # -- store -----------------------------------------------------------------------

    @property
    def store(self) -> SessionStore:
        if self._store is None:
            from agy_host.runtime.store import SessionStore

            self._store = SessionStore.in_state_dir(self.state_dir, warn=self.warn)
        return self._store

    def session_names(self, engine: Engine) -> list[str]:
        """The host session names bound on ``engine`` (for its current agent),
        sorted. Session names never contain ``@`` (the CLI refuses them), so
        the name is what precedes the engine's key suffix."""
        names = []
        for key in self.store.all():
            name = key.partition("@")[0]
            if engine.store_key(name) == key:
                names.append(name)
        return sorted(names)

    # -- permissions -------------------------------------------------------------------

    def permission_policy(self) -> PermissionPolicy:
        """The chosen policy, else the default (``ask``, asking only where a
        person is); an unknown name warns and falls back to the default."""
        if self._policy is not None:
            return self._policy
        policies = self.plugins.permission_policies()
        name, chosen = unattended.chosen_policy(self.permissions_flag, self.config.permissions.policy)
        policy = policies.get(name)
        if policy is None:
            known = ", ".join(sorted(policies)) or "none"
            self.warn(f"unknown permission policy {name!r} (known: {known}); using the default, {DEFAULT_POLICY!r}")
            policy, chosen = policies.get(DEFAULT_POLICY), False
        if policy is None:
            from agy_host.builtins.permission_ask import AskPolicy

            policy = AskPolicy()
        configure = getattr(policy, "configure", None)
        if callable(configure):
            try:
                configure(self.config, self.env)
            except Exception as exc:
                self.warn(f"permission policy {name!r} could not be configured: {type(exc).__name__}: {exc}")
        set_asking = getattr(policy, "set_asking", None)
        if callable(set_asking):
            set_asking(self.front, not chosen)
        self._policy = policy
        return policy

    def rules_problem(self) -> str | None:
        """Why the answer rules (``--answers``, ``answers=``, ``[[answer]]``),
        ``[[permissions.rules]]`` or the tool lists cannot be used (a glob too long, too many
        rules: :mod:`agy_host.service.globs`), or ``None``. The commands refuse
        to start on it (exit 2); every glob is compiled once it passes."""
        from agy_host.service.globs import rules_problem

        return rules_problem(self.config, str(self.config_path), self.answer_rules) or self.tool_lists.problem()

    def policy_problem(self) -> str | None:
        """Why the selected policy cannot work in this command (``ask`` with
        ``ask_fallback = "fail"`` and no terminal), or ``None``."""
        check = getattr(self.permission_policy(), "check_ready", None)
        if not callable(check):
            return None
        try:
            problem = check()
        except Exception as exc:
            return f"the permission policy's readiness check failed: {type(exc).__name__}: {exc}"
        return str(problem) if problem else None

    async def decide_permission(self, request: PermissionRequest) -> PermissionDecision:
        """Answer one permission request through the broker (an "always"
        remembered for the session, else the policy); never raises (except
        trio's own cancellation of the caller), never waits past the bound.
        A request to call a host tool that only asks the user (the bridge's
        question tool) is allowed without the policy: the question goes to
        the question broker when the tool runs. The tool gate (the tool
        lists, a program's ``before_tool``) answers next when it has an
        answer; then a request to call one of the program's own tools
        (``tools=``) is allowed, the program having offered it."""
        from agy_host.service.tool_names import program_tool_decision, question_tool_decision

        tools = self.plugins.tools()
        asking = question_tool_decision(request, tools)
        if asking is not None:
            return asking
        gated = await self.tool_gate.permission(request)
        if gated is not None:
            return gated
        own = program_tool_decision(request, tools)  # after the gate: the lists and before_tool can refuse it
        return own if own is not None else await self.broker.decide(request)

    # -- the tool gate -------------------------------------------------------------------

    @property
    def tool_lists(self) -> ToolLists:
        """``allowed_tools``/``disallowed_tools``: the config's, then the
        command's or the program's (:mod:`agy_host.service.tool_lists`)."""
        from agy_host.service.tool_lists import ToolLists, entries

        perms, path = self.config.permissions, self.config_path
        return ToolLists(
            allowed=[*entries(perms.allowed_tools, f"[permissions] allowed_tools in {path}"), *self.allowed_tools],
            disallowed=[
                *entries(perms.disallowed_tools, f"[permissions] disallowed_tools in {path}"),
                *self.disallowed_tools,
            ],
        )

    @property
    def tool_gate(self) -> ToolGate:
        """The lists, then the program's ``before_tool``, before the policy
        (:mod:`agy_host.runtime.tool_gate`); one per host, so a call asked
        about twice (the harness's hook, then its policy) is decided once."""
        if self._gate is None:
            from agy_host.runtime.tool_gate import ToolGate

            self._gate = ToolGate(
                lambda: self.tool_lists,
                lambda: self.before_tool,
                lambda: self.config.turn.permission_timeout_seconds,
            )
        return self._gate

    async def check_tool(self, call: ToolCall) -> ToolVerdict:
        """The gate's verdict about ``call``; bounded, never raises."""
        return await self.tool_gate.check(call)

    # -- services ------------------------------------------------------------------------

    async def start_services(self, nursery: trio.Nursery, context: ServiceContext | None = None) -> list[str]:
        """Start every ``agy_host_services`` service in ``nursery``; return the
        names that reported ready. A service that fails or stalls is reported
        and skipped: the command goes on without it. ``context`` is handed to
        each service with a ``bind_host`` method first."""
        import trio

        ready: list[str] = []
        for service in self.plugins.services(self.config):
            self.services.append(service)
            name = str(getattr(service, "name", "") or type(service).__name__)
            bind = getattr(service, "bind_host", None)
            if context is not None and callable(bind):
                try:
                    bind(context)
                except Exception as exc:
                    self.warn(f"service {name!r} could not be bound to this command: {type(exc).__name__}: {exc}")
                    continue
            with trio.move_on_after(SERVICE_START_TIMEOUT_S) as scope:
                ok = await nursery.start(self._guard_service, service, name)
            if scope.cancelled_caught:
                self.warn(f"service {name!r} did not become ready within {SERVICE_START_TIMEOUT_S:g}s; skipped")
            elif ok:
                ready.append(name)
        return ready

    async def _guard_service(self, service: Service, name: str, *, task_status: trio.TaskStatus[bool]) -> None:
        reported = False

        class _Status:
            def started(self, value: object = None) -> None:
                nonlocal reported
                if not reported:
                    reported = True
                    task_status.started(True)

        try:
            await service.run(task_status=cast("trio.TaskStatus[None]", _Status()))
        except Exception as exc:
            self.warn(f"service {name!r} failed: {type(exc).__name__}: {exc}")
        if not reported:
            task_status.started(False)

    # -- last run ---------------------------------------------------------------------------

    @property
    def last_run_path(self) -> Path:
        return self.state_dir / LAST_RUN_FILE


__all__ = [
    "DEFAULT_ENGINE",
    "DEFAULT_POLICY",
    "LAST_RUN_FILE",
    "EngineChoice",
    "EngineSource",
    "Host",
    "stderr_warning",
]
