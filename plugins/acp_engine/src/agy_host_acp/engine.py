"""The ACP engine: Antigravity's official server by default, any ACP agent on
request (``--agent "CMD ARGS"`` or a profile in ``[acp.profiles]``)."""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec
import trio

from agy_host.engine.base import (
    AgentSession,
    Engine,
    EngineCapabilities,
    EngineContext,
    EngineError,
    ModeCatalog,
    ModelCatalog,
    NotOffered,
)
from agy_host.engine.concurrency import unwrap_single
from agy_host.engine.lifecycle import Lifecycle
from agy_host_acp import modes
from agy_host_acp import schema as s
from agy_host_acp.connection import AcpConnection, AuthRequired
from agy_host_acp.jsonrpc import ConnectionClosed, JsonRpcError, RequestTimeout
from agy_host_acp.memory import AgentMemory
from agy_host_acp.process import SpawnError
from agy_host_acp.profiles import AgentNotFound, AgentSpec, resolve_agent, sandbox_spec

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agy_host.contract.diagnostics import DiagnosticReport, Status
    from agy_host_acp.driver import AcpDriver

#: ``session/list`` pages read at most (a cursor that never ends must not loop).
MAX_LIST_PAGES = 50


class AcpEngine(Engine):
    ENGINE_NAME: ClassVar[str] = "acp"
    DESCRIPTION: ClassVar[str] = "Agent Client Protocol: Antigravity's official ACP server, or any ACP agent command"
    STORE_SUFFIX: ClassVar[str | None] = "@acp"

    def __init__(self, ctx: EngineContext) -> None:
        super().__init__(ctx)
        self.spec_error: str | None = None
        try:
            self.spec: AgentSpec = resolve_agent(ctx.config, ctx.env, ctx.agent)
        except AgentNotFound as exc:
            self.spec_error = str(exc)
            self.spec = sandbox_spec([])
        self.sandbox = self.spec.kind == "sandbox" and self.spec_error is None and ctx.agent != "sandbox"
        #: What the agent advertised when :meth:`diagnose` last asked it.
        self._advertised: EngineCapabilities | None = None

    @property
    def capabilities(self) -> EngineCapabilities:
        return EngineCapabilities(
            reports_usage=not self.spec.is_agy,
            plan_mode=False,
            images=True,
            resources=True,
            load_session=True,
            # Antigravity's modes are known (no plan: `ask --mode plan` asks the
            # agy CLI), and so is the sandbox that stands in for it.
            agent_modes=not (self.spec.is_agy or self.sandbox),
        )

    def advertised_capabilities(self) -> EngineCapabilities | None:
        return self._advertised

    def store_key(self, session: str) -> str:
        """``<session>@acp`` for Antigravity; ``<session>@acp:<profile|hash>``
        for other agents, whose conversation ids mean nothing to each other."""
        return f"{session}{self.spec.store_suffix}"

    def agent_label(self) -> str:
        if self.spec_error is not None:
            return "not found (see the binary row)" if self.ctx.agent in (None, "", "agy") else "not usable"
        return self.spec.label

    @contextlib.asynccontextmanager
    async def _driver(self) -> AsyncIterator[AcpDriver]:
        if self.spec_error is not None:
            raise EngineError(self.spec_error)
        from agy_host_acp.driver import open_driver

        async with open_driver(self) as driver:
            yield driver

    def open_driver(self) -> contextlib.AbstractAsyncContextManager[AcpDriver]:
        return self._driver()

    # -- probes ----------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _probe_connection(self, lifecycle: Lifecycle) -> AsyncIterator[AcpConnection]:
        if self.spec_error is not None:
            raise EngineError(self.spec_error)
        acp = self.ctx.config.acp
        with unwrap_single():
            async with trio.open_nursery() as nursery:
                conn = AcpConnection(
                    self.spec,
                    cwd=str(self.ctx.env.get("PWD") or "."),
                    env=self.ctx.env,
                    generation=1,
                    lifecycle=lifecycle,
                    on_exit=lambda _c: None,
                    on_notice=lambda level, msg, code: lifecycle.add("notice", level=level, message=msg[:300]),
                    initialize_timeout=acp.initialize_timeout_seconds,
                    session_timeout=acp.session_timeout_seconds,
                    kill_grace=acp.kill_grace_seconds,
                    trace=self.wire_trace(),
                )
                try:
                    await conn.start(nursery)
                    yield conn
                finally:
                    with trio.CancelScope(shield=True):
                        await conn.aclose()
                    nursery.cancel_scope.cancel()

    async def list_models(self) -> ModelCatalog:
        """Ask the agent: ``session/new`` lists models (config option ``model``
        or the ``models`` field); Antigravity's tiers fold into families.
        Spends no tokens."""
        import os

        from agy_host_acp import models

        async with self._probe_connection(Lifecycle()) as conn:
            setup = await conn.new_session(os.getcwd(), [])
        return models.catalog(setup, antigravity=self.spec.is_agy)

    async def list_modes(self) -> ModeCatalog:
        """Ask the agent: ``session/new`` lists its modes (config option
        ``mode`` or the ``modes`` field). Spends no tokens."""
        import os

        async with self._probe_connection(Lifecycle()) as conn:
            setup = await conn.new_session(os.getcwd(), [])
        return modes.catalog(setup, antigravity=self.spec.is_agy)

    async def list_agent_sessions(self, cwd: str | None = None) -> list[AgentSession]:
        """``session/list`` (``sessionCapabilities.list``), every page."""
        found: list[AgentSession] = []
        async with self._probe_connection(Lifecycle()) as conn:
            self._require(conn, "list")
            cursor: str | None = None
            for _ in range(MAX_LIST_PAGES):
                params: dict[str, Any] = {"cwd": cwd} if cwd else {}
                if cursor:
                    params["cursor"] = cursor
                try:
                    raw = await conn.call("session/list", params)
                except JsonRpcError as exc:
                    raise EngineError(f"{self.spec.label} could not list its sessions: {exc}") from exc
                page = s.convert(raw if isinstance(raw, dict) else {}, s.ListSessionsResult)
                found += [
                    AgentSession(id=i.session_id, cwd=i.cwd or "", title=i.title or "", updated_at=i.updated_at or "")
                    for i in page.sessions
                    if i.session_id
                ]
                cursor = page.next_cursor
                if not cursor:
                    break
        return found

    async def delete_agent_session(self, session_id: str) -> None:
        """``session/delete`` (``sessionCapabilities.delete``)."""
        async with self._probe_connection(Lifecycle()) as conn:
            self._require(conn, "delete")
            try:
                await conn.call("session/delete", {"sessionId": session_id})
            except JsonRpcError as exc:
                raise EngineError(f"{self.spec.label} could not delete session {session_id}: {exc}") from exc

    async def fork_conversation(self, conversation_id: str, cwd: str) -> str:
        """``session/fork`` (``sessionCapabilities.fork``, unstable in ACP):
        the agent copies the conversation into a new one; this agent process
        ends after answering, and the next turn on the fork resumes (or
        loads) it like any stored conversation."""
        params = {"sessionId": conversation_id, "cwd": cwd, "mcpServers": []}
        try:
            async with self._probe_connection(Lifecycle()) as conn:
                self._require(conn, "fork")
                raw = await conn.call("session/fork", params)
        except JsonRpcError as exc:
            raise EngineError(f"{self.spec.label} could not fork session {conversation_id}: {exc}") from exc
        except (SpawnError, RequestTimeout, ConnectionClosed, AuthRequired) as exc:
            raise EngineError(f"{self.spec.label} could not be asked to fork a session: {exc}") from exc
        forked = raw.get("sessionId") if isinstance(raw, dict) else None
        if not isinstance(forked, str) or not forked:
            raise EngineError(f"{self.spec.label} answered session/fork without a sessionId: {raw!r:.200}")
        return forked

    def _require(self, conn: AcpConnection, capability: str) -> None:
        caps = conn.info.agent_capabilities if conn.info else s.AgentCapabilities()
        if caps.session_capabilities.get(capability) is None:
            raise NotOffered(
                f"{self.spec.label} does not offer session/{capability} "
                f"(no sessionCapabilities.{capability} in its initialize answer)"
            )

    async def diagnose(self, report: DiagnosticReport) -> None:
        sec = report.section("acp engine")
        sec.add("agent", self.agent_label(), "info")
        if self.sandbox:
            sec.add(
                "agent note",
                "no Antigravity ACP server found; turns run on the bundled sandbox agent (echo only)",
                "warn",
            )
        for probe in self.spec.tried:
            status: Status = "ok" if probe.result == "found" else "info"
            sec.add(f"binary ({probe.source})", f"{probe.path}: {probe.result}", status)
        if self.spec_error is not None:
            sec.add("binary", self.spec_error, "error")
            return
        sec.add("command", " ".join(self.spec.command))
        lifecycle = Lifecycle()
        started = time.monotonic()
        try:
            async with self._probe_connection(lifecycle) as conn:
                info = conn.info or s.InitializeResult()
                agent = info.agent_info
                sec.add("handshake", f"{conn.handshake_s or time.monotonic() - started:.2f}s", "ok")
                sec.add("server", f"{agent.version or 'unknown'} ({agent.title or agent.name})" if agent else "unknown")
                caps = info.agent_capabilities
                sec.add(
                    "capabilities",
                    f"loadSession={caps.load_session} image={caps.prompt_capabilities.image} "
                    f"embeddedContext={caps.prompt_capabilities.embedded_context} "
                    f"mcp http={caps.mcp_capabilities.http}",
                )
                advertised = EngineCapabilities(
                    images=caps.prompt_capabilities.image,
                    resources=caps.prompt_capabilities.embedded_context,
                    load_session=caps.load_session,
                    agent_modes=self.capabilities.agent_modes,
                )
                self._advertised = advertised
                if info.auth_methods:
                    sec.add("auth methods", ", ".join(m.id for m in info.auth_methods))
                mem = AgentMemory(self.ctx.state_dir)
                sec.add("cancel", mem.cancel_mode(self.spec.memory_key, agent.version if agent else ""))
                try:
                    setup = await conn.new_session(str(self.ctx.env.get("PWD") or "."), [])
                    sec.add("auth", "signed in (session/new works)", "ok")
                    sec.add("probe session", setup.session_id or "?")
                    offered = modes.catalog(setup, antigravity=self.spec.is_agy)
                    sec.add("modes", offered.summary())
                    plan = advertised.agent_modes and any(m.id == "plan" for m in offered.modes)
                    self._advertised = msgspec.structs.replace(advertised, plan_mode=plan)
                except AuthRequired as exc:
                    sec.add("auth", "sign-in required", "error", [exc.detail or str(exc), "run: agy-host acp-auth"])
        except EngineError as exc:
            sec.add("start", str(exc), "error")
        except SpawnError as exc:
            sec.add("start", f"cannot start: {exc}", "error")
        except RequestTimeout as exc:
            sec.add("handshake", f"no answer to initialize: {exc}", "error")
        except (ConnectionClosed, JsonRpcError) as exc:
            sec.add("handshake", f"failed: {exc}", "error")
        for entry in lifecycle.last(5):
            sec.add("probe log", entry.format())


__all__ = ["AcpEngine"]
