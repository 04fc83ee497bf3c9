"""Async helpers behind the ACP plugin's CLI commands."""

from __future__ import annotations

from agy_host.engines import EngineContext, EngineError
from agy_host.lifecycle import Lifecycle
from agy_host.permissions import PermissionDecision, PermissionRequest


async def _no_permissions(request: PermissionRequest) -> PermissionDecision:
    return PermissionDecision(option_id=None, policy="host", reason="probe")


async def fetch_auth_methods(agent: str | None) -> tuple[list[tuple[str, str, str]], str]:
    """``initialize`` the agent and return its auth methods, or an error text."""
    from agy_host import config
    from agy_host_acp.engine import AcpEngine
    from agy_host_acp.jsonrpc import ConnectionClosed, JsonRpcError, RequestTimeout
    from agy_host_acp.process import SpawnError

    cfg = config.load()
    ctx = EngineContext(config=cfg, state_dir=config.state_dir(), decide_permission=_no_permissions, agent=agent)
    engine = AcpEngine(ctx)
    try:
        async with engine._probe_connection(Lifecycle()) as conn:
            info = conn.info
            methods = [(m.id, m.name, m.description or "") for m in (info.auth_methods if info else [])]
            return methods, ""
    except (EngineError, SpawnError, RequestTimeout, ConnectionClosed, JsonRpcError) as exc:
        return [], str(exc)
