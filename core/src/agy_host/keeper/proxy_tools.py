"""The attached program's own tools, offered by a warm session in the keeper.

A program's functions passed as ``tools=`` (the Python API) cannot be
copied into the keeper: they are its code, with its state. So the client
sends only their specs (:class:`~agy_host.keeper.wire.ToolSpec`), and the
warm session's host gets :class:`ProxyTools`, a plugin whose host tools have
those names and schemas and whose ``call`` asks the client attached for the
turn to run the function (``call_tool`` / ``tool_answer`` frames). The agent
calls them through the bridge exactly as it calls any host tool. Tools of
installed plugins keep running in the keeper, where their plugins are.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from agy_host import hookimpl
from agy_host.contract.tools import HostTool, ToolResult

if TYPE_CHECKING:
    from agy_host.keeper import wire

#: Asks the attached client to run one of its tools: ``(name, arguments) -> result``.
CallClient = Callable[[str, dict[str, Any]], Awaitable[ToolResult]]


class ProxyTools:
    """Host tools that run in the attached client (see the module docstring)."""

    name = "keeper-client-tools"

    def __init__(self, specs: Sequence[wire.ToolSpec], client: Callable[[], CallClient | None]) -> None:
        self.specs = list(specs)
        self._client = client

    @hookimpl
    def agy_host_register_tools(self, register: Callable[[HostTool], None]) -> None:
        for spec in self.specs:
            register(
                HostTool(
                    name=spec.name,
                    description=spec.description,
                    input_schema=spec.input_schema,
                    call=self._caller(spec.name),
                )
            )

    def _caller(self, name: str) -> Callable[[dict[str, Any]], Awaitable[ToolResult]]:
        async def call(arguments: dict[str, Any]) -> ToolResult:
            client = self._client()
            if client is None:
                return ToolResult(
                    text=f"host tool {name!r} runs in the program that offered it, and no such program is attached",
                    is_error=True,
                )
            return await client(name, arguments)

        return call


__all__ = ["CallClient", "ProxyTools"]
