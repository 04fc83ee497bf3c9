"""The plugin manager and its typed facade.

Load order: entry points of the ``agy_host`` group (filtered by
``AGY_HOST_LOAD_PLUGINS`` / ``AGY_HOST_DISABLE_PLUGINS``), then the built-ins,
then in-process plugins and the selected engine's ``hooks`` object. The
built-ins are imported at the first use that can reach them (:attr:`Plugins.pm`,
any hook but the command registration, :attr:`Plugins.errors`): none of them
registers a command, and ``agy-host --help`` should not pay for the renderers
and policies it never calls. A plugin
that fails to import or whose hooks do not match a spec is recorded in
:attr:`Plugins.errors` and skipped: ``agy-host plugins`` and ``doctor`` show it;
nothing crashes.

Core code never calls ``pm.hook`` directly; it calls the typed methods of
:class:`Plugins`. Each method calls the implementations one by one (in
pluggy's order: last registered first, ``tryfirst``/``trylast`` honoured), so
one plugin raising is recorded as an error and the others still run; plain
pluggy would stop the whole call at the first exception. Hooks that have
hookwrappers fall back to a plain pluggy call so wrapper semantics hold.
``AGY_HOST_TRACE_HOOKS=1`` prints every hook call to stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pluggy

from agy_host import entry_points, hookspecs

if TYPE_CHECKING:
    import typer

    from agy_host.contract.diagnostics import DiagnosticReport
    from agy_host.contract.events import HostEvent, ToolCard
    from agy_host.contract.permissions import PermissionPolicy
    from agy_host.contract.prompt_parts import PromptContext, PromptPart
    from agy_host.contract.rendering import RendererFactory
    from agy_host.contract.run_context import RunContext, TurnContext
    from agy_host.contract.tools import HostTool
    from agy_host.engine.base import EngineFactory, McpServerSpec
    from agy_host.plugin_records import PluginError, PluginInfo
    from agy_host.service.base import Service

PLUGIN_GROUP = "agy_host"

#: Built-in plugins, registered after external ones. pluggy calls the most
#: recently registered first, so built-ins run first in fan-out calls; the
#: ``register_*`` collectors run them in registration order instead, so an
#: external plugin's registration of the same name overrides a built-in.
BUILTIN_PLUGINS = (
    "agy_host.builtins.permission_policies",
    "agy_host.builtins.permission_ask",
    "agy_host.builtins.permission_rules",
    "agy_host.builtins.renderers",
    "agy_host.builtins.diagnostics",
    "agy_host.builtins.transcripts",
    "agy_host.builtins.prompt_assembly",
)

#: Called with (plugin name, exception) when an implementation raises.
ErrorCallback = Callable[[str, BaseException], None]


def _split(value: str | None) -> set[str] | None:
    if value is None:
        return None
    return {v.strip() for v in value.split(",") if v.strip()}


def _instance(loaded: object) -> object:
    """What to register for a loaded plugin: a module with a ``make_plugin()``
    factory keeps its state on the object that returns, one per plugin
    manager (one per host), never in module globals; anything else as is."""
    import types

    factory = getattr(loaded, "make_plugin", None) if isinstance(loaded, types.ModuleType) else None
    return factory() if callable(factory) else loaded


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class Plugins:
    """Owns the pluggy ``PluginManager``; one typed method per hook."""

    def __init__(self, env: Mapping[str, str] | None = None, *, load_entry_points: bool = True) -> None:
        self.env = os.environ if env is None else env
        self._pm = pluggy.PluginManager(hookspecs.PROJECT)
        self._pm.add_hookspecs(hookspecs)
        self._errors: list[PluginError] = []
        #: Entry point names skipped by ``AGY_HOST_LOAD_PLUGINS`` / ``AGY_HOST_DISABLE_PLUGINS``.
        self.disabled: list[str] = []
        self._dists: dict[str, tuple[str, str]] = {}
        self._tracing = self.env.get("AGY_HOST_TRACE_HOOKS", "") not in {"", "0"}
        self._run: RunContext | None = None
        self._builtins = False
        if load_entry_points:
            self._load_entry_points()
        if self._tracing:
            self._trace()

    # -- loading -----------------------------------------------------------------

    @property
    def pm(self) -> pluggy.PluginManager:
        """The pluggy manager, with the built-ins registered."""
        if not self._builtins:
            self._builtins = True
            for modname in BUILTIN_PLUGINS:
                self._register_module(modname, builtin=True)
        return self._pm

    @property
    def errors(self) -> list[PluginError]:
        """Every plugin problem met so far (load errors, failed hooks)."""
        self.pm  # noqa: B018 - a built-in that fails to import is one of them
        return self._errors

    def _record(self, *, name: str, error: str, distribution: str = "") -> None:
        """Keep each distinct problem once (hooks are called many times)."""
        from agy_host.plugin_records import PluginError

        if not any(e.name == name and e.error == error for e in self._errors):
            self._errors.append(PluginError(name=name, distribution=distribution, error=error))

    def _load_entry_points(self) -> None:
        allow = _split(self.env.get("AGY_HOST_LOAD_PLUGINS"))
        block = _split(self.env.get("AGY_HOST_DISABLE_PLUGINS")) or set()
        for ep in entry_points.group(PLUGIN_GROUP):
            dist = getattr(ep, "dist", None)
            dname = dist.name if dist is not None else ""
            if allow is not None and ep.name not in allow and dname not in allow:
                self.disabled.append(ep.name)
                continue
            if ep.name in block or dname in block:
                self._pm.set_blocked(ep.name)
                self.disabled.append(ep.name)
                continue
            if self._pm.get_plugin(ep.name) is not None or self._pm.is_blocked(ep.name):
                self._record(name=ep.name, distribution=dname, error="duplicate plugin name; skipped")
                continue
            try:
                plugin = _instance(ep.load())
                self._pm.register(plugin, name=ep.name)
            except Exception as exc:  # a broken plugin must not break the host
                self._record(name=ep.name, distribution=dname, error=_describe(exc))
                continue
            if dist is not None:
                self._dists[ep.name] = (dist.name, dist.version)

    def _register_module(self, modname: str, *, builtin: bool = False) -> None:
        import importlib

        try:
            self._pm.register(_instance(importlib.import_module(modname)), name=modname)
        except Exception as exc:
            self._record(name=modname, error=_describe(exc))
            return
        if builtin:
            self._dists[modname] = ("agy-host", _core_version())

    def register(self, plugin: object, name: str | None = None) -> None:
        """Register an in-process plugin (an engine's ``hooks``, a test's object);
        once the host configured the others, it is configured too (historic)."""
        try:
            self.pm.register(plugin, name=name)
        except Exception as exc:
            self._record(name=name or repr(plugin), error=_describe(exc))
            return
        if self._run is not None:
            for impl in self.pm.hook.agy_host_configure.get_hookimpls():
                if impl.plugin is plugin:
                    try:
                        impl.function(**{n: self._run for n in impl.argnames if n == "run"})
                    except Exception as exc:
                        self._record(name=impl.plugin_name, error=f"agy_host_configure: {_describe(exc)}")

    def check(self) -> None:
        """Record every implementation that matches no spec (a typo) as an
        error; unlike ``check_pending`` this reports all of them, not the first."""
        for hook_name, caller in vars(self.pm.hook).items():
            if hook_name.startswith("_") or not isinstance(caller, pluggy.HookCaller) or caller.has_spec():
                continue
            for impl in caller.get_hookimpls():
                if not impl.optionalhook:
                    self._record(
                        name=impl.plugin_name,
                        distribution=self._dists.get(impl.plugin_name, ("", ""))[0],
                        error=f"unknown hook {hook_name!r} (no such hook specification; a typo?)",
                    )

    def _trace(self) -> None:
        def before(hook_name: str, impls: Any, kwargs: Mapping[str, Any]) -> None:
            names = [impl.plugin_name for impl in impls]
            print(f"[hook] {hook_name}({', '.join(kwargs)}) -> {names}", file=sys.stderr)

        def after(outcome: Any, hook_name: str, impls: Any, kwargs: Mapping[str, Any]) -> None:
            if outcome.exception is not None:
                print(f"[hook] {hook_name} raised {outcome.exception!r}", file=sys.stderr)

        self._pm.add_hookcall_monitoring(before, after)

    # -- calling -----------------------------------------------------------------

    def call_each(
        self,
        hook_name: str,
        kwargs: Mapping[str, Any],
        *,
        skip: set[str] | None = None,
        on_error: ErrorCallback | None = None,
        registry: bool = False,
        builtins: bool = True,
    ) -> list[Any]:
        """Call every implementation of ``hook_name``, isolating failures.

        Returns the non-``None`` results. A raising implementation is recorded
        in :attr:`errors` (and passed to ``on_error``); when ``skip`` is given
        its plugin name is added there and skipped on later calls.
        ``registry=True`` calls built-ins first and the rest in registration
        order, so that in ``register(...)``-style hooks a plugin's registration
        replaces a built-in one of the same name. ``builtins=False`` calls
        only what is registered without importing the built-ins.
        """
        caller: pluggy.HookCaller = getattr((self.pm if builtins else self._pm).hook, hook_name)
        impls = caller.get_hookimpls()
        if any(impl.hookwrapper or impl.wrapper for impl in impls):
            return self._call_plain(caller, hook_name, kwargs, on_error)
        if registry:
            ordered = [i for i in impls if i.plugin_name in BUILTIN_PLUGINS]
            ordered += [i for i in impls if i.plugin_name not in BUILTIN_PLUGINS]
        else:
            ordered = list(reversed(impls))
        if self._tracing:
            print(f"[hook] {hook_name}({', '.join(kwargs)}) -> {[i.plugin_name for i in ordered]}", file=sys.stderr)
        results: list[Any] = []
        for impl in ordered:
            if skip is not None and impl.plugin_name in skip:
                continue
            try:
                result = impl.function(**{name: kwargs[name] for name in impl.argnames if name in kwargs})
            except Exception as exc:
                self._record(name=impl.plugin_name, error=f"{hook_name}: {_describe(exc)}")
                if self._tracing:
                    print(f"[hook] {hook_name} in {impl.plugin_name} raised {exc!r}", file=sys.stderr)
                if skip is not None:
                    skip.add(impl.plugin_name)
                if on_error is not None:
                    on_error(impl.plugin_name, exc)
                continue
            if result is not None:
                results.append(result)
        return results

    def _call_plain(
        self, caller: pluggy.HookCaller, hook_name: str, kwargs: Mapping[str, Any], on_error: ErrorCallback | None
    ) -> list[Any]:
        try:
            return list(caller(**kwargs))
        except Exception as exc:
            self._record(name=hook_name, error=_describe(exc))
            if on_error is not None:
                on_error(hook_name, exc)
            return []

    # -- introspection -------------------------------------------------------------

    def info(self) -> list[PluginInfo]:
        from agy_host.plugin_records import PluginInfo

        out: list[PluginInfo] = []
        for name, plugin in self.pm.list_name_plugin():
            if plugin is None:
                continue
            hooks = sorted(h.name for h in (self.pm.get_hookcallers(plugin) or []))
            dist, version = self._dists.get(name, ("", ""))
            out.append(
                PluginInfo(name=name, distribution=dist, version=version, hooks=hooks, builtin=name in BUILTIN_PLUGINS)
            )
        return out

    # -- typed facade ----------------------------------------------------------------

    def engines(self) -> dict[str, EngineFactory]:
        found: dict[str, EngineFactory] = {}

        def register(name: str, factory: EngineFactory) -> None:
            found.setdefault(name, factory)

        self.call_each("agy_host_register_engines", {"register": register})
        return found

    def permission_policies(self) -> dict[str, PermissionPolicy]:
        found: dict[str, PermissionPolicy] = {}

        def register(policy: PermissionPolicy) -> None:
            found[policy.name] = policy

        self.call_each("agy_host_register_permission_policies", {"register": register}, registry=True)
        return found

    def renderers(self) -> dict[str, RendererFactory]:
        found: dict[str, RendererFactory] = {}

        def register(name: str, factory: RendererFactory) -> None:
            found[name] = factory

        self.call_each("agy_host_register_renderers", {"register": register}, registry=True)
        return found

    def tools(self) -> list[HostTool]:
        found: list[HostTool] = []
        names: set[str] = set()

        def register(tool: HostTool) -> None:
            if tool.name in names:
                self._record(name=tool.name, error="duplicate host tool name; the first one is kept")
                return
            names.add(tool.name)
            found.append(tool)

        self.call_each("agy_host_register_tools", {"register": register}, registry=True)
        return found

    def register_commands(self, app: typer.Typer) -> None:
        """``agy_host_register_commands``; no built-in implements it
        (``core/tests/test_cli_startup.py`` checks), so they are not imported for it."""
        self.call_each("agy_host_register_commands", {"app": app}, builtins=False)

    def services(self, config: Any) -> list[Service]:
        out: list[Service] = []
        for result in self.call_each("agy_host_services", {"config": config}):
            out.extend(result)
        return out

    def configure(self, run: RunContext) -> None:
        """``agy_host_configure``; plugins registered later get ``run`` at registration."""
        self._run = run
        self.call_each("agy_host_configure", {"run": run})

    def turn_started(self, turn: TurnContext, *, on_error: ErrorCallback | None = None) -> None:
        self.call_each("agy_host_turn_started", {"turn": turn}, on_error=on_error)

    def prompt_parts(self, turn: PromptContext, *, on_error: ErrorCallback | None = None) -> list[PromptPart]:
        parts: list[PromptPart] = []
        for result in self.call_each("agy_host_prompt_parts", {"turn": turn}, on_error=on_error):
            parts.extend(result)
        parts.sort(key=lambda p: p.order)
        return parts

    def mcp_servers(self, engine_name: str) -> list[McpServerSpec]:
        out: list[McpServerSpec] = []
        for result in self.call_each("agy_host_mcp_servers", {"engine_name": engine_name}):
            out.extend(result)
        return out

    def render_event(
        self, event: HostEvent, *, skip: set[str] | None = None, on_error: ErrorCallback | None = None
    ) -> None:
        """Pass ``event`` to every ``agy_host_render_event`` implementation; a
        plugin that raises is added to ``skip`` (when given) and not called again."""
        self.call_each("agy_host_render_event", {"event": event}, skip=skip, on_error=on_error)

    def response_optional(self) -> bool:
        """Every ``agy_host_render_event`` implementation's plugin declared it
        can do without ``TurnEnded.response`` in memory
        (:data:`agy_host.contract.answer.RESPONSE_OPTIONAL_ATTR`); a plugin
        that did not keeps every response whole."""
        from agy_host.contract.answer import RESPONSE_OPTIONAL_ATTR

        impls = self.pm.hook.agy_host_render_event.get_hookimpls()
        return all(getattr(impl.plugin, RESPONSE_OPTIONAL_ATTR, False) is True for impl in impls)

    def diagnostics(self, report: DiagnosticReport) -> None:
        def failed(name: str, exc: BaseException) -> None:
            report.section("plugins").add(name, f"diagnostics hook failed: {_describe(exc)}", "error")

        self.call_each("agy_host_diagnostics", {"report": report}, on_error=failed)

    def render_diff(self, card: ToolCard, cwd: str) -> str | None:
        """The first diff an ``agy_host_render_diff`` implementation renders for
        ``card`` (``firstresult``: the rest are not asked); ``None`` when no
        plugin renders diffs. One that raises is recorded and the next one is
        asked: a failing diff plugin must not take the card down with it."""
        kwargs = {"card": card, "cwd": cwd}
        for impl in reversed(self.pm.hook.agy_host_render_diff.get_hookimpls()):
            try:
                result = impl.function(**{name: kwargs[name] for name in impl.argnames if name in kwargs})
            except Exception as exc:
                self._record(name=impl.plugin_name, error=f"agy_host_render_diff: {_describe(exc)}")
                continue
            if isinstance(result, str):
                return result
        return None


def _core_version() -> str:
    from agy_host import __version__

    return __version__


__all__ = ["BUILTIN_PLUGINS", "PLUGIN_GROUP", "ErrorCallback", "Plugins"]
