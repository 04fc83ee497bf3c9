"""The plugin manager and its typed facade.

Load order: entry points of the ``agy_host`` group (filtered by
``AGY_HOST_LOAD_PLUGINS`` / ``AGY_HOST_DISABLE_PLUGINS``), then the built-ins,
then the selected engine's ``hooks`` object. A plugin that fails to import or
whose hooks do not match a spec is recorded in :attr:`Plugins.errors` and
skipped: ``agy-host plugins`` and ``doctor`` show it; nothing crashes.

Core code never calls ``pm.hook`` directly; it calls the typed methods of
:class:`Plugins`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from importlib import metadata
from typing import TYPE_CHECKING, Any

import msgspec
import pluggy

from agy_host import hookspecs

if TYPE_CHECKING:
    import typer

    from agy_host.diagnostics import DiagnosticReport
    from agy_host.engines import EngineFactory, McpServerSpec
    from agy_host.events import HostEvent
    from agy_host.permissions import PermissionPolicy
    from agy_host.prompt_parts import PromptContext, PromptPart
    from agy_host.rendering import RendererFactory
    from agy_host.services import Service
    from agy_host.tools import HostTool

PLUGIN_GROUP = "agy_host"

#: Built-in plugins, registered after external ones (so externals run first in
#: fan-out calls and can override registrations by name).
BUILTIN_PLUGINS = (
    "agy_host.builtins.permission_policies",
    "agy_host.builtins.renderers",
    "agy_host.builtins.diagnostics",
)


class PluginError(msgspec.Struct, kw_only=True):
    name: str
    distribution: str = ""
    error: str


class PluginInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    name: str
    distribution: str = ""
    version: str = ""
    hooks: list[str] = msgspec.field(default_factory=list)
    builtin: bool = False


def _split(value: str | None) -> set[str] | None:
    if value is None:
        return None
    return {v.strip() for v in value.split(",") if v.strip()}


class Plugins:
    """Owns the pluggy ``PluginManager``; one typed method per hook."""

    def __init__(self, env: Mapping[str, str] | None = None, *, load_entry_points: bool = True) -> None:
        self.env = os.environ if env is None else env
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.errors: list[PluginError] = []
        self._dists: dict[str, tuple[str, str]] = {}
        if load_entry_points:
            self._load_entry_points()
        for modname in BUILTIN_PLUGINS:
            self._register_module(modname, builtin=True)
        if self.env.get("AGY_HOST_TRACE_HOOKS", "") not in {"", "0"}:
            self._trace()

    # -- loading -----------------------------------------------------------------

    def _load_entry_points(self) -> None:
        allow = _split(self.env.get("AGY_HOST_LOAD_PLUGINS"))
        block = _split(self.env.get("AGY_HOST_DISABLE_PLUGINS")) or set()
        for ep in metadata.entry_points(group=PLUGIN_GROUP):
            dist = getattr(ep, "dist", None)
            dname = dist.name if dist is not None else ""
            if allow is not None and ep.name not in allow and dname not in allow:
                continue
            if ep.name in block or dname in block:
                self.pm.set_blocked(ep.name)
                continue
            if self.pm.get_plugin(ep.name) is not None or self.pm.is_blocked(ep.name):
                self.errors.append(
                    PluginError(name=ep.name, distribution=dname, error="duplicate plugin name; skipped")
                )
                continue
            try:
                plugin = ep.load()
                self.pm.register(plugin, name=ep.name)
            except Exception as exc:  # a broken plugin must not break the host
                self.errors.append(PluginError(name=ep.name, distribution=dname, error=f"{type(exc).__name__}: {exc}"))
                continue
            if dist is not None:
                self._dists[ep.name] = (dist.name, dist.version)

    def _register_module(self, modname: str, *, builtin: bool = False) -> None:
        import importlib

        try:
            module = importlib.import_module(modname)
            self.pm.register(module, name=modname)
        except Exception as exc:
            self.errors.append(PluginError(name=modname, error=f"{type(exc).__name__}: {exc}"))
            return
        if builtin:
            self._dists[modname] = ("agy-host", _core_version())

    def register(self, plugin: object, name: str | None = None) -> None:
        """Register an in-process plugin (an engine's ``hooks``, a test's object)."""
        try:
            self.pm.register(plugin, name=name)
        except Exception as exc:
            self.errors.append(PluginError(name=name or repr(plugin), error=f"{type(exc).__name__}: {exc}"))

    def check(self) -> None:
        """Record implementations that match no spec (typos) as errors."""
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            self.errors.append(PluginError(name=str(getattr(exc, "plugin", "?")), error=str(exc)))

    def _trace(self) -> None:
        def before(hook_name: str, impls: Any, kwargs: Mapping[str, Any]) -> None:
            names = [impl.plugin_name for impl in impls]
            print(f"[hook] {hook_name}({', '.join(kwargs)}) -> {names}", file=sys.stderr)

        def after(outcome: Any, hook_name: str, impls: Any, kwargs: Mapping[str, Any]) -> None:
            if outcome.exception is not None:
                print(f"[hook] {hook_name} raised {outcome.exception!r}", file=sys.stderr)

        self.pm.add_hookcall_monitoring(before, after)

    # -- introspection -------------------------------------------------------------

    def info(self) -> list[PluginInfo]:
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

    @property
    def _hook(self) -> Any:
        return self.pm.hook

    def engines(self) -> dict[str, EngineFactory]:
        found: dict[str, EngineFactory] = {}
        self._hook.agy_host_register_engines(register=found.setdefault)
        return found

    def permission_policies(self) -> dict[str, PermissionPolicy]:
        found: dict[str, PermissionPolicy] = {}

        def register(policy: PermissionPolicy) -> None:
            found[policy.name] = policy

        # pluggy calls the last-registered first; reverse so built-ins register
        # first and plugins override them by name.
        for impl in reversed(self.pm.hook.agy_host_register_permission_policies.get_hookimpls()):
            impl.function(register=register)
        return found

    def renderers(self) -> dict[str, RendererFactory]:
        found: dict[str, RendererFactory] = {}

        def register(name: str, factory: RendererFactory) -> None:
            found[name] = factory

        for impl in reversed(self.pm.hook.agy_host_register_renderers.get_hookimpls()):
            impl.function(register=register)
        return found

    def tools(self) -> list[HostTool]:
        found: list[HostTool] = []
        self._hook.agy_host_register_tools(register=found.append)
        return found

    def register_commands(self, app: typer.Typer) -> None:
        try:
            self._hook.agy_host_register_commands(app=app)
        except Exception as exc:
            self.errors.append(PluginError(name="agy_host_register_commands", error=f"{type(exc).__name__}: {exc}"))

    def services(self, config: Any) -> list[Service]:
        out: list[Service] = []
        for result in self._hook.agy_host_services(config=config):
            if result:
                out.extend(result)
        return out

    def prompt_parts(self, turn: PromptContext) -> list[PromptPart]:
        parts: list[PromptPart] = []
        for result in self._hook.agy_host_prompt_parts(turn=turn):
            if result:
                parts.extend(result)
        parts.sort(key=lambda p: p.order)
        return parts

    def mcp_servers(self, engine_name: str) -> list[McpServerSpec]:
        out: list[McpServerSpec] = []
        for result in self._hook.agy_host_mcp_servers(engine_name=engine_name):
            if result:
                out.extend(result)
        return out

    def render_event(self, event: HostEvent) -> None:
        self._hook.agy_host_render_event(event=event)

    def diagnostics(self, report: DiagnosticReport) -> None:
        self._hook.agy_host_diagnostics(report=report)


def _core_version() -> str:
    from agy_host import __version__

    return __version__


__all__ = ["BUILTIN_PLUGINS", "PLUGIN_GROUP", "PluginError", "PluginInfo", "Plugins"]
