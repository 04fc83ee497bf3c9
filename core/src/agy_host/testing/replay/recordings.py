"""Read recorded agent traffic into one typed event list, whatever recorder made it.

The recordings under ``tests/fixtures/recorded/`` come from other projects'
recorders, each with its own line shape. Tests (and the replay agent) should
not care which one wrote a file, so every line is turned into one of four
events:

* :class:`ClientFrame`: what the client wrote to the agent's stdin.
* :class:`AgentFrame`: a JSON frame the agent wrote to stdout; recorder keys
  (``_t``) are stripped, so ``frame`` is the wire message.
* :class:`RawLine`: a stdout line that is not a JSON object (agy's sign-in URL
  line, or anything else a program printed).
* :class:`Note`: the recorder talking about the run (command, exit code,
  signal sent), never traffic.

Line shapes understood (detected per line, so a file may mix them):

* anyagent-rs: ``{"_sent": frame, "_t": s}``, ``{"_raw": text}``,
  ``{"_note": {...}}``, ``{"_meta": {...}}``; every other object is a frame
  the program wrote, with a ``_t`` stamp added. The stream-json CLI
  recordings use the same shape (``_sent`` is the stdin line), so the
  stream-json engine can reuse this parser.
* htui: ``{"direction": "agent", "method": m, "params" | "result": ...}``.
  Notifications become proper JSON-RPC frames; a ``result`` line becomes a
  response frame without an id and with :attr:`AgentFrame.answers` naming
  the request it answered (the recorder dropped the id).
* mprasanjith/anyagent: ``{"body": frame, "dir": "out" | "in"}``; ``out`` is
  client to agent.
* plain captures (a program's raw stdout): each JSON object is an
  :class:`AgentFrame`, anything else a :class:`RawLine`.

Nothing is dropped: a line no rule recognises becomes a ``Note`` of kind
``"unknown"`` with a logged warning, and a line that is not JSON becomes a
``RawLine`` (that is what it was on the wire).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

log = logging.getLogger(__name__)

#: Keys recorders add to a program's own frames; stripped from ``AgentFrame.frame``.
RECORDER_KEYS = frozenset({"_t"})


class ClientFrame(msgspec.Struct, frozen=True, kw_only=True, tag="client"):
    """A message the client sent (request, notification, or answer to an agent request)."""

    frame: dict[str, Any]
    #: 1-based line number in the recording, for error messages.
    line: int = 0
    #: Recorder timestamp in seconds since the run started, when it kept one.
    t: float | None = None


class AgentFrame(msgspec.Struct, frozen=True, kw_only=True, tag="agent"):
    """A JSON object the agent wrote (response, notification, or request to the client)."""

    frame: dict[str, Any]
    line: int = 0
    t: float | None = None
    #: For recorders that dropped the response id (htui): the method the
    #: recorded ``result``/``error`` answers. ``None`` for ordinary frames.
    answers: str | None = None


class RawLine(msgspec.Struct, frozen=True, kw_only=True, tag="raw"):
    """A line that is not a JSON object, verbatim (without its newline)."""

    text: str
    line: int = 0
    t: float | None = None
    #: True when the client wrote it (a ``_sent`` that was a string, not JSON).
    sent: bool = False


class Note(msgspec.Struct, frozen=True, kw_only=True, tag="note"):
    """The recorder's own remarks: ``kind`` is ``note`` (exit code, signal),
    ``meta`` (command, env, cwd) or ``unknown`` (a line no rule matched)."""

    data: Any
    kind: str = "note"
    line: int = 0
    t: float | None = None


RecordingEvent = ClientFrame | AgentFrame | RawLine | Note


class RecordingError(ValueError):
    """A recording file cannot be read at all (missing, not UTF-8)."""


def _stamp(obj: dict[str, Any]) -> float | None:
    t = obj.get("_t")
    return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None


def _strip(frame: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in frame.items() if k not in RECORDER_KEYS}


def _from_sent(value: Any, line: int, t: float | None) -> RecordingEvent:
    if isinstance(value, dict):
        return ClientFrame(frame=value, line=line, t=t)
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return ClientFrame(frame=parsed, line=line, t=t)
        return RawLine(text=value, line=line, t=t, sent=True)
    log.warning("recording line %d: _sent holds a %s, kept as a note", line, type(value).__name__)
    return Note(data={"_sent": value}, kind="unknown", line=line, t=t)


def _from_htui(obj: dict[str, Any], line: int) -> RecordingEvent:
    direction = obj.get("direction")
    method = obj.get("method")
    frame: dict[str, Any] = {"jsonrpc": "2.0"}
    answers: str | None = None
    if "result" in obj or "error" in obj:
        # htui dropped the id of responses; keep the method it answered.
        frame["id"] = obj.get("id")
        if "result" in obj:
            frame["result"] = obj["result"]
        else:
            frame["error"] = obj["error"]
        answers = method if isinstance(method, str) else None
    else:
        if "id" in obj:
            frame["id"] = obj["id"]
        frame["method"] = method
        if "params" in obj:
            frame["params"] = obj["params"]
    if direction == "client":
        return ClientFrame(frame=frame, line=line)
    if direction != "agent":
        log.warning("recording line %d: unknown htui direction %r, read as agent", line, direction)
    return AgentFrame(frame=frame, line=line, answers=answers)


def _is_htui(obj: dict[str, Any]) -> bool:
    return "direction" in obj and "jsonrpc" not in obj and ("method" in obj or "result" in obj or "error" in obj)


def parse_line(text: str, line: int = 0) -> RecordingEvent | None:
    """One recording line as an event; ``None`` for a blank line."""
    stripped = text.rstrip("\r\n")
    if not stripped.strip():
        return None
    try:
        obj = json.loads(stripped)
    except ValueError:
        return RawLine(text=stripped, line=line)
    if not isinstance(obj, dict):
        return RawLine(text=stripped, line=line)
    t = _stamp(obj)
    if "_sent" in obj:
        return _from_sent(obj["_sent"], line, t)
    if "_raw" in obj:
        raw = obj["_raw"]
        return RawLine(text=raw if isinstance(raw, str) else json.dumps(raw), line=line, t=t)
    if "_note" in obj:
        return Note(data=obj["_note"], kind="note", line=line, t=t)
    if "_meta" in obj and "jsonrpc" not in obj and "event" not in obj and "method" not in obj:
        return Note(data=obj["_meta"], kind="meta", line=line, t=t)
    if "body" in obj and "dir" in obj:
        body = obj["body"]
        if not isinstance(body, dict):
            log.warning("recording line %d: body is not an object, kept as a note", line)
            return Note(data=obj, kind="unknown", line=line, t=t)
        if obj["dir"] == "out":
            return ClientFrame(frame=body, line=line, t=t)
        if obj["dir"] == "in":
            return AgentFrame(frame=body, line=line, t=t)
        log.warning("recording line %d: unknown dir %r, kept as a note", line, obj["dir"])
        return Note(data=obj, kind="unknown", line=line, t=t)
    if _is_htui(obj):
        return _from_htui(obj, line)
    return AgentFrame(frame=_strip(obj), line=line, t=t)


def parse_lines(lines: Iterable[str]) -> list[RecordingEvent]:
    """Every event of a recording, in file order (blank lines skipped)."""
    events: list[RecordingEvent] = []
    for number, text in enumerate(lines, start=1):
        event = parse_line(text, number)
        if event is not None:
            events.append(event)
    return events


def read_recording(path: str | Path) -> list[RecordingEvent]:
    """Parse a recording file; raise :class:`RecordingError` if it cannot be read."""
    p = Path(path)
    try:
        text = p.read_text("utf-8")
    except FileNotFoundError as exc:
        raise RecordingError(f"recording not found: {p}") from exc
    except UnicodeDecodeError as exc:
        raise RecordingError(f"recording is not UTF-8: {p} ({exc})") from exc
    # split on "\n" only: str.splitlines() would also cut at U+2028 and
    # friends, which JSON allows raw inside strings.
    return parse_lines(text.split("\n"))


def is_request(frame: dict[str, Any]) -> bool:
    return isinstance(frame.get("method"), str) and "id" in frame


def is_notification(frame: dict[str, Any]) -> bool:
    return isinstance(frame.get("method"), str) and "id" not in frame


def is_response(frame: dict[str, Any]) -> bool:
    return "method" not in frame and ("result" in frame or "error" in frame)


__all__ = [
    "RECORDER_KEYS",
    "AgentFrame",
    "ClientFrame",
    "Note",
    "RawLine",
    "RecordingError",
    "RecordingEvent",
    "is_notification",
    "is_request",
    "is_response",
    "parse_line",
    "parse_lines",
    "read_recording",
]
