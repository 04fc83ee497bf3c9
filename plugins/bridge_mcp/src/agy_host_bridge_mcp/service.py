"""The bridge service: one MCP server per command, on 127.0.0.1, in the host's nursery.

Start-up is split so the agent never waits for Python imports:

1. the loopback socket is bound and listening, and the token drawn, at once;
   the service reports ready, so the engine can hand the agent the URL and
   token (ACP ``mcpServers``; for stream-json the CLI's global MCP config is
   written now, see :mod:`agy_host_bridge_mcp.cli_registration`);
2. the server module (the ``mcp`` SDK and hypercorn: about 1.5 s of imports,
   mostly pydantic models) is imported only when the first connection
   arrives, so a run whose agent never calls the bridge pays nothing; the
   import runs in a worker thread, and that connection (and any other)
   waits in the listen backlog meanwhile. This thread is the only one the
   bridge uses, and only because a synchronous import would stall every
   other task on the host loop (the agent's JSON-RPC reader among them).
   The running turn's inactivity clock is held meanwhile (and during every request
   after it, see :meth:`BridgeService.holding`): the agent is waiting on the
   host, and a slow import on a busy machine must not read as the agent's
   silence.

The service lives for the command (``run``): when the command ends its task
is cancelled, the server stops, and the CLI registration is removed.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import trio

from agy_host.engine.base import McpServerSpec
from agy_host.engine.lifecycle import Lifecycle
from agy_host_bridge_mcp.gate import TOKEN_HEADER

if TYPE_CHECKING:
    from agy_host.config import BridgeConfig
    from agy_host.service.roundtrips import ServiceContext
    from agy_host_bridge_mcp.catalog import Catalog
    from agy_host_bridge_mcp.cli_registration import CliRegistration
    from agy_host_bridge_mcp.fast_path import FastCalls

SERVER_NAME = "agy-host-bridge"
STREAM_JSON = "stream-json"

#: Services whose server is up, for the ``agy_host_mcp_servers`` hook (a hook
#: has no handle on "this command's" service; one bridge per process).
LIVE: list[BridgeService] = []


class BridgeService:
    """The ``agy_host_services`` service of the bridge plugin."""

    name = "bridge-mcp"

    def __init__(self, settings: BridgeConfig, env: Mapping[str, str] | None = None) -> None:
        self.settings = settings
        self.env: Mapping[str, str] = os.environ if env is None else env
        self._env_given = env is not None
        self.ctx: ServiceContext | None = None
        self.token = secrets.token_urlsafe(32)
        self.port: int | None = None
        self.log = Lifecycle()
        self.registration: CliRegistration | None = None
        self.serving = trio.Event()
        #: The server's fast path for plain ``tools/call`` (set when it serves).
        self.fast: FastCalls | None = None
        self._remove_guard: Callable[[], None] | None = None
        self._warned: set[str] = set()

    # -- wiring ---------------------------------------------------------------------

    def bind_host(self, ctx: ServiceContext) -> None:
        """Called by the host before :meth:`run` (the round-trips, engine, cwd,
        and the command's environment: a Python session's ``env=`` is its
        HOME, so the ``agy`` CLI's MCP config is written there, never into
        the process's own)."""
        self.ctx = ctx
        if not self._env_given:
            self.env = ctx.env

    @property
    def url(self) -> str | None:
        return f"http://127.0.0.1:{self.port}/mcp" if self.port is not None else None

    def mcp_server(self) -> McpServerSpec | None:
        """What the agent is told to connect to (``None`` before the socket is bound)."""
        url = self.url
        if url is None:
            return None
        from agy_host_bridge_mcp.catalog import SKILL_TOOL

        offers = [SKILL_TOOL] if self.ctx is not None and self.catalog().skills() else []
        return McpServerSpec(
            name=SERVER_NAME,
            url=url,
            type="http",
            headers={TOKEN_HEADER: self.token},
            role="host-tools",
            offers=offers,
        )

    def holding(self) -> contextlib.AbstractContextManager[None]:
        """Hold the active turn's inactivity clock while the bridge works for the agent."""
        roundtrips = self.ctx.roundtrips if self.ctx is not None else None
        return roundtrips.holding() if roundtrips is not None else contextlib.nullcontext()

    def warn(self, message: str) -> None:
        ctx = self.ctx
        (ctx.warn if ctx is not None else (lambda _m: None))(message)

    def event(self, kind: str, detail: dict[str, Any]) -> None:
        """The gate's and server's events: kept for doctor; the first refusal
        of each kind is also said out loud (it may be a misconfigured agent)."""
        self.log.add(kind, **detail)
        if kind in {"unauthorized", "foreign-origin", "too-large"} and kind not in self._warned:
            self._warned.add(kind)
            self.warn(f"bridge: refused a request ({kind}: {detail}); further ones are only logged")

    def catalog(self) -> Catalog:
        from agy_host_bridge_mcp.catalog import Catalog

        ctx = self.ctx
        return Catalog(
            tools=ctx.tools if ctx is not None else list,
            roundtrips=ctx.roundtrips if ctx is not None else None,
            env=self.env,
            cwd=ctx.cwd if ctx is not None else os.getcwd(),
            trusted_projects=list(self.settings.trusted_projects),
            skills=self.settings.skills,
            warn=self.warn,
        )

    # -- running --------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        if self.ctx is None:
            # Started by a command that runs no turns (no round-trips to park
            # on): there is nothing to serve, so it never reports ready.
            self.log.add("not-bound")
            return
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind(("127.0.0.1", self.settings.port))
            sock.listen(128)
        except OSError:
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        self.log.add("listening", port=self.port)
        LIVE.append(self)
        try:
            self._register_for_cli()
            task_status.started()
            # Nothing is imported until the agent connects: a run whose agent
            # never uses the bridge pays nothing for the SDK.
            await trio.lowlevel.wait_readable(sock.fileno())
            self.log.add("first-connection")
            with self.holding():
                server = await trio.to_thread.run_sync(_import_server, abandon_on_cancel=True)
            await server.serve(self, sock)
        finally:
            with contextlib.suppress(ValueError):
                LIVE.remove(self)
            sock.close()
            if self._remove_guard is not None:
                self._remove_guard()
            if self.registration is not None:
                self.registration.stop()
            self.log.add("closed")

    def _register_for_cli(self) -> None:
        ctx = self.ctx
        if ctx is None or ctx.engine_name != STREAM_JSON or not self.settings.cli_registration:
            return
        from agy_host.service.roundtrips import add_delegation_guard
        from agy_host_bridge_mcp.cli_registration import CliRegistration, config_file

        url = self.url
        assert url is not None
        registration = CliRegistration(config_file(self.env), warn=self.warn)
        if registration.start(url, self.token):
            self.registration = registration
            self._remove_guard = add_delegation_guard(registration.suppressed)
            self.log.add("cli-registered", path=str(registration.path))


def _import_server() -> Any:
    import importlib

    return importlib.import_module("agy_host_bridge_mcp.server")


def current() -> BridgeService | None:
    """The bridge serving this process, if any (the newest)."""
    return LIVE[-1] if LIVE else None


__all__ = ["LIVE", "SERVER_NAME", "BridgeService", "current"]
