"""The MCP server itself: the official ``mcp`` SDK, served by hypercorn's trio worker.

The SDK's Streamable HTTP session manager is used **stateless** (a fresh
transport per request: an agent that restarts or reconnects never meets a
stale session) with **JSON responses** (one body per call: a parked call
sends nothing until it has its answer, and there is no server-to-client
request to stream). The SDK is built on anyio, which runs on trio, and
hypercorn's trio worker serves its ASGI handler inside the host's own
nursery: no asyncio loop, no thread for serving.

Imported only when the bridge service starts (see
:mod:`agy_host_bridge_mcp.service`): it is the expensive part of the bridge.
"""

from __future__ import annotations

import logging
import socket
from typing import TYPE_CHECKING, Any

import hypercorn.trio
import mcp_types as types
from hypercorn.config import Config as HypercornConfig
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from agy_host.tools import ToolResult
from agy_host_bridge_mcp import __version__
from agy_host_bridge_mcp.gate import REQUEST, BridgeGate

if TYPE_CHECKING:
    from agy_host_bridge_mcp.catalog import Catalog
    from agy_host_bridge_mcp.service import BridgeService

#: Seconds hypercorn waits for open requests when the command ends; parked
#: calls are answered by the round-trips' shutdown first, so this is short.
GRACEFUL_S = 1.0


class _ToLog(logging.Handler):
    """SDK and server log records go to the service's ring (doctor), not to
    the user's terminal: the host reports what matters itself."""

    def __init__(self, service: BridgeService) -> None:
        super().__init__(logging.WARNING)
        self.service = service

    def emit(self, record: logging.LogRecord) -> None:
        self.service.log.add("log", logger=record.name, level=record.levelname, message=record.getMessage()[:300])


def to_mcp(result: ToolResult) -> types.CallToolResult:
    """Images first, then the text (the agent reads the text as the answer)."""
    content: list[types.ContentBlock] = [types.ImageContent(data=data, mime_type=mime) for data, mime in result.images]
    content.append(types.TextContent(text=result.text))
    return types.CallToolResult(content=content, is_error=result.is_error)


def build_server(catalog: Catalog, service: BridgeService) -> Server[Any]:
    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        entries = catalog.entries()
        service.log.add("list-tools", count=len(entries))
        return types.ListToolsResult(
            tools=[types.Tool(name=e.name, description=e.description, input_schema=e.input_schema) for e in entries]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments if isinstance(params.arguments, dict) else {}
        state = REQUEST.get()
        service.log.add("call-tool", tool=params.name)
        result = await catalog.call(params.name, args, disconnected=state.disconnected if state else None)
        service.log.add("call-tool-done", tool=params.name, error=result.is_error)
        return to_mcp(result)

    return Server("agy-host-bridge", version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(service: BridgeService, sock: socket.socket) -> None:
    """Serve on the already listening ``sock`` until cancelled (hypercorn
    takes over and closes it)."""
    handler = _ToLog(service)
    loggers = [logging.getLogger(name) for name in ("mcp", "hypercorn.error")]
    for logger in loggers:
        logger.addHandler(handler)
        logger.propagate = False
    try:
        manager = StreamableHTTPSessionManager(
            app=build_server(service.catalog(), service), json_response=True, stateless=True
        )

        async def held(scope: Any, receive: Any, send: Any) -> None:
            # the agent waits on its answer: its turn's clocks do not run
            with service.holding():
                await manager.handle_request(scope, receive, send)

        gate = BridgeGate(
            held,
            token=service.token,
            port=service.port,
            supported_versions=frozenset(HANDSHAKE_PROTOCOL_VERSIONS),
            latest_version=LATEST_HANDSHAKE_VERSION,
            on_event=service.event,
        )
        config = HypercornConfig()
        config.bind = [f"fd://{sock.detach()}"]
        config.errorlog = None
        config.accesslog = None
        config.graceful_timeout = GRACEFUL_S
        async with manager.run():
            service.serving.set()
            service.log.add("serving", port=service.port)
            await hypercorn.trio.serve(gate, config)  # type: ignore[arg-type]
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
            logger.propagate = True


__all__ = ["build_server", "serve", "to_mcp"]
