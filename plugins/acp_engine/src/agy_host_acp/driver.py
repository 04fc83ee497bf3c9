"""The ACP turn driver: one agent connection, turns serialized per session.

A turn goes: connection (reuse, or spawn + ``initialize``), session (reuse,
``session/load`` of the bound conversation, or ``session/new``; a failed load
falls back to a new session *visibly*), config re-applied (model and mode do
not survive an agent restart), timers armed, ``session/prompt``, outcome.

Aborting: The driver sends ``session/cancel`` as the ACP spec defines it
(a notification), answers open permission requests ``cancelled``, and waits a
short grace for the prompt to end with ``stopReason: cancelled``. If it does
not, the agent is killed (process group) and the session is loaded again on
the next turn. What worked is remembered per agent and version
(:mod:`agy_host_acp.memory`), so a known non-cancelling agent is killed at once.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import trio

from agy_host.contract.events import NoticeActivity, OutcomeActivity, UsageActivity
from agy_host.engine.driver import DriverSnapshot, TurnHandle, TurnRequest
from agy_host.engine.lifecycle import Lifecycle
from agy_host.engine.timers import minutes
from agy_host.engine.turn import DriverTurns, TurnFailed, driver_scope
from agy_host_acp import models, modes
from agy_host_acp import schema as s
from agy_host_acp.connection import AcpConnection, AuthRequired
from agy_host_acp.events import outcome_for, prompt_usage, stop_warning
from agy_host_acp.jsonrpc import ConnectionClosed, JsonRpcError, RequestTimeout
from agy_host_acp.memory import AgentMemory, CancelMode
from agy_host_acp.process import SpawnError
from agy_host_acp.prompt_content import UnsupportedContent
from agy_host_acp.schema import PROTOCOL_VERSION
from agy_host_acp.turn import Turn

if TYPE_CHECKING:
    from agy_host_acp.engine import AcpEngine


def acp_mode(mode: str | None, skip_permissions: bool) -> str:
    """Antigravity's permission modes: ``yolo`` when permissions are skipped,
    ``auto_edit`` by default (edits auto-approved, other tools ask and the host
    policy answers), or the server's own mode name when given."""
    if skip_permissions:
        return "yolo"
    if mode in ("default", "auto_edit", "yolo"):
        return mode
    if mode == "plan":
        return "default"
    return "auto_edit"


class AcpDriver:
    engine_name = "acp"

    def __init__(self, engine: AcpEngine, nursery: trio.Nursery) -> None:
        self.engine = engine
        self.spec = engine.spec
        self._nursery = nursery
        cfg = engine.ctx.config
        self._cfg = cfg
        self._conn: AcpConnection | None = None
        self._conn_lock = trio.Lock()
        self._generation = 0
        self._session_slots: dict[str, trio.Semaphore] = collections.defaultdict(lambda: trio.Semaphore(1))
        self.lifecycle = Lifecycle()
        self.turns: DriverTurns[Turn] = DriverTurns(nursery, self.lifecycle)
        self.memory = AgentMemory(engine.ctx.state_dir, engine.ctx.warn)
        self.state = "idle"
        self.closed = False
        self.last_session: str | None = None
        self.stats = dict.fromkeys(
            ("spawns", "turns", "reused", "recycles", "prompts", "created", "loaded", "kills"), 0
        )
        self._cancel_last: CancelMode | None = None

    # -- contract ---------------------------------------------------------------------

    async def run(self, request: TurnRequest) -> TurnHandle:
        if self.closed:
            raise RuntimeError("ACP driver is shut down")
        self.turns.supersede(request.session)
        slot = self._session_slots[request.session]
        await slot.acquire()
        turn = Turn(
            request,
            self.engine.ctx.decide_permission,
            self._cfg.turn.permission_timeout_seconds,
            self.engine.ctx.ask_question,
        )
        self.stats["turns"] += 1
        return self.turns.start(turn, self._turn_task, slot)

    def reentry(self) -> TurnHandle | None:
        return self.turns.reentry()

    def kick_idle(self) -> None:
        self.turns.kick_idle()

    def snapshot(self) -> DriverSnapshot:
        conn = self._conn
        info = conn.info.agent_info if conn and conn.info else None
        cancel = self._cancel_last or self.memory.cancel_mode(self.spec.memory_key, info.version if info else "")
        extra: dict[str, Any] = {
            "agent": self.spec.label,
            "command": " ".join(self.spec.command),
            "session": self.last_session or "(none)",
            "server": f"{info.version or 'unknown'} ({info.title or info.name})" if info else "not started",
            "prompts": self.stats["prompts"],
            "created": self.stats["created"],
            "loaded": self.stats["loaded"],
            "kills": self.stats["kills"],
            "reconnects": max(0, self.stats["spawns"] - 1),
            "cancel": cancel,
        }
        if conn is not None and conn.handshake_s is not None:
            extra["handshake_s"] = round(conn.handshake_s, 3)
        if conn is not None and conn.info is not None:
            spoken = conn.info.protocol_version
            extra["protocol"] = (
                f"{spoken}" if spoken == PROTOCOL_VERSION else f"{spoken} (agy-host speaks {PROTOCOL_VERSION})"
            )
        if conn is not None and self.last_session in conn.titles:
            extra["title"] = conn.titles[self.last_session]
        return DriverSnapshot(
            engine="acp",
            state=self.state,
            pid=conn.pid if conn else None,
            conversation_id=self.last_session,
            stats={
                "spawns": self.stats["spawns"],
                "turns": self.stats["turns"],
                "reused": self.stats["reused"],
                "recycles": self.stats["kills"],
            },
            lifecycle=self.lifecycle.entries(),
            extra=extra,
        )

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        for turn in list(self.turns.open.values()):
            turn.aborted = True
            turn.handle.finish(
                OutcomeActivity(
                    status="error",
                    stop_reason="error",
                    conversation_id=turn.session_id,
                    response=turn.mapper.response,
                    error="ACP driver closed mid-turn",
                    error_kind="internal",
                )
            )
            turn.scope.cancel()
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.aclose()
        self.state = "closed"
        self.lifecycle.add("closed")

    # -- connection ---------------------------------------------------------------------

    async def _connection(self, cwd: str) -> AcpConnection:
        async with self._conn_lock:
            conn = self._conn
            if conn is not None and conn.alive:
                self.stats["reused"] += 1
                return conn
            self._generation += 1
            self.stats["spawns"] += 1
            self.state = "starting"
            acp = self._cfg.acp
            conn = AcpConnection(
                self.spec,
                cwd=cwd,
                env=self.engine.ctx.env,
                generation=self._generation,
                lifecycle=self.lifecycle,
                on_exit=self._on_exit,
                on_notice=self._orphan_notice,
                initialize_timeout=acp.initialize_timeout_seconds,
                session_timeout=acp.session_timeout_seconds,
                kill_grace=acp.kill_grace_seconds,
                trace=self.engine.wire_trace(),
            )
            self._conn = conn
            try:
                await conn.start(self._nursery)
            except SpawnError as exc:
                self._conn = None
                self.state = "dead"
                self.lifecycle.add("start-failed", error=str(exc))
                raise TurnFailed(f"could not start {self.spec.label}: {exc}", "spawn") from exc
            except BaseException as exc:
                self.lifecycle.add("start-failed", error=str(exc))
                self._conn = None
                self.state = "dead"
                with trio.CancelScope(shield=True):
                    await conn.kill()
                if isinstance(exc, RequestTimeout):
                    raise TurnFailed(
                        f"{self.spec.label} did not answer initialize within {exc.seconds:g}s "
                        f"(command: {' '.join(self.spec.command)})",
                        "spawn",
                    ) from exc
                if isinstance(exc, ConnectionClosed):
                    tail = conn.stderr_tail(600).strip()
                    raise TurnFailed(
                        f"{self.spec.label} exited before initialize ({conn.exit_detail or exc})"
                        + (f"; stderr: {tail}" if tail and tail not in conn.exit_detail else ""),
                        "spawn",
                    ) from exc
                if isinstance(exc, JsonRpcError):
                    raise TurnFailed(f"{self.spec.label} refused initialize: {exc.message}", "protocol") from exc
                raise
            self.state = "ready"
            return conn

    def _on_exit(self, conn: AcpConnection) -> None:
        tail = conn.stderr_tail(200).strip()
        if conn is not self._conn:
            self.lifecycle.add("stale-connection-exited", generation=conn.generation, tail=tail)
            return
        self._conn = None
        self.state = "dead"
        self.lifecycle.add("connection-exited", expected=conn.expected_exit, tail=tail)

    def _orphan_notice(self, level: str, message: str, code: str) -> None:
        self.lifecycle.add("notice", level=level, code=code, message=message[:200])

    # -- one turn ---------------------------------------------------------------------

    async def _turn_task(self, turn: Turn, slot: trio.Semaphore) -> None:
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._watch_abort, turn)
                nursery.start_soon(turn.timers.watch)
                try:
                    with turn.scope:
                        outcome = await self._drive(turn)
                        turn.handle.finish(outcome)
                finally:
                    turn.timers.stop()
                    nursery.cancel_scope.cancel()
            if not turn.handle.closed:
                turn.handle.finish(turn.failed("ACP turn ended without an outcome", "internal"))
        except Exception as exc:  # a bug must surface as a turn error, never hang
            self.lifecycle.add("turn-crashed", error=repr(exc)[:300])
            turn.handle.finish(turn.failed(f"ACP turn failed: {exc}", "internal"))
        finally:
            self.turns.done(turn)
            conn = self._conn
            if conn is not None and turn.session_id and conn.listeners.get(turn.session_id) is turn:
                del conn.listeners[turn.session_id]
            slot.release()

    async def _drive(self, turn: Turn) -> OutcomeActivity:
        req = turn.request
        try:
            conn = await self._connection(req.cwd)
            await self._open_session(conn, turn)
            await self._apply_config(conn, turn)
            blocks = conn.prompt_blocks(req.prompt)
        except TurnFailed as exc:
            return turn.failed(str(exc), exc.kind)
        except AuthRequired as exc:
            return turn.failed(self._auth_message(exc), "auth")
        except UnsupportedContent as exc:
            return turn.failed(str(exc), "usage")
        except (ConnectionClosed, RequestTimeout, JsonRpcError) as exc:
            return turn.failed(f"{self.spec.label}: {_describe(exc)}", "protocol")
        if turn.aborted:
            return turn.failed("", "internal")
        turn.prompt_started = True
        self.stats["prompts"] += 1
        result: s.PromptResult | None = None
        error: BaseException | None = None
        with turn.timers.scope:
            turn.timers.arm()
            try:
                result = await conn.prompt(turn.session_id or "", blocks)
            except (ConnectionClosed, JsonRpcError, RequestTimeout) as exc:
                error = exc
            finally:
                turn.prompt_done.set()
                self._absorb(conn, turn)
        fired = turn.timers.expired()
        if fired is not None and result is None:
            await self._teardown(conn, f"timer:{fired}")
            if fired == "deadline":
                msg = f"{self.spec.label} turn exceeded the {minutes(req.timeout_s)} deadline"
                return turn.failed(msg, "timeout")
            msg = f"{self.spec.label} stalled for {minutes(req.inactivity_s)} with no output"
            return turn.failed(msg, "inactivity")
        if error is not None:
            if isinstance(error, ConnectionClosed) and not turn.aborted:
                tail = conn.stderr_tail(1500).strip()
                detail = conn.exit_detail or str(error)
                more = f"\n{tail}" if tail and tail not in detail else ""
                return turn.failed(f"{self.spec.label} exited mid-turn ({detail}){more}", "exited")
            if isinstance(error, AuthRequired):
                return turn.failed(self._auth_message(error), "auth")
            return turn.failed(f"{self.spec.label} failed the prompt: {_describe(error)}", "agent")
        assert result is not None
        if turn.cancel_sent:
            self._remember_graceful(conn)
        usage = prompt_usage(result)
        if usage is not None:
            turn.handle.emit(UsageActivity(turn=usage))
        stop = result.stop_reason or ""
        if not stop:
            return turn.failed(f"{self.spec.label} answered session/prompt without a stopReason", "protocol")
        warning = stop_warning(stop)
        if warning:
            turn.handle.emit(NoticeActivity(level="warning", message=warning, code=stop))
        outcome = outcome_for(stop, conversation_id=turn.session_id, response=turn.mapper.response)
        if turn.handle.abort_requested.is_set() and not outcome.aborted:
            outcome.aborted = True
            outcome.stop_reason = "aborted"
        return outcome

    def _auth_message(self, exc: AuthRequired) -> str:
        detail = exc.detail or str(exc)
        return (
            f"{self.spec.label} needs a sign-in ({exc.method}): {detail}\n"
            "Run `agy-host acp-auth` for the sign-in steps."
        )

    async def _open_session(self, conn: AcpConnection, turn: Turn) -> None:
        req = turn.request
        mcp = self.engine.ctx.mcp_servers()
        roots = self._roots(conn, turn)
        sid = req.conversation_id
        if sid and sid in conn.sessions:
            turn.session_id = sid
        elif sid:
            caps = conn.info.agent_capabilities if conn.info else s.AgentCapabilities()
            resume = caps.session_capabilities.get("resume") is not None
            if not caps.load_session and not resume:
                self._not_continued(turn, sid, "it offers neither session/load nor session/resume")
                sid = None
            else:
                method = "session/resume" if resume else "session/load"
                try:
                    if resume:  # no history replayed: the same conversation, cheaper
                        await conn.resume_session(sid, req.cwd, mcp, roots)
                    else:
                        await conn.load_session(sid, req.cwd, mcp, roots)
                    self.stats["loaded"] += 1
                    turn.session_id = sid
                except AuthRequired:
                    raise
                except (JsonRpcError, RequestTimeout) as exc:
                    if turn.aborted:
                        raise
                    self.lifecycle.add("session-load-failed", sessionId=sid, method=method, error=_describe(exc))
                    self._not_continued(turn, sid, f"it refused {method}", _describe(exc))
                    sid = None
        if turn.session_id is None:
            setup = await conn.new_session(req.cwd, mcp, roots)
            self.stats["created"] += 1
            turn.session_id = setup.session_id
        assert turn.session_id is not None
        if turn.session_id not in conn.costs and not sid:
            conn.costs[turn.session_id] = 0.0  # made here: nothing spent before
        turn.mapper.cost_before = conn.costs.get(turn.session_id)
        self.last_session = turn.session_id
        conn.attach(turn.session_id, turn)

    def _not_continued(self, turn: Turn, sid: str, why: str, reason: str = "") -> None:
        """The bound conversation cannot be continued on this agent.

        Under ``--resume`` that fails the turn (exit 4) with the agent's own
        reason. Otherwise the turn starts a new conversation and says so in
        agy-host's words: an agent's reason is written for its own CLI (the
        Gemini CLI's advises ``--resume {number}``), so it is kept for the
        ``--resume`` error and the lifecycle log, not repeated here."""
        if turn.request.resume:
            said = f": {reason}" if reason else ""
            raise TurnFailed(f"{self.spec.label} could not continue conversation {sid} ({why}){said}", "no_session")
        turn.handle.emit(
            NoticeActivity(
                level="warning",
                message=f"{self.spec.label} could not continue conversation {sid} ({why}); this turn starts a "
                "new conversation, without the earlier messages (pass --resume to fail instead)",
                code="conversation-replaced",
            )
        )

    def _absorb(self, conn: AcpConnection, turn: Turn) -> None:
        """What the agent changed about its session during the turn is now the
        session's state: its config options (a model the agent switched
        itself is not set again, nor a setting it changed set back blindly)
        and its title."""
        sid = turn.session_id or ""
        options = turn.mapper.config_options
        if options is not None:
            setup = conn.setups.get(sid)
            if setup is not None:
                setup.config_options = options
            for option in options:
                if isinstance(option.current_value, str):
                    conn.applied[(sid, option.id)] = option.current_value
            self.lifecycle.add("config-options-updated", sessionId=sid, count=len(options))
        if turn.mapper.title:
            conn.titles[sid] = turn.mapper.title
        if turn.mapper.cost_total is not None:
            conn.costs[sid] = turn.mapper.cost_total

    def _roots(self, conn: AcpConnection, turn: Turn) -> list[str]:
        """``--add-dir`` roots, when the agent takes them (``sessionCapabilities.additionalDirectories``);
        otherwise a notice says they were not given (the turn goes on with ``cwd`` only)."""
        wanted = turn.request.additional_directories
        if not wanted:
            return []
        caps = conn.info.agent_capabilities if conn.info else s.AgentCapabilities()
        if caps.session_capabilities.get("additionalDirectories") is not None:
            return list(wanted)
        turn.handle.emit(
            NoticeActivity(
                level="warning",
                message=f"{self.spec.label} does not take more workspace roots "
                "(no sessionCapabilities.additionalDirectories); --add-dir is not passed",
                code="add-dir",
            )
        )
        return []

    async def _apply_config(self, conn: AcpConnection, turn: Turn) -> None:
        req = turn.request
        sid = turn.session_id or ""
        setup = conn.setups.get(sid)
        option_ids = {o.id for o in (setup.config_options or [])} if setup else set()
        known = setup is not None
        if self.spec.is_agy:
            option_ids |= {"model", "mode"}  # Antigravity always has both
            if req.mode == "plan":
                raise TurnFailed(
                    "Antigravity's ACP server has no plan mode; use `--engine stream-json` for a plan-only run",
                    "usage",
                )
        advertised = modes.catalog(setup, antigravity=self.spec.is_agy)
        if req.mode and (advertised.modes or (known and not self.spec.is_agy)):
            refused = modes.refusal(req.mode, advertised, self.spec.label)  # before the prompt: nothing ran yet
            if refused:
                raise TurnFailed(refused, "usage")
        model = req.model
        if model:
            value = model
            if self.spec.is_agy:
                offered = models.catalog(setup, antigravity=True).models
                value, note = models.antigravity_slug(model, req.effort, offered)
                if note:
                    turn.handle.emit(NoticeActivity(level="warning", message=note, code="settings"))
            if "model" in option_ids or not known:
                if conn.applied.get((sid, "model")) != value:
                    try:
                        await conn.set_config_option(sid, "model", value)
                        self.lifecycle.add("model", value=value)
                    except JsonRpcError as exc:
                        raise TurnFailed(
                            f"{self.spec.label} model selection failed: {_describe(exc)}", "usage"
                        ) from exc
            else:
                turn.handle.emit(
                    NoticeActivity(
                        level="warning",
                        message=f"{self.spec.label} offers no model selection; --model {model} ignored",
                        code="model-unsupported",
                    )
                )
        mode = acp_mode(req.mode, req.skip_permissions) if self.spec.is_agy else req.mode
        if mode and conn.applied.get((sid, "mode")) != mode:
            turn.mapper.expect_mode(mode)  # its announcement may come before the answer to the request
            try:
                if "mode" in option_ids or not known:
                    await conn.set_config_option(sid, "mode", mode)
                else:
                    await conn.set_mode(sid, mode)
                self.lifecycle.add("mode", value=mode)
            except (JsonRpcError, RequestTimeout) as exc:
                self.lifecycle.add("mode-apply-failed", value=mode, error=_describe(exc))
                turn.handle.emit(
                    NoticeActivity(
                        level="warning", message=f"could not set mode {mode!r}: {_describe(exc)}", code="mode-failed"
                    )
                )

    # -- abort -----------------------------------------------------------------------

    async def _watch_abort(self, turn: Turn) -> None:
        await turn.handle.abort_requested.wait()
        turn.aborted = True
        self.lifecycle.add("abort", reason=turn.handle.abort_reason, session=turn.request.session)
        turn.cancel_permissions()
        conn = self._conn
        if conn is None or not conn.alive or not turn.session_id or not turn.prompt_started:
            turn.scope.cancel()
            return
        info = conn.info.agent_info if conn.info else None
        version = info.version if info else ""
        key = self.spec.memory_key
        if self.memory.cancel_mode(key, version) == "kill+reload":
            await self._teardown(conn, "abort (agent does not cancel)")
            return
        with contextlib.suppress(ConnectionClosed, trio.BrokenResourceError):
            await conn.cancel(turn.session_id)
        turn.cancel_sent = True
        self.lifecycle.add("cancel-sent", sessionId=turn.session_id)
        with trio.move_on_after(self._cfg.acp.cancel_grace_seconds):
            await turn.prompt_done.wait()
        if turn.prompt_done.is_set():
            return  # _drive records the graceful cancel when the prompt answers
        self._cancel_last = "kill+reload"
        self.memory.remember_cancel(key, version, "kill+reload")
        self.lifecycle.add("cancel-unsupported", version=version)
        await self._teardown(conn, "abort: no cancelled stopReason within the grace")

    def _remember_graceful(self, conn: AcpConnection) -> None:
        info = conn.info.agent_info if conn.info else None
        self._cancel_last = "graceful"
        self.memory.remember_cancel(self.spec.memory_key, info.version if info else "", "graceful")
        self.lifecycle.add("cancel-graceful")

    async def _teardown(self, conn: AcpConnection, why: str) -> None:
        self.stats["kills"] += 1
        self.lifecycle.add("teardown", reason=why)
        if conn is self._conn:
            self._conn = None
            self.state = "dead"
        with trio.CancelScope(shield=True):
            await conn.kill()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, JsonRpcError):
        detail = exc.detail
        return f"{exc.message} (code {exc.code})" + (f": {detail}" if detail else "")
    return str(exc) or type(exc).__name__


@contextlib.asynccontextmanager
async def open_driver(engine: AcpEngine) -> AsyncIterator[AcpDriver]:
    async with driver_scope(lambda nursery: AcpDriver(engine, nursery)) as driver:
        yield driver


__all__ = ["AcpDriver", "acp_mode", "open_driver"]
