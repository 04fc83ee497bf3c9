"""The bridge plugin's hooks: loaded on every CLI start, so they import nothing heavy.

* ``agy_host_services``: the bridge service for commands that run turns
  (unless ``[bridge] enabled = false``); the server itself is imported when
  the service starts.
* ``agy_host_mcp_servers``: the running bridge, for the engine to hand the
  agent (ACP ``mcpServers`` on ``session/new`` and ``session/load``, with the
  token as a header).
* ``agy_host_register_tools``: ``agy_host_ask_user`` and its old name
  ``ask_user`` (through the host's broker, given by ``agy_host_configure``:
  one plugin object per host, :func:`make_plugin`).
* ``agy_host_diagnostics``: the bridge's settings, skills and CLI registration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agy_host import hookimpl

if TYPE_CHECKING:
    from agy_host.contract.diagnostics import DiagnosticReport
    from agy_host.contract.interactions import QuestionAsker
    from agy_host.contract.run_context import RunContext
    from agy_host.contract.tools import HostTool
    from agy_host.engine.base import McpServerSpec
    from agy_host.service.base import Service


def services(config: Any) -> list[Service] | None:
    from agy_host.config import Config

    if not isinstance(config, Config) or not config.bridge.enabled:
        return None
    from agy_host_bridge_mcp.service import BridgeService

    return [BridgeService(config.bridge)]


def mcp_servers() -> list[McpServerSpec] | None:
    from agy_host_bridge_mcp.service import current

    service = current()
    spec = service.mcp_server() if service is not None else None
    return [spec] if spec is not None else None


class BridgePlugin:
    """The plugin's hooks for one host (one per plugin manager, :func:`make_plugin`):
    the question tool asks through the broker of the host that configured it."""

    def __init__(self) -> None:
        self.ask: QuestionAsker | None = None
        self.env: Mapping[str, str] | None = None

    @hookimpl
    def agy_host_configure(self, run: RunContext) -> None:
        self.ask = run.ask_question
        self.env = run.env

    @hookimpl
    def agy_host_services(self, config: Any) -> list[Service] | None:
        return services(config)

    @hookimpl
    def agy_host_mcp_servers(self, engine_name: str) -> list[McpServerSpec] | None:
        return mcp_servers()

    @hookimpl
    def agy_host_register_tools(self, register: Callable[[HostTool], None]) -> None:
        from agy_host_bridge_mcp import ask_user

        for tool in ask_user.tools(self.env, self.ask):
            register(tool)

    @hookimpl
    def agy_host_diagnostics(self, report: DiagnosticReport) -> None:
        from agy_host_bridge_mcp.diagnostics import bridge_rows

        bridge_rows(report)


def make_plugin() -> BridgePlugin:
    """Called by the plugin manager: one :class:`BridgePlugin` per host."""
    return BridgePlugin()


__all__ = ["BridgePlugin", "make_plugin", "mcp_servers", "services"]
