"""A testing kit for the bridge (its own tests use it; so may a plugin's):
a real bridge service on loopback, bound to real round-trips, with a
stand-in for the turn layer and the host's tool loop (:func:`running_bridge`),
and the official MCP SDK client pointed at it (:func:`mcp_client`).

Imported only by tests: it pulls in the SDK's client."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import trio

from agy_host.config import BridgeConfig, Config
from agy_host.contract.events import BridgeCallActivity, HostEvent
from agy_host.contract.tools import HostTool, ToolResult
from agy_host.engine.driver import TurnHandle
from agy_host.service.roundtrips import RoundTrips, RoundTripSettings, ServiceContext, open_roundtrips
from agy_host_bridge_mcp.service import BridgeService

#: Real HTTP means a real clock: small budgets, never minutes.
QUICK = RoundTripSettings(park_ttl_s=10.0, escalate_after_s=0.0, escalated_ttl_s=30.0)


class FakeTurns:
    """The turn layer as the round-trips see it, plus the host's tool loop:
    every bridge call the turn parks on is run and its result delivered."""

    def __init__(self, rt: RoundTrips, tools: Mapping[str, HostTool]) -> None:
        self.rt = rt
        self.tools = tools
        self.handle: TurnHandle | None = TurnHandle()
        self.unparks = 0
        self.events: list[HostEvent] = []
        self.calls: list[BridgeCallActivity] = []

    def active_handle(self) -> TurnHandle | None:
        return self.handle if self.handle is not None and not self.handle.closed else None

    def unpark(self) -> None:
        self.unparks += 1

    def emit(self, event: HostEvent) -> None:
        self.events.append(event)

    async def host_loop(self) -> None:
        assert self.handle is not None
        async for activity in self.handle:
            if isinstance(activity, BridgeCallActivity):
                self.calls.append(activity)
                tool = self.tools[activity.name]
                result = await tool.call(dict(activity.args))
                self.rt.deliver_tool_result(activity.call_id, result)


class Bridge:
    def __init__(self, service: BridgeService, rt: RoundTrips, turns: FakeTurns, warnings: list[str]) -> None:
        self.service = service
        self.rt = rt
        self.turns = turns
        self.warnings = warnings

    @property
    def url(self) -> str:
        assert self.service.url is not None
        return self.service.url

    @property
    def headers(self) -> dict[str, str]:
        return {"x-bridge-token": self.service.token}


def host_tool(name: str, result: ToolResult | None = None, *, delay: float = 0.0) -> HostTool:
    async def call(args: dict[str, Any]) -> ToolResult:
        if delay:
            await trio.sleep(delay)
        return result or ToolResult(text=f"{name} got {args}")

    return HostTool(
        name=name,
        description=f"the {name} test tool",
        input_schema={"type": "object", "properties": {"x": {"type": "integer"}}},
        call=call,
    )


#: The first bytes of a PNG, base64: an image for a host tool to return.
PNG = "iVBORw0KGgo="


def value_tools() -> dict[Callable[[], Any], tuple[str, dict[str, Any] | None]]:
    """Python functions (a program's ``tools=``) returning each kind of value:
    an int, a str, a list, a dict, ``None`` and an image; each with the text
    the agent reads and the ``structuredContent`` the bridge sends with it
    (an object, always, where the text is JSON: MCP clients take no other)."""

    def number() -> int:
        """A number."""
        return 42

    def word() -> str:
        """A word."""
        return "forty-two"

    def numbers() -> list[int]:
        """A list."""
        return [4, 2]

    def record() -> dict[str, Any]:
        """An object."""
        return {"answer": 42, "unit": None}

    def nothing() -> None:
        """Nothing."""

    def picture() -> ToolResult:
        """An image."""
        return ToolResult(text="a red dot", images=[(PNG, "image/png")])

    return {
        number: ("42", {"result": 42}),
        word: ("forty-two", {"result": "forty-two"}),
        numbers: ("[4,2]", {"result": [4, 2]}),
        record: ('{"answer":42,"unit":null}', {"answer": 42, "unit": None}),
        nothing: ("", {"result": None}),
        picture: ("a red dot", None),  # plain text, no JSON: nothing to misread
    }


@contextlib.asynccontextmanager
async def running_bridge(
    tmp_path: Path,
    tools: Sequence[HostTool] = (),
    *,
    settings: RoundTripSettings = QUICK,
    bridge: BridgeConfig | None = None,
    engine: str = "acp",
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    host_loop: bool = True,
) -> AsyncIterator[Bridge]:
    """A bridge serving ``tools`` on 127.0.0.1 until the block ends."""
    home = tmp_path / "home"
    environ = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "AGY_HOST_TTY": "none"}
    environ.update(env or {})
    warnings: list[str] = []
    by_name = {t.name: t for t in tools}
    async with open_roundtrips(settings) as rt, trio.open_nursery() as nursery:
        turns = FakeTurns(rt, by_name)
        rt.attach(turns)
        service = BridgeService(bridge or BridgeConfig(), env=environ)
        service.bind_host(
            ServiceContext(
                roundtrips=rt,
                engine_name=engine,
                cwd=cwd or str(tmp_path),
                config=Config(),
                env=environ,
                tools=lambda: list(tools),
                warn=warnings.append,
            )
        )
        await nursery.start(service.run)  # listening; the SDK loads on the first connection
        if host_loop:
            nursery.start_soon(turns.host_loop)
        yield Bridge(service, rt, turns, warnings)
        nursery.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def mcp_client(bridge: Bridge, mode: str = "legacy") -> AsyncIterator[Any]:
    """The official SDK client, with the bridge token, in ``legacy`` (the
    initialize handshake agents use) or ``auto`` (2026 discovery) mode."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers=bridge.headers)
    async with http, Client(streamable_http_client(bridge.url, http_client=http), mode=mode) as client:
        yield client
