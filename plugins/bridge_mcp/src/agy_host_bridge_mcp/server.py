"""The MCP server itself: the official ``mcp`` SDK, served by hypercorn's trio worker.

The SDK's Streamable HTTP session manager is used **stateless** (a fresh
transport per request: an agent that restarts or reconnects never meets a
stale session) with **JSON responses** (one body per call: a parked call
sends nothing until it has its answer, and there is no server-to-client
request to stream). The SDK is built on anyio, which runs on trio, and
hypercorn's trio worker serves its ASGI handler inside the host's own
nursery: no asyncio loop, no thread for serving.

A plain ``tools/call``, the hot path, is answered by the gate through
:mod:`agy_host_bridge_mcp.fast_path` with this module's own logged call (the
SDK's per-request transport costs most of a round trip); the SDK answers
everything else. What that path cannot answer without the SDK's models (a
host tool's result of the wrong types, a raising handler, a text that does
not encode) is answered here by :class:`SdkRules` with the SDK's own code.

Imported only when the bridge service starts (see
:mod:`agy_host_bridge_mcp.service`): it is the expensive part of the bridge.
"""

from __future__ import annotations

import logging
import socket
from typing import TYPE_CHECKING, Any

import hypercorn.trio
import mcp_types as types
import trio
from hypercorn.config import Config as HypercornConfig
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import ValidationError

from agy_host.contract.tools import ToolResult
from agy_host_bridge_mcp import __version__
from agy_host_bridge_mcp.fast_path import CallTool, FastCalls, structured_content
from agy_host_bridge_mcp.gate import REQUEST, BridgeGate

if TYPE_CHECKING:
    from agy_host_bridge_mcp.catalog import Catalog
    from agy_host_bridge_mcp.service import BridgeService

#: Plain ``tools/call`` requests are answered by :mod:`agy_host_bridge_mcp.fast_path`
#: (the bridge's tests turn it off to compare with the SDK's own answers).
FAST_CALLS = True

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
    """Images first, then the text (the agent reads the text as the answer),
    and the result as an object where there is one (:func:`structured_content`)."""
    content: list[types.ContentBlock] = [types.ImageContent(data=data, mime_type=mime) for data, mime in result.images]
    content.append(types.TextContent(text=result.text))
    structured = structured_content(result)
    return types.CallToolResult(content=content, structured_content=structured, is_error=result.is_error)


def logged_call(catalog: Catalog, service: BridgeService) -> CallTool:
    """The catalog's call with the service's log lines: the same for the
    SDK's handler and the fast path."""

    async def call(name: str, args: dict[str, Any], disconnected: trio.Event | None) -> ToolResult:
        service.log.add("call-tool", tool=name)
        result = await catalog.call(name, args, disconnected=disconnected)
        service.log.add("call-tool-done", tool=name, error=result.is_error)
        return result

    return call


class SdkRules:
    """The SDK's answers where the fast path needs them (see
    :class:`agy_host_bridge_mcp.fast_path.SdkRules`): the same code and log
    records as ``mcp`` 2.3's dispatcher (``_handle_request``), runner
    (``_serialize``) and transport (``_handle_post_request``)."""

    # The helpers below are the SDK's internals, imported when a rare case
    # needs them: should a release move them, only these answers fall back to
    # a plain internal error; the bridge itself keeps working.

    def tool_result(self, result: ToolResult, version: str | None) -> dict[str, Any]:
        try:
            from mcp_types import methods
        except ImportError:  # pragma: no cover - another SDK layout
            return {"error": self._internal("Handler returned an invalid result")}
        try:
            model = to_mcp(result)  # in the SDK's handler: its failure is the handler's
        except Exception as exc:
            return {"error": self.handler_error(exc)}
        dumped = model.model_dump(by_alias=True, mode="json", exclude_none=True)
        try:
            wire = methods.serialize_server_result("tools/call", version or types.DEFAULT_NEGOTIATED_VERSION, dumped)
        except ValidationError:
            logging.getLogger("mcp.server.runner").exception("handler for %r returned an invalid result", "tools/call")
            error = types.ErrorData(code=types.INTERNAL_ERROR, message="Handler returned an invalid result")
            return {"error": error.model_dump(by_alias=True, mode="json", exclude_unset=True)}
        return {"result": wire}

    def handler_error(self, exc: Exception) -> dict[str, Any]:
        try:
            from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
        except ImportError:  # pragma: no cover - another SDK layout
            return self._internal(str(exc))
        error = handler_exception_to_error_data(exc)
        if error is None:
            logging.getLogger("mcp.shared.jsonrpc_dispatcher").error(
                "handler for %r raised", "tools/call", exc_info=exc
            )
            error = types.ErrorData(code=0, message=str(exc))
        return error.model_dump(by_alias=True, mode="json", exclude_unset=True)

    @staticmethod
    def _internal(message: str) -> dict[str, Any]:
        error = types.ErrorData(code=types.INTERNAL_ERROR, message=message)
        return error.model_dump(by_alias=True, mode="json", exclude_unset=True)

    def unencodable(self, exc: Exception) -> bytes:
        logging.getLogger("mcp.server.streamable_http").error("Error handling POST request", exc_info=exc)
        error = types.ErrorData(code=types.INTERNAL_ERROR, message="Error handling POST request")
        body = types.JSONRPCError(jsonrpc="2.0", id=None, error=error)
        return body.model_dump_json(by_alias=True, exclude_unset=True).encode()


def build_server(catalog: Catalog, service: BridgeService, call: CallTool) -> Server[Any]:
    """The SDK's server; ``call`` is the logged call it shares with the fast path."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        entries = catalog.entries()
        service.log.add("list-tools", count=len(entries))
        return types.ListToolsResult(
            tools=[types.Tool(name=e.name, description=e.description, input_schema=e.input_schema) for e in entries]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments if isinstance(params.arguments, dict) else {}
        state = REQUEST.get()
        return to_mcp(await call(params.name, args, state.disconnected if state else None))

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
        catalog = service.catalog()
        call = logged_call(catalog, service)
        manager = StreamableHTTPSessionManager(
            app=build_server(catalog, service, call), json_response=True, stateless=True
        )
        fast = (
            FastCalls(
                call,
                supported_versions=HANDSHAKE_PROTOCOL_VERSIONS,
                rules=SdkRules(),
                hold=service.holding,
            )
            if FAST_CALLS
            else None
        )
        service.fast = fast

        async def held(scope: Any, receive: Any, send: Any) -> None:
            # the agent waits on its answer: its turn's inactivity clock does not run
            with service.holding():
                await manager.handle_request(scope, receive, send)

        gate = BridgeGate(
            held,
            token=service.token,
            port=service.port,
            supported_versions=frozenset(HANDSHAKE_PROTOCOL_VERSIONS),
            latest_version=LATEST_HANDSHAKE_VERSION,
            on_event=service.event,
            fast=fast,
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


__all__ = ["FAST_CALLS", "SdkRules", "build_server", "logged_call", "serve", "to_mcp"]
