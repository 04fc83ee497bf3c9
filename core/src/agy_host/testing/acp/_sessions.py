"""The fake ACP agent's session lifecycle: ``session/new``, ``load``,
``resume``, ``list``, ``delete`` and ``fork``, and the per-session state they create.
A mixin of :class:`~agy_host.testing.acp.agent.FakeAcpAgent` (its own module
to keep the agent's file readable); it uses the agent's ``scenario``,
``out``, ``log``, ``_lock`` and ``_sessions``."""

from __future__ import annotations

import copy
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from agy_host.testing import _wire
from agy_host.testing.acp.scenario import FORGOTTEN_CONVERSATION

if TYPE_CHECKING:
    from agy_host.testing.acp.scenario import Scenario

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
AUTH_REQUIRED = -32000


class _Session:
    def __init__(self, session_id: str, scenario: Scenario) -> None:
        self.id = session_id
        self.models = copy.deepcopy(scenario.models)
        self.modes = copy.deepcopy(scenario.modes)
        self.config_options = copy.deepcopy(scenario.config_options)
        #: What the client listed in ``mcpServers`` (session/new or session/load).
        self.mcp_servers: list[Any] = []

    def state(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.modes is not None:
            out["modes"] = self.modes
        if self.models is not None:
            out["models"] = self.models
        if self.config_options is not None:
            out["configOptions"] = self.config_options
        return out


class SessionMethods:
    """``session/new|load|resume|list|delete|fork`` of the fake agent."""

    scenario: Scenario
    out: _wire.Output
    log: _wire.MessageLog
    _lock: threading.Lock
    _sessions: dict[str, _Session]
    authenticated: bool

    def _auth_error(self, msg_id: Any) -> bool:
        if self.authenticated:
            return False
        self.out.send(
            _wire.error_response(
                msg_id, AUTH_REQUIRED, "Authentication required", {"message": self.scenario.auth_message}
            )
        )
        return True

    def _session_new(self, msg_id: Any, params: dict[str, Any]) -> None:
        if self._auth_error(msg_id):
            return
        sid = self.scenario.session_id
        if sid == "generate":
            import uuid

            sid = str(uuid.uuid4())
        session = _Session(sid, self.scenario)
        session.mcp_servers = _mcp_servers(params)
        with self._lock:
            self._sessions[sid] = session
        self._answer(msg_id, {"sessionId": sid, **session.state()}, sid)

    def _session_load(self, msg_id: Any, params: dict[str, Any]) -> None:
        sc = self.scenario
        if not sc.load_session:
            self._not_found(msg_id, "session/load")
            return
        if self._auth_error(msg_id):
            return
        sid = self._session_id(msg_id, params)
        if sid is None:
            return
        if sc.load == "fails" or sid == FORGOTTEN_CONVERSATION:
            self._unknown(msg_id, sid)
            return
        session = self._reopen(sid, params)
        if sc.load == "replay":
            self._replay(sid)
        self._answer(msg_id, session.state(), sid)
        if sc.load == "replay-after":
            if sc.replay_delay_ms:
                time.sleep(sc.replay_delay_ms / 1000)
            self._replay(sid)

    def _replay(self, sid: str) -> None:
        """The scenario's ``load_history`` as user/agent/thought chunks."""
        kinds = {"user": "user_message_chunk", "agent": "agent_message_chunk", "thought": "agent_thought_chunk"}
        for entry in self.scenario.load_history:
            for who, text in entry.items():
                kind = kinds.get(who)
                if kind is None:
                    _wire.stderr(f"fake_acp_agent: load_history entry {who!r} skipped (use user/agent/thought)")
                    continue
                update = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
                self.out.send(_wire.notification("session/update", {"sessionId": sid, "update": update}))

    def _session_resume(self, msg_id: Any, params: dict[str, Any]) -> None:
        """``session/resume`` (advertise ``sessionCapabilities.resume``): like
        load, without replaying the history."""
        if "resume" not in self._session_capabilities():
            self._not_found(msg_id, "session/resume")
            return
        sid = self._session_id(msg_id, params)
        if sid == FORGOTTEN_CONVERSATION:
            self._unknown(msg_id, sid)
        elif sid is not None:
            self._answer(msg_id, self._reopen(sid, params).state(), sid)

    def _unknown(self, msg_id: Any, sid: str) -> None:
        self.out.send(_wire.error_response(msg_id, AUTH_REQUIRED, "unknown session", {"sessionId": sid}))

    def _answer(self, msg_id: Any, result: dict[str, Any], sid: str) -> None:
        """A session's answer and, in the same write, the scenario's
        ``session_updates``: real agents advertise their commands the moment
        the session exists, so the client may read both in one pipe read."""
        from agy_host.testing.acp._prompt import subst

        frames = [_wire.result_response(msg_id, result)]
        for update in self.scenario.session_updates:
            frames.append(_wire.notification("session/update", {"sessionId": sid, "update": subst(update, sid)}))
        self.out.write(b"".join(_wire.encode(frame) + b"\n" for frame in frames))

    def _session_list(self, msg_id: Any, params: dict[str, Any]) -> None:
        """``session/list``: the scenario's ``listed_sessions`` and the live ones,
        filtered by ``cwd``; one page (no cursor)."""
        if "list" not in self._session_capabilities():
            self._not_found(msg_id, "session/list")
            return
        listed = [dict(e) for e in self.scenario.listed_sessions if isinstance(e, dict)]
        with self._lock:
            listed += [{"sessionId": sid, "cwd": os.getcwd()} for sid in self._sessions]
        cwd = params.get("cwd")
        if isinstance(cwd, str) and cwd:
            listed = [e for e in listed if e.get("cwd") == cwd]
        self.out.send(_wire.result_response(msg_id, {"sessions": listed}))

    def _session_delete(self, msg_id: Any, params: dict[str, Any]) -> None:
        if "delete" not in self._session_capabilities():
            self._not_found(msg_id, "session/delete")
            return
        self.log.event("session-deleted", sessionId=params.get("sessionId"))
        self.out.send(_wire.result_response(msg_id, {}))

    def _session_fork(self, msg_id: Any, params: dict[str, Any]) -> None:
        """``session/fork`` (advertise ``sessionCapabilities.fork``): a new
        live session ``<id>-fork-<8 hex>``, logged as ``session-forked``;
        load and resume take it as any other id."""
        if "fork" not in self._session_capabilities():
            self._not_found(msg_id, "session/fork")
            return
        sid = self._session_id(msg_id, params)
        if sid is None:
            return
        if sid == FORGOTTEN_CONVERSATION:
            self._unknown(msg_id, sid)
            return
        import uuid

        forked = f"{sid}-fork-{uuid.uuid4().hex[:8]}"
        self.log.event("session-forked", sessionId=sid, forkedId=forked, cwd=params.get("cwd"))
        self._answer(msg_id, {"sessionId": forked, **self._reopen(forked, params).state()}, forked)

    def _not_found(self, msg_id: Any, method: str) -> None:
        self.out.send(_wire.error_response(msg_id, METHOD_NOT_FOUND, "Method not found", {"method": method}))

    def _session_id(self, msg_id: Any, params: dict[str, Any]) -> str | None:
        """The request's ``sessionId``; ``None`` (answered as an error) without one."""
        sid = params.get("sessionId")
        if isinstance(sid, str) and sid:
            return sid
        self.out.send(_wire.error_response(msg_id, INVALID_PARAMS, "Invalid params", {"message": "sessionId required"}))
        return None

    def _reopen(self, sid: str, params: dict[str, Any]) -> _Session:
        """A loaded or resumed session, live again with the servers given now."""
        session = _Session(sid, self.scenario)
        session.mcp_servers = _mcp_servers(params)
        with self._lock:
            self._sessions[sid] = session
        return session

    def _session_capabilities(self) -> dict[str, Any]:
        caps = self.scenario.agent_capabilities.get("sessionCapabilities")
        return caps if isinstance(caps, dict) else {}


def _mcp_servers(params: dict[str, Any]) -> list[Any]:
    servers = params.get("mcpServers")
    return list(servers) if isinstance(servers, list) else []


__all__ = ["SessionMethods"]
