"""One live ACP agent: the process, the JSON-RPC peer, the session operations.

A connection routes ``session/update`` notifications to the listener of their
session (the running turn), serves the agent's requests (permission requests
go to the listener; ``fs/*`` and ``terminal/*`` are refused because we do not
advertise them), and turns non-JSON output into notices: Antigravity prints
its sign-in URL as a plain line on stdout or stderr, and the user must see it.

``session/load`` replays the conversation's history as update notifications
before its response; the connection drops every update of a session while
its load is in flight, so history never reaches the user as live text. Some
agents (the Gemini CLI) answer the load first and replay afterwards: after a
load, the connection keeps dropping the session's updates until the agent has
been quiet for a moment (bounded), before any prompt is sent. A replay that
comes later still is caught by the turn (both in :mod:`agy_host_acp.replay`).

Exit is scoped to the connection object: ``on_exit(conn)`` is called once with
the connection that died, so the driver can ignore a stale, slow-dying
predecessor of its current connection.
"""

from __future__ import annotations

import contextlib
import operator
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
import trio

from agy_host.contract.prompt import PromptBlock
from agy_host.engine.base import McpServerSpec
from agy_host.engine.lifecycle import Lifecycle
from agy_host.engine.process import KILL_GRACE_S
from agy_host.engine.utf8 import INVALID_UTF8, INVALID_UTF8_NOTICE
from agy_host_acp import elicitation
from agy_host_acp import schema as s
from agy_host_acp.elicitation import ElicitationParams
from agy_host_acp.jsonrpc import (
    AUTH_REQUIRED,
    METHOD_NOT_FOUND,
    FastPath,
    JsonRpcConnection,
    JsonRpcError,
)
from agy_host_acp.process import AgentProcess
from agy_host_acp.profiles import AgentSpec
from agy_host_acp.prompt_content import acp_content
from agy_host_acp.replay import TrailingReplay
from agy_host_acp.session_params import session_params
from agy_host_acp.sign_in import is_auth_error, sign_in_url
from agy_host_acp.withdrawn import withdrawn_notice

if TYPE_CHECKING:
    from agy_host.engine.trace import TraceTap

CLIENT_NAME = "agy-host"


_PARAMS = operator.attrgetter("params")
_SESSION_ID = operator.attrgetter("session_id")
_UPDATE = operator.attrgetter("update")
_MAX_PARSE_NOTICES = 3


class AuthRequired(Exception):
    """The agent needs a sign-in; ``detail`` is its own remediation text."""

    def __init__(self, method: str, message: str, detail: str) -> None:
        text = f"{message}: {detail}" if detail else message
        super().__init__(text)
        self.method = method
        self.detail = detail


class SessionListener(Protocol):
    def on_update(self, update: s.Update) -> None: ...

    def on_updates(self, updates: list[s.Update]) -> None:
        """The updates of one pipe read for this session, in order."""
        ...

    async def on_permission(self, params: s.RequestPermissionParams) -> dict[str, Any]: ...

    async def on_elicitation(self, params: ElicitationParams) -> dict[str, Any]: ...

    def on_notice(self, level: str, message: str, code: str) -> None: ...


NoticeSink = Callable[[str, str, str], None]


class AcpConnection:
    """Spawn with :meth:`start` in a nursery; talk; :meth:`aclose`."""

    def __init__(
        self,
        spec: AgentSpec,
        *,
        cwd: str,
        env: Mapping[str, str],
        generation: int,
        lifecycle: Lifecycle,
        on_exit: Callable[[AcpConnection], None],
        on_notice: NoticeSink,
        initialize_timeout: float = 30.0,
        session_timeout: float = 20.0,
        kill_grace: float = KILL_GRACE_S,
        trace: TraceTap | None = None,
    ) -> None:
        self.spec = spec
        #: The wire trace (``--trace``): every line in and out, and stderr.
        self.trace = trace
        self.cwd = cwd
        self._env = dict(env)
        self._env.update(spec.env)
        self.generation = generation
        self.log = lifecycle
        self._on_exit = on_exit
        self._on_notice = on_notice
        self.initialize_timeout = initialize_timeout
        self.session_timeout = session_timeout
        self.kill_grace = kill_grace
        self.proc: AgentProcess | None = None
        self.rpc: JsonRpcConnection | None = None
        self.info: s.InitializeResult | None = None
        self.handshake_s: float | None = None
        self.listeners: dict[str, SessionListener] = {}
        self.last_session: str | None = None
        self.sessions: set[str] = set()
        self.applied: dict[tuple[str, str], str] = {}
        #: Session titles the agent set (``session_info_update``).
        self.titles: dict[str, str] = {}
        #: Each session's cost so far (``usage_update.cost`` is the session's total):
        #: 0 for a session made here, the last total seen after each turn.
        self.costs: dict[str, float] = {}
        #: The session/new or session/load result of each session (config options, models, modes).
        self.setups: dict[str, s.SessionSetup] = {}
        self._loading: set[str] = set()
        self.replay = TrailingReplay()
        self.dropped = 0
        self.parse_errors = 0
        self._noticed: set[str] = set()
        self._held: list[tuple[str, str, str]] = []
        #: Each session's latest ``available_commands_update`` that arrived with
        #: no listener (agents send it as soon as the session exists, often
        #: before the driver attached, or during a load); given on attach.
        self._held_commands: dict[str, s.AvailableCommandsUpdate] = {}
        self.exited = trio.Event()
        self.expected_exit = False
        self.exit_detail = ""
        self.sign_in_urls: list[str] = []

    # -- lifecycle ------------------------------------------------------------------

    async def start(self, nursery: trio.Nursery) -> s.InitializeResult:
        """Spawn the agent and run ``initialize`` within its deadline."""
        await nursery.start(self._run)
        assert self.rpc is not None
        started = time.monotonic()
        params = {
            "protocolVersion": s.PROTOCOL_VERSION,
            "clientCapabilities": {
                "fs": {"readTextFile": False, "writeTextFile": False},
                "terminal": False,
                "elicitation": elicitation.CLIENT_CAPABILITY,
                # notices and compactions are shown (never dropped): agents may send them
                "session": {"notices": {}, "compaction": {}},
            },
            "clientInfo": {"name": CLIENT_NAME, "title": "agy-host", "version": _version()},
        }
        raw = await self._request("initialize", params, timeout=self.initialize_timeout)
        self.handshake_s = time.monotonic() - started
        self.info = s.convert(raw if isinstance(raw, dict) else {}, s.InitializeResult)
        info = self.info.agent_info
        self.log.add(
            "initialized",
            agent=info.name if info else "",
            version=info.version if info else "",
            protocol=self.info.protocol_version,
            seconds=round(self.handshake_s, 3),
        )
        if self.info.protocol_version != s.PROTOCOL_VERSION:
            # ACP's rule: the agent answers with the version it speaks; a
            # client that does not speak it should say so. We go on (the
            # messages we use may still match) but never silently.
            self.log.add("protocol-mismatch", agent=self.info.protocol_version, host=s.PROTOCOL_VERSION)
            self._notice_once(
                "protocol-version",
                f"the agent speaks ACP protocol version {self.info.protocol_version}; agy-host speaks "
                f"{s.PROTOCOL_VERSION}: some messages may not be understood",
            )
        return self.info

    async def _run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        # Spawn outside the nursery so a SpawnError reaches the caller as itself,
        # not wrapped in an exception group.
        self.proc = await AgentProcess.open(
            self.spec.command, cwd=self.cwd, env=self._env, on_stderr_line=self._stderr_line
        )
        self.proc.trace = self.trace
        try:
            await self._watch(self.proc, task_status)
        finally:
            # Also when the watch was cancelled (a command ending): nothing
            # may wait on this event for a connection that is gone.
            self.exited.set()
        self._on_exit(self)

    async def _watch(self, proc: AgentProcess, task_status: trio.TaskStatus[None]) -> None:
        async with trio.open_nursery() as nursery:
            proc.start_watchers(nursery)
            self.rpc = JsonRpcConnection(
                proc.stdin,
                proc.stdout,
                on_notification=self._notification,
                on_request=self._request_from_agent,
                on_protocol_error=self._protocol_error,
                fast_path=FastPath(
                    marker=s.UPDATE_MARKER,
                    decoder=s.update_line_decoder,
                    handler=self._fast_update,
                    batch_handler=self._fast_updates,
                ),
                trace=self.trace,
                on_withdrawn=self._withdrawn,
            )
            self.log.add("spawn", pid=proc.pid, command=self.spec.label)
            await nursery.start(self.rpc.run)
            task_status.started()
            await proc.exited.wait()
            # Give the reader a moment to deliver what the agent wrote last.
            with trio.move_on_after(0.5):
                await self.rpc.finished.wait()
            code = proc.returncode
            tail = proc.stderr_tail(400).strip()
            self.exit_detail = f"agent exited with code {code}" + (f": {tail}" if tail else "")
            self.rpc.abort_all(self.exit_detail)
            nursery.cancel_scope.cancel()

    async def aclose(self, *, close_sessions: bool = True) -> None:
        """Close sessions (best effort), then end the process politely."""
        self.expected_exit = True
        with trio.CancelScope(shield=True):
            if close_sessions and self.rpc is not None and self.alive and self._supports_close():
                # One bound for all of them: an ending command does not wait
                # on each session of an agent that has stopped answering.
                with trio.move_on_after(min(2.0, self.session_timeout)):
                    for sid in list(self.sessions):
                        with contextlib.suppress(Exception):
                            await self._request("session/close", {"sessionId": sid}, timeout=self.session_timeout)
            if self.proc is not None:
                await self.proc.shutdown(self.kill_grace)
                with trio.move_on_after(2):
                    await self.exited.wait()

    async def kill(self) -> None:
        """Tear the agent down now (abort without a working cancel)."""
        self.expected_exit = True
        if self.rpc is not None:
            self.rpc.abort_all("abort: connection torn down")
        if self.proc is not None:
            await self.proc.terminate(self.kill_grace)

    @property
    def alive(self) -> bool:
        return (
            self.proc is not None
            and self.proc.alive
            and not self.exited.is_set()
            and (self.rpc is None or self.rpc.closed is None)
        )

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def stderr_tail(self, chars: int = 8192) -> str:
        return self.proc.stderr_tail(chars) if self.proc else ""

    def _supports_close(self) -> bool:
        # Antigravity answers session/close although it does not advertise it.
        if self.spec.is_agy:
            return True
        caps = self.info.agent_capabilities.session_capabilities if self.info else {}
        return "close" in caps

    # -- requests -------------------------------------------------------------------

    async def _request(self, method: str, params: Any, *, timeout: float | None) -> Any:
        assert self.rpc is not None
        try:
            return await self.rpc.request(method, params, timeout=timeout)
        except JsonRpcError as exc:
            if exc.code == AUTH_REQUIRED and method != "initialize" and is_auth_error(exc):
                raise AuthRequired(method, exc.message, exc.detail) from exc
            raise

    async def new_session(
        self, cwd: str, mcp_servers: list[McpServerSpec], additional: list[str] | None = None
    ) -> s.SessionSetup:
        params = session_params(cwd, mcp_servers, additional)
        raw = await self._request("session/new", params, timeout=self.session_timeout)
        setup: s.SessionSetup = s.convert(raw if isinstance(raw, dict) else {}, s.SessionSetup)
        if not setup.session_id:
            raise JsonRpcError(-32603, "session/new returned no sessionId", method="session/new")
        self.sessions.add(setup.session_id)
        self.setups[setup.session_id] = setup
        self.last_session = setup.session_id
        self.log.add("session-new", sessionId=setup.session_id)
        return setup

    async def load_session(
        self, session_id: str, cwd: str, mcp_servers: list[McpServerSpec], additional: list[str] | None = None
    ) -> s.SessionSetup:
        self._loading.add(session_id)
        before = self.replay.count
        try:
            raw = await self._request(
                "session/load",
                {"sessionId": session_id, **session_params(cwd, mcp_servers, additional)},
                timeout=self.session_timeout,
            )
            during = self.replay.count - before
            trailing = await self.replay.wait_out(first=during == 0)
        finally:
            self._loading.discard(session_id)
        setup: s.SessionSetup = s.convert(raw if isinstance(raw, dict) else {}, s.SessionSetup)
        setup.session_id = session_id
        self.sessions.add(session_id)
        self.setups[session_id] = setup
        self.last_session = session_id
        self.log.add("session-load", sessionId=session_id, replayed=during, replayed_after_answer=trailing)
        return setup

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        """A request outside the turn machinery (``session/list``, ``session/delete``), bounded like session calls."""
        return await self._request(method, params, timeout=self.session_timeout)

    async def resume_session(
        self, session_id: str, cwd: str, mcp_servers: list[McpServerSpec], additional: list[str] | None = None
    ) -> s.SessionSetup:
        """``session/resume``: the conversation continues without its history
        being replayed (preferred over load when the agent offers it)."""
        raw = await self._request(
            "session/resume",
            {"sessionId": session_id, **session_params(cwd, mcp_servers, additional)},
            timeout=self.session_timeout,
        )
        setup: s.SessionSetup = s.convert(raw if isinstance(raw, dict) else {}, s.SessionSetup)
        setup.session_id = session_id
        self.sessions.add(session_id)
        self.setups[session_id] = setup
        self.last_session = session_id
        self.log.add("session-resume", sessionId=session_id)
        return setup

    async def set_config_option(self, session_id: str, config_id: str, value: str) -> s.SetConfigOptionResult:
        raw = await self._request(
            "session/set_config_option",
            {"sessionId": session_id, "configId": config_id, "value": value},
            timeout=self.session_timeout,
        )
        self.applied[(session_id, config_id)] = value
        result: s.SetConfigOptionResult = s.convert(raw if isinstance(raw, dict) else {}, s.SetConfigOptionResult)
        return result

    async def set_mode(self, session_id: str, mode_id: str) -> None:
        await self._request(
            "session/set_mode", {"sessionId": session_id, "modeId": mode_id}, timeout=self.session_timeout
        )
        self.applied[(session_id, "mode")] = mode_id

    def prompt_blocks(self, blocks: list[PromptBlock]) -> list[dict[str, Any]]:
        """ACP content blocks, refusing what the agent did not advertise."""
        caps = self.info.agent_capabilities.prompt_capabilities if self.info else s.PromptCapabilities()
        return acp_content(blocks, caps, self.spec.label)

    async def prompt(self, session_id: str, blocks: list[dict[str, Any]]) -> s.PromptResult:
        # No timeout here: the driver's turn timers govern the turn.
        raw = await self._request("session/prompt", {"sessionId": session_id, "prompt": blocks}, timeout=None)
        result: s.PromptResult = s.convert(raw if isinstance(raw, dict) else {}, s.PromptResult)
        return result

    async def cancel(self, session_id: str) -> None:
        """``session/cancel`` as the ACP spec defines it: a notification."""
        assert self.rpc is not None
        await self.rpc.notify("session/cancel", {"sessionId": session_id})

    async def authenticate(self, method_id: str, timeout: float | None = None) -> None:
        await self._request("authenticate", {"methodId": method_id}, timeout=timeout)

    # -- traffic from the agent -------------------------------------------------------

    def _fast_update(self, message: s.UpdateNotification) -> None:
        # The decoder only accepts ``"method": "session/update"``.
        self._route_update(message.params.session_id, message.params.update)

    def _fast_updates(self, messages: list[s.UpdateNotification]) -> None:
        """The ``session/update`` lines of one pipe read, in order: each run of
        consecutive updates of one session goes to its listener in one call."""
        notes = list(map(_PARAMS, messages))
        sids = set(map(_SESSION_ID, notes))
        if len(sids) == 1:  # the flood: one session (C-level loops, no per-line Python)
            self._route_updates(sids.pop(), list(map(_UPDATE, notes)))
            return
        run: list[s.Update] = []
        run_sid: str | None = None
        for message in messages:
            params = message.params
            sid = params.session_id
            if sid != run_sid and run:
                self._route_updates(run_sid, run)
                run = []
            run_sid = sid
            run.append(params.update)
        if run:
            self._route_updates(run_sid, run)

    def _route_updates(self, sid: str | None, updates: list[s.Update]) -> None:
        if sid is None:
            sid = self.last_session
        if sid in self._loading:
            self.replay.dropped(len(updates))
            self._hold_commands(sid, updates)
            return
        listener = self.listeners.get(sid) if sid is not None else None
        if listener is None:
            self.dropped += len(updates)
            self._hold_commands(sid, updates)
            return
        listener.on_updates(updates)

    def _route_update(self, sid: str | None, update: s.Update) -> None:
        if sid is None:
            sid = self.last_session
        if sid in self._loading:
            self.replay.dropped(1)
            self._hold_commands(sid, [update])
            return
        listener = self.listeners.get(sid) if sid is not None else None
        if listener is None:
            self.dropped += 1
            self._hold_commands(sid, [update])
            return
        listener.on_update(update)

    def _hold_commands(self, sid: str | None, updates: list[s.Update]) -> None:
        """Updates nobody listens to are dropped, except the agent's command list."""
        for update in updates:
            if sid is not None and isinstance(update, s.AvailableCommandsUpdate):
                self._held_commands[sid] = update

    def _notification(self, method: str, params: msgspec.Raw) -> None:
        if method == "session/update":
            sid, update, repaired = s.decode_session_update(params)
            if repaired:
                self.log.add(INVALID_UTF8, sessionId=sid or "")
                self._notice_once(INVALID_UTF8, INVALID_UTF8_NOTICE)
            if isinstance(update, s.UnknownUpdate):
                self.log.add("unknown-update", kind=update.kind)
                self._notice_once(
                    f"unknown-update:{update.kind}",
                    f"the agent sent a session update agy-host does not know ({update.kind!r}); it is skipped",
                )
            self._route_update(sid, update)
            return
        if method == "elicitation/complete":
            done = msgspec.json.decode(params) if params else {}
            ident = done.get("elicitationId", "") if isinstance(done, dict) else ""
            self.log.add("elicitation-complete", elicitationId=str(ident))
            message = f"the agent reports the step at the URL it gave is done ({ident})"
            for listener in list(self.listeners.values()):
                listener.on_notice("info", message, "elicitation")
            return
        self.log.add("notification", method=method)

    async def _request_from_agent(self, method: str, params: msgspec.Raw) -> Any:
        if method == "session/request_permission":
            try:
                req = msgspec.json.decode(params, type=s.RequestPermissionParams)
            except (msgspec.ValidationError, msgspec.DecodeError) as exc:
                self.log.add("bad-permission-request", error=str(exc)[:200])
                return {"outcome": {"outcome": "cancelled"}}
            sid = req.session_id or self.last_session
            listener = self.listeners.get(sid) if sid else None
            if listener is None:
                self.log.add("permission-without-turn", sessionId=sid or "")
                return {"outcome": {"outcome": "cancelled"}}
            return await listener.on_permission(req)
        if method == "elicitation/create":
            return await self._elicitation(params)
        self.log.add("unsupported-agent-request", method=method)
        if method.startswith(("fs/", "terminal/")):
            raise JsonRpcError(METHOD_NOT_FOUND, f"client capability not enabled: {method}")
        raise JsonRpcError(METHOD_NOT_FOUND, f"method not found: {method}")

    async def _elicitation(self, raw: msgspec.Raw) -> dict[str, Any]:
        """``elicitation/create``: the turn of its session asks the host; one
        outside any turn (or request-scoped, before a session) is answered
        ``cancel`` with a notice: nobody is there to be asked."""
        params = elicitation.decode(bytes(raw))
        if isinstance(params, str):
            self.log.add("bad-elicitation", error=params)
            self._notice_once("elicitation:bad", f"the agent sent {params}; answered cancel")
            return {"action": "cancel"}
        sid = params.session_id or ""
        listener = self.listeners.get(sid) if sid else None
        if listener is None:
            self.log.add("elicitation-without-turn", sessionId=sid, mode=params.mode)
            self._notice_once(
                "elicitation:no-turn", f"the agent asked {params.message!r} outside a turn; answered cancel"
            )
            return {"action": "cancel"}
        self.log.add("elicitation", sessionId=sid, mode=params.mode)
        return await listener.on_elicitation(params)

    def _withdrawn(self, method: str, params: msgspec.Raw) -> None:
        """The agent withdrew a request it sent (``$/cancel_request``): its
        prompt or callback was cancelled; the person is told why it went."""
        sid, message = withdrawn_notice(method, params)
        self.log.add("request-withdrawn", method=method, sessionId=sid or "")
        listener = self.listeners.get(sid) if sid else None
        if listener is not None:
            listener.on_notice("info", message, "withdrawn")
        else:
            self._notice("info", message, "withdrawn")

    def _notice_once(self, key: str, message: str) -> None:
        """A warning shown the first time per connection (the lifecycle log
        keeps each). With no turn listening yet (``initialize``), it waits for
        the first one (:meth:`attach`)."""
        if key in self._noticed:
            return
        self._noticed.add(key)
        code = key.partition(":")[0]
        if not self.listeners:
            self._held.append(("warning", message, code))
        self._notice("warning", message, code)

    def attach(self, session_id: str, listener: SessionListener) -> None:
        """Route ``session_id``'s updates to ``listener``; it first gets the
        warnings, and the session's command list, that arrived while nobody
        listened."""
        self.listeners[session_id] = listener
        held, self._held = self._held, []
        for level, message, code in held:
            listener.on_notice(level, message, code)
        commands = self._held_commands.pop(session_id, None)
        if commands is not None:
            listener.on_update(commands)

    def _notice(self, level: str, message: str, code: str) -> None:
        delivered = False
        for listener in list(self.listeners.values()):
            listener.on_notice(level, message, code)
            delivered = True
        if not delivered:
            self._on_notice(level, message, code)

    def _scan_sign_in(self, line: str) -> bool:
        url = sign_in_url(line)
        if url is None:
            return False
        self.sign_in_urls.append(url)
        self.log.add("auth-url", url=url.split("?", 1)[0])
        self._notice(
            "warning",
            f"{self.spec.label} asks you to sign in: open {url} (on a remote machine, forward the "
            "redirect port first: ssh -N -L <port>:127.0.0.1:<port> <host>)",
            "sign-in-url",
        )
        return True

    def _protocol_error(self, message: str, line: bytes) -> None:
        text = line.decode("utf-8", "replace")
        if text and self._scan_sign_in(text):
            return
        self.parse_errors += 1
        self.log.add("parse-error", error=message[:200], line=text[:200])
        if self.parse_errors <= _MAX_PARSE_NOTICES:
            preview = text[:120] + ("…" if len(text) > 120 else "")
            self._notice(
                "warning", f"skipped output from the agent that is not ACP: {message}: {preview!r}", "parse-error"
            )

    def _stderr_line(self, line: str) -> None:
        self._scan_sign_in(line)


def _version() -> str:
    from agy_host_acp import __version__

    return __version__


__all__ = ["AcpConnection", "AuthRequired", "SessionListener"]
