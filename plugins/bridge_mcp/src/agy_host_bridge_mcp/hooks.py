"""The bridge plugin's hooks: loaded on every CLI start, so they import nothing heavy.

* ``agy_host_services``: the bridge service for commands that run turns
  (unless ``[bridge] enabled = false``); the server itself is imported when
  the service starts.
* ``agy_host_mcp_servers``: the running bridge, for the engine to hand the
  agent (ACP ``mcpServers`` on ``session/new`` and ``session/load``, with the
  token as a header).
* ``agy_host_register_tools``: ``ask_user``.
* ``agy_host_diagnostics``: the bridge's settings, skills and CLI registration.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agy_host import hookimpl

if TYPE_CHECKING:
    from agy_host.contract.diagnostics import DiagnosticReport
    from agy_host.contract.tools import HostTool
    from agy_host.engine.base import McpServerSpec
    from agy_host.service.base import Service


@hookimpl
def agy_host_services(config: Any) -> list[Service] | None:
    from agy_host.config import Config

    if not isinstance(config, Config) or not config.bridge.enabled:
        return None
    from agy_host_bridge_mcp.service import BridgeService

    return [BridgeService(config.bridge)]


@hookimpl
def agy_host_mcp_servers(engine_name: str) -> list[McpServerSpec] | None:
    from agy_host_bridge_mcp.service import current

    service = current()
    spec = service.mcp_server() if service is not None else None
    return [spec] if spec is not None else None


@hookimpl
def agy_host_register_tools(register: Callable[[HostTool], None]) -> None:
    from agy_host_bridge_mcp import ask_user

    register(ask_user.tool())


@hookimpl
def agy_host_diagnostics(report: DiagnosticReport) -> None:
    from agy_host_bridge_mcp.diagnostics import bridge_rows

    bridge_rows(report)
