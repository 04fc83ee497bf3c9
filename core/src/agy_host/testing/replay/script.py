"""Turn a recording into the script the replay agent plays.

A script is the recording's traffic in order: :class:`Expect` items (what the
client must send next) and :class:`Emit` / :class:`EmitRaw` items (what the
agent writes back until the next ``Expect``). Recorder notes are dropped,
except that an ``{"exit": N}`` note becomes :class:`ExitCode`.

Some ACP recorders kept only the agent's side of a turn (htui). For those the
script synthesises the client's half: an ``initialize`` answered from the
sibling ``<name>-handshake.json`` digest when there is one (htui's shape),
a ``session/new`` answered with :data:`SYNTH_SESSION_ID` (which replaces the
recorder's ``<session>`` placeholder), and one ``session/prompt`` per recorded
turn: every update up to a recorded prompt result belongs to one prompt, and
updates after the last result (or in a file with none) to a final prompt
answered ``end_turn``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from agy_host.testing.replay.recordings import (
    AgentFrame,
    ClientFrame,
    Note,
    RawLine,
    RecordingEvent,
    is_notification,
    is_request,
    is_response,
    read_recording,
)

SYNTH_SESSION_ID = "replay-session-0001"


class Expect(msgspec.Struct, frozen=True, kw_only=True):
    """The client's next message, as recorded."""

    frame: dict[str, Any]
    line: int = 0

    @property
    def kind(self) -> str:
        """``request`` | ``notification`` | ``response`` | ``line`` (not JSON-RPC, e.g. stream-json)."""
        if is_request(self.frame):
            return "request"
        if is_notification(self.frame):
            return "notification"
        if is_response(self.frame) and "id" in self.frame:
            return "response"
        return "line"

    def describe(self) -> str:
        kind = self.kind
        if kind in ("request", "notification"):
            return f"{kind} {self.frame['method']}"
        if kind == "response":
            return f"a response to agent request id {self.frame['id']!r}"
        label = self.frame.get("event", self.frame.get("type"))
        return f"a line with event {label!r}" if label is not None else "a client line"


class Emit(msgspec.Struct, frozen=True, kw_only=True):
    frame: dict[str, Any]
    line: int = 0


class EmitRaw(msgspec.Struct, frozen=True, kw_only=True):
    text: str
    line: int = 0


class ExitCode(msgspec.Struct, frozen=True, kw_only=True):
    """The recorded program exited with ``code``; used when stdin closes."""

    code: int
    line: int = 0


ScriptItem = Expect | Emit | EmitRaw | ExitCode


def _subst(obj: Any, session_id: str) -> Any:
    if isinstance(obj, str):
        return obj.replace("<session>", session_id)
    if isinstance(obj, dict):
        return {k: _subst(v, session_id) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_subst(v, session_id) for v in obj]
    return obj


def init_result_from_handshake(path: Path) -> dict[str, Any]:
    """An ``initialize`` result rebuilt from htui's handshake digest."""
    digest = json.loads(path.read_text("utf-8"))
    if not isinstance(digest, dict):
        raise TypeError(f"handshake digest {path} is not an object")
    methods = digest.get("auth_methods") or []
    return {
        "protocolVersion": digest.get("protocol_version", 1),
        "agentCapabilities": digest.get("capabilities") or {},
        "authMethods": [m if isinstance(m, dict) else {"id": str(m), "name": str(m)} for m in methods],
        "agentInfo": {
            "name": digest.get("agent_name", "replay-agent"),
            "version": digest.get("agent_version", "0"),
        },
    }


def generic_init_result(name: str) -> dict[str, Any]:
    return {
        "protocolVersion": 1,
        "agentCapabilities": {
            "loadSession": False,
            "promptCapabilities": {"image": False, "audio": False, "embeddedContext": False},
        },
        "authMethods": [],
        "agentInfo": {"name": "replay-agent", "title": f"replay of {name}", "version": "0"},
    }


def handshake_for(path: Path) -> Path | None:
    """htui keeps ``<name>-handshake.json`` next to ``<name>-turn.jsonl``."""
    stem = path.name.split(".jsonl")[0]
    if stem.endswith("-turn"):
        candidate = path.with_name(stem[: -len("-turn")] + "-handshake.json")
        if candidate.is_file():
            return candidate
    return None


def _synthesize(events: Sequence[RecordingEvent], init_result: dict[str, Any], session_id: str) -> list[ScriptItem]:
    def request(msg_id: int, method: str, params: dict[str, Any]) -> Expect:
        return Expect(frame={"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})

    script: list[ScriptItem] = [
        request(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}),
        Emit(frame={"jsonrpc": "2.0", "id": 1, "result": init_result}),
        request(2, "session/new", {"cwd": "/", "mcpServers": []}),
        Emit(frame={"jsonrpc": "2.0", "id": 2, "result": {"sessionId": session_id}}),
    ]
    next_id = 3
    turn: list[ScriptItem] = []

    def prompt_request(msg_id: int) -> Expect:
        return request(msg_id, "session/prompt", {"sessionId": session_id, "prompt": []})

    for event in events:
        if isinstance(event, AgentFrame):
            frame = _subst(event.frame, session_id)
            if is_response(frame) and frame.get("id") is None and event.answers == "session/prompt":
                frame = {**frame, "id": next_id}
                script += [prompt_request(next_id), *turn, Emit(frame=frame, line=event.line)]
                next_id += 1
                turn = []
                continue
            turn.append(Emit(frame=frame, line=event.line))
        elif isinstance(event, RawLine) and not event.sent:
            turn.append(EmitRaw(text=event.text, line=event.line))
    if turn or next_id == 3:
        end = Emit(frame={"jsonrpc": "2.0", "id": next_id, "result": {"stopReason": "end_turn"}})
        script += [prompt_request(next_id), *turn, end]
    return script


def build_script(
    events: Sequence[RecordingEvent],
    *,
    name: str = "recording",
    init_result: dict[str, Any] | None = None,
    session_id: str = SYNTH_SESSION_ID,
) -> list[ScriptItem]:
    """The replay script of a parsed recording (synthesising the client side
    of an ACP recording that holds none; a stream-json capture without stdin
    lines is played as it is)."""
    agent_frames = [e.frame for e in events if isinstance(e, AgentFrame)]
    acp_only = bool(agent_frames) and all(f.get("jsonrpc") == "2.0" for f in agent_frames)
    if acp_only and not any(isinstance(e, ClientFrame) for e in events):
        return _synthesize(events, init_result or generic_init_result(name), session_id)
    script: list[ScriptItem] = []
    for event in events:
        if isinstance(event, ClientFrame):
            script.append(Expect(frame=event.frame, line=event.line))
        elif isinstance(event, AgentFrame):
            script.append(Emit(frame=event.frame, line=event.line))
        elif isinstance(event, RawLine):
            if not event.sent:
                script.append(EmitRaw(text=event.text, line=event.line))
        elif isinstance(event, Note) and isinstance(event.data, dict):
            code = event.data.get("exit")
            if isinstance(code, int) and not isinstance(code, bool):
                script.append(ExitCode(code=code, line=event.line))
    return script


def load_script(
    path: str | Path, *, handshake: str | Path | None = None, session_id: str = SYNTH_SESSION_ID
) -> list[ScriptItem]:
    p = Path(path)
    events = read_recording(p)
    hs = Path(handshake) if handshake is not None else handshake_for(p)
    init = init_result_from_handshake(hs) if hs is not None else None
    return build_script(events, name=p.name, init_result=init, session_id=session_id)


__all__ = [
    "SYNTH_SESSION_ID",
    "Emit",
    "EmitRaw",
    "ExitCode",
    "Expect",
    "ScriptItem",
    "build_script",
    "generic_init_result",
    "handshake_for",
    "init_result_from_handshake",
    "load_script",
]
