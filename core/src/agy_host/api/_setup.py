"""From the keyword options of :func:`agy_host.open_session` to a checked
:class:`~agy_host.runtime.host.Host`: the program's tools and permission callback
become a plugin of that host, so the runtime treats them as any plugin's."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agy_host import hookimpl
from agy_host.api.errors import EngineUnavailable, SessionNotFound, UsageError

if TYPE_CHECKING:
    from agy_host.api._callbacks import ProgramLoop
    from agy_host.api._hooks import Observers
    from agy_host.config import AnswerRule
    from agy_host.contract.interactions import Question
    from agy_host.contract.permissions import PermissionRequest
    from agy_host.contract.tools import HostTool
    from agy_host.runtime.host import Host
    from agy_host.runtime.session import TurnSettings

log = logging.getLogger("agy_host")

#: How a session runtime of the API tells that a turn waits for its session
#: (busy in another command): on the ``agy_host`` logger, in the API's words.
WAITING: dict[str, Any] = {
    "on_wait": log.warning,
    "wait_hint": "cancel the turn to stop waiting, wait=False to fail instead",
}

#: A permission callback returns a decision, an option id, ``True`` (allow
#: once) or ``False``/``None`` (reject), directly or from a coroutine.
PermissionCallback = Callable[["PermissionRequest"], Any]


class _PythonPlugin:
    """The program's tools and permission callback, as a plugin of its host;
    each call of them runs on the program's loop (``program``)."""

    name = "python-api"

    def __init__(self, tools: Sequence[Any], permission: PermissionCallback | None, program: ProgramLoop) -> None:
        import msgspec

        from agy_host.api._callbacks import CallbackPolicy
        from agy_host.runtime.python_tools import tool_from_function

        made = [tool_from_function(fn, run=program.call) for fn in tools]
        self.tools = [msgspec.structs.replace(tool, offered_by_program=True) for tool in made]
        names = [t.name for t in self.tools]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise UsageError(f"two tools are named {', '.join(duplicated)}")
        if permission is not None and not callable(permission):
            raise UsageError("the permission callback is not callable")
        self.policy = CallbackPolicy(permission, program) if permission is not None else None

    @hookimpl
    def agy_host_register_tools(self, register: Callable[[Any], None]) -> None:
        for tool in self.tools:
            register(tool)

    @hookimpl
    def agy_host_register_permission_policies(self, register: Callable[[Any], None]) -> None:
        if self.policy is not None:
            register(self.policy)


def policy_name(permissions: str | PermissionCallback | None) -> tuple[str | None, PermissionCallback | None]:
    if permissions is None or isinstance(permissions, str):
        return permissions, None
    if callable(permissions):
        from agy_host.api._callbacks import CallbackPolicy

        return CallbackPolicy.name, permissions
    raise UsageError(f"permissions must be a policy name or a callable, not {type(permissions).__name__}")


class Options:
    """The keyword options of :func:`open_session`, checked once."""

    def __init__(self, **kw: Any) -> None:
        from agy_host.runtime.naming import generate_session_name, session_name_problem

        self.session: str = kw["session"] or generate_session_name("py")
        problem = session_name_problem(self.session)
        if problem:
            raise UsageError(problem)
        #: The program named the session (its agent is then kept warm by default).
        self.named = bool(kw["session"])
        self.resume: bool = bool(kw["resume"])
        if self.resume and not kw["session"]:
            raise UsageError("resume=True needs session=NAME")
        keep_alive = kw.get("keep_alive")
        if keep_alive is not None and (isinstance(keep_alive, bool) or not keep_alive >= 0):
            raise UsageError(f"keep_alive must be >= 0 minutes (0: no warm agent), not {keep_alive!r}")
        #: ``keep_alive=`` minutes; ``None``: the config's for a named session, none for an unnamed one.
        self.keep_alive: float | None = keep_alive
        cwd = Path(kw["cwd"] or os.getcwd()).resolve()
        if not cwd.is_dir():
            raise UsageError(f"cwd {str(cwd)!r} is not a directory")
        self.cwd = str(cwd)
        self.engine: str | None = kw["engine"]
        self.agent: str | None = kw["agent"]
        self.policy, self.callback = policy_name(kw["permissions"])
        self.tools: list[Any] = list(kw["tools"] or ())
        self.system_prompt: str | None = kw["system_prompt"]
        self.env: Mapping[str, str] | None = kw["env"]
        self.plugins: list[object] = list(kw["plugins"] or ())
        #: ``tools`` as host tools, once :meth:`host` made them (a warm session runs them here).
        self.host_tools: list[HostTool] = []
        self.settings = _settings(kw)
        on_question = kw.get("on_question")
        if on_question is not None and not callable(on_question):
            raise UsageError("on_question is not callable")
        self.on_question: Callable[[Question], Any] | None = on_question
        self.answers = _answer_rules(kw.get("answers"))
        from agy_host.api._hooks import checked_callable, patterns

        #: ``before_tool``, ``after_tool``, ``on_turn_end`` (:mod:`agy_host.api._hooks`).
        self.before_tool = checked_callable("before_tool", kw.get("before_tool"))
        self.after_tool = checked_callable("after_tool", kw.get("after_tool"))
        self.on_turn_end = checked_callable("on_turn_end", kw.get("on_turn_end"))
        self.allowed_tools = patterns("allowed_tools", kw.get("allowed_tools"))
        self.disallowed_tools = patterns("disallowed_tools", kw.get("disallowed_tools"))
        trace = kw.get("trace")
        self.trace: str | None = str(Path(trace).expanduser().absolute()) if trace else None
        #: Where the program's callbacks run (set by :meth:`host`).
        self.program: ProgramLoop | None = None

    def host(self, program: ProgramLoop | None = None) -> Host:
        """The run context: config, env, plugins; the engine loaded and checked.
        The program's callbacks run on ``program`` (its loop; trio's by default)."""
        from agy_host.api._callbacks import ProgramLoop, question_asker
        from agy_host.engine.base import EngineError
        from agy_host.runtime.host import Host

        program = self.program = program or ProgramLoop()
        plugin = _PythonPlugin(self.tools, self.callback, program)
        self.host_tools = plugin.tools
        extra = [*self.plugins, plugin]
        try:
            host = Host(
                env=self.env,
                engine=self.engine,
                agent=self.agent,
                permissions=self.policy,
                extra_plugins=extra,
                warn=log.warning,  # visible on stderr by default, configurable
                trace=self.trace,
                front="python",  # without permissions= the default policy asks nobody: it fails closed
            )
        except EngineError as exc:
            raise EngineUnavailable(str(exc)) from exc
        if self.system_prompt is not None:
            host.config.system_prompt = self.system_prompt
        host.answer_rules = self.answers
        if self.on_question is not None:
            host.question_callback = question_asker(self.on_question, program)
        self._hooks(host, program)
        try:
            self._check(host)
        except BaseException:
            host.close()
            raise
        return host

    def observers(self, host: Host) -> Observers:
        """``after_tool`` and ``on_turn_end``, on the loop :meth:`host` was given."""
        from agy_host.api._callbacks import ProgramLoop
        from agy_host.api._hooks import Observers

        program = self.program or ProgramLoop()
        return Observers(
            self.after_tool, self.on_turn_end, program, lambda: host.config.turn.permission_timeout_seconds
        )

    def _hooks(self, host: Host, program: ProgramLoop) -> None:
        """The tool lists and ``before_tool`` on the host's tool gate."""
        from agy_host.api._hooks import BeforeTool
        from agy_host.service.tool_lists import entries

        host.allowed_tools = entries(self.allowed_tools, "allowed_tools=")
        host.disallowed_tools = entries(self.disallowed_tools, "disallowed_tools=")
        if self.before_tool is not None:
            host.before_tool = BeforeTool(self.before_tool, program)

    def _check(self, host: Host) -> None:
        """The engine loads, the session exists when resumed, the rules and the policy can work."""
        from agy_host.engine.base import EngineError

        try:
            engine = host.load_engine()
        except EngineError as exc:
            raise EngineUnavailable(str(exc)) from exc
        if self.resume and host.store.get(engine.store_key(self.session)) is None:
            known = ", ".join(host.session_names(engine)) or "none"
            raise SessionNotFound(f"no such session {self.session!r} on engine {engine.ENGINE_NAME!r} (known: {known})")
        from agy_host.runtime.tool_reach import tools_problem

        unreachable = tools_problem(host, engine, [t.name for t in self.host_tools])
        if unreachable:
            raise EngineUnavailable(unreachable)
        problem = host.rules_problem() or host.policy_problem()
        if problem:
            raise UsageError(problem)


def _answer_rules(given: object) -> list[AnswerRule]:
    """``answers=``: a file (TOML or JSON) or a list of rule dicts."""
    import msgspec

    from agy_host.config import AnswerRule
    from agy_host.service.interactions import AnswersFileError, load_answers

    if given is None:
        return []
    if isinstance(given, (str, Path)):
        try:
            return load_answers(Path(given))
        except AnswersFileError as exc:
            raise UsageError(str(exc)) from exc
    if isinstance(given, (list, tuple)):
        try:
            return [rule if isinstance(rule, AnswerRule) else msgspec.convert(rule, AnswerRule) for rule in given]
        except msgspec.ValidationError as exc:
            raise UsageError(f"answers: {exc}") from exc
    raise UsageError(f"answers must be a file or a list of rules, not {type(given).__name__}")


def _settings(kw: Mapping[str, Any]) -> TurnSettings:
    from agy_host.runtime.session import TurnSettings

    for key in ("timeout", "inactivity"):
        value = kw[key]
        if value is not None and value < 0:
            raise UsageError(f"{key} must be >= 0 seconds (0 disables it), not {value!r}")
    for key in ("max_tokens", "max_cost"):
        value = kw.get(key)
        if value is not None and value < 0:
            raise UsageError(f"{key} must be >= 0 (0: no limit), not {value!r}")
    return TurnSettings(
        model=kw["model"],
        effort=kw["effort"],
        mode=kw["mode"],
        skip_permissions=kw["skip_permissions"],
        timeout_s=kw["timeout"],
        inactivity_s=kw["inactivity"],
        max_tokens=kw.get("max_tokens"),
        max_cost=kw.get("max_cost"),
        resume=bool(kw.get("resume")),
        wait=bool(kw.get("wait", True)),
    )
