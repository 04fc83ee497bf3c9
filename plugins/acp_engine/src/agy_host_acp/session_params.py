"""The params every session lifecycle request shares (``session/new``,
``session/load``, ``session/resume``): the working directory, the MCP
servers (the host's bridge among them) in ACP's shape, and the extra
workspace roots when there are any. One function, so a resumed session
gets exactly what a new one would."""

from __future__ import annotations

from typing import Any

from agy_host.engine.base import McpServerSpec


def mcp_servers(servers: list[McpServerSpec]) -> list[dict[str, Any]]:
    """ACP's ``McpServer`` entries (headers as a name/value list)."""
    return [
        {
            "type": srv.type,
            "name": srv.name,
            "url": srv.url,
            "headers": [{"name": k, "value": v} for k, v in srv.headers.items()],
        }
        for srv in servers
    ]


def session_params(cwd: str, servers: list[McpServerSpec], additional: list[str] | None = None) -> dict[str, Any]:
    """``cwd``, ``mcpServers`` and, when there are any, ``additionalDirectories``."""
    params: dict[str, Any] = {"cwd": cwd, "mcpServers": mcp_servers(servers)}
    if additional:
        params["additionalDirectories"] = list(additional)
    return params


__all__ = ["mcp_servers", "session_params"]
