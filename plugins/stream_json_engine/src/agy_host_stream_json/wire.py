"""The stream-json dialect as msgspec Structs, and a parser that never throws.

agy writes one JSON object per line on stdout. Three envelopes matter::

    {"event": "init", "conversation_id": "...", "init": {"model": ..., "tools": [...], ...}}
    {"event": "step_update", "step_update": {"step_index": 2, "state": "ACTIVE", "step_type": "tool", ...}}
    {"event": "result", "result": {"status": "SUCCESS", "response": "...", "usage": {...}}}

Every line is decoded once, into :class:`Line`, with a typed decoder (the hot
path). Tolerance rules, each from a build that did it:

* ``conversation_id`` sits at the root of ``init`` on real builds and inside
  it on older ones; both are read. A bare step (an object with a string
  ``step_type``) or a bare result (a string ``status``) is accepted too.
* A field of an unexpected type does not lose the line: the field is dropped
  (and named in :attr:`Parsed.dropped` so the driver can warn) and the rest
  is kept.
* Unknown events, unknown step types and unknown fields degrade to
  :class:`Unknown` or are ignored; nothing raises.
* Lines are split on ``\\n`` only: Go may put a raw U+0085 inside a string,
  which ``str.splitlines()`` would cut.
* A line with bytes that are not UTF-8 is decoded again with U+FFFD in
  their place (core's :func:`~agy_host.engine.utf8.repair_utf8`, as the ACP
  engine does) and marked :attr:`Parsed.invalid_utf8`, so one bad byte never
  drops the delta around it.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from agy_host.engine.process import MAX_LINE_BYTES, LineSplitter
from agy_host.engine.utf8 import repair_utf8


class Usage(msgspec.Struct, kw_only=True, omit_defaults=True):
    input_tokens: int | None = None
    output_tokens: int | None = None
    thinking_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    total_tokens: int | None = None


class ToolInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    name: str | None = None
    parameters: dict[str, Any] | None = None
    #: A summary (``view_file``: "3 lines, 44 bytes") or raw text (``run_command``).
    output: Any = None
    #: ``{"type": "TOOL_ERROR", "message": ...}`` or a string.
    error: Any = None


class Step(msgspec.Struct, kw_only=True, omit_defaults=True):
    step_index: int | None = None
    #: ``ACTIVE`` | ``DONE`` | ``ERROR`` (others are kept verbatim).
    state: str = ""
    #: ``user_input`` | ``agent_response`` | ``tool`` | ``checkpoint`` |
    #: ``system_message`` | ``subagent`` | ``error_message`` | ``unknown`` | ...
    step_type: str = ""
    conversation_id: str | None = None
    tool_name: str | None = None
    tool_info: ToolInfo | None = None
    text_delta: str | None = None
    response_text: str | None = None
    thought_text: str | None = None
    thinking_tokens: int | None = None
    duration_seconds: float | None = None
    error_message: str | None = None
    error: Any = None
    usage: Usage | None = None
    subagent_info: Any = None


class InitInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    conversation_id: str | None = None
    model: str | None = None
    cwd: str | None = None
    tools: list[Any] | None = None
    #: ``request-review`` (default) or ``always-proceed`` (skip permissions).
    permission_mode: str | None = None
    usage: Usage | None = None


class DeniedAction(msgspec.Struct, kw_only=True, omit_defaults=True):
    action: str = ""
    display_name: str = ""


class Result(msgspec.Struct, kw_only=True, omit_defaults=True):
    #: ``SUCCESS`` (``OK`` on old builds) or ``ERROR``, ``CANCELED``, ...
    status: str = ""
    response: str | None = None
    error: Any = None
    usage: Usage | None = None
    conversation_id: str | None = None
    duration_seconds: float | None = None
    num_turns: int | None = None
    denied_actions: list[DeniedAction] | None = None
    structured_output: Any = None


class Line(msgspec.Struct, kw_only=True):
    """One stdout line as decoded; :func:`parse` classifies it."""

    event: Any = None
    conversation_id: Any = None
    init: InitInfo | None = None
    step_update: Step | None = None
    result: Result | None = None
    #: Root-level shorthand forms: a bare step or a bare result.
    step_type: Any = None
    status: Any = None


# ---------------------------------------------------------------------------
# parsed events
# ---------------------------------------------------------------------------


class Parsed(msgspec.Struct, kw_only=True):
    #: Fields dropped because their type was unexpected (``$.step_update.step_index``).
    dropped: list[str] = msgspec.field(default_factory=list)
    #: The line held bytes that are not UTF-8, decoded as U+FFFD.
    invalid_utf8: bool = False


class InitEvent(Parsed, kw_only=True):
    conversation_id: str | None
    info: InitInfo


class StepEvent(Parsed, kw_only=True):
    step: Step


class ResultEvent(Parsed, kw_only=True):
    result: Result


class Unknown(Parsed, kw_only=True):
    #: ``not-json``, ``not-an-object``, ``event:<name>``, ``shape``, ``too-long``.
    reason: str
    head: str


Event = InitEvent | StepEvent | ResultEvent | Unknown

_line = msgspec.json.Decoder(Line)
_any = msgspec.json.Decoder()
_PATH = re.compile(r"at `\$((?:\.[A-Za-z_][\w]*|\[\d+\])+)`")
_MAX_REPAIRS = 8


def _head(raw: bytes) -> str:
    return raw[:200].decode("utf-8", "replace")


def _conv(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _classify(line: Line, raw: bytes, dropped: list[str]) -> Event:
    event = line.event
    if event == "step_update" and line.step_update is not None:
        return StepEvent(step=line.step_update, dropped=dropped)
    if event == "result" and line.result is not None:
        return ResultEvent(result=line.result, dropped=dropped)
    if event == "init":
        info = line.init or InitInfo()
        cid = _conv(line.conversation_id) or _conv(info.conversation_id)
        return InitEvent(conversation_id=cid, info=info, dropped=dropped)
    if event is None or event not in ("step_update", "result"):
        if isinstance(line.step_type, str):
            return _shorthand(raw, Step, dropped)
        if isinstance(line.status, str) and event is None:
            return _shorthand(raw, Result, dropped)
    name = event if isinstance(event, str) else type(event).__name__
    return Unknown(reason=f"event:{name}", head=_head(raw), dropped=dropped)


def _shorthand(raw: bytes, kind: type[Step] | type[Result], dropped: list[str]) -> Event:
    value = _repair(_any.decode(raw), kind, dropped)
    if isinstance(value, Step):
        return StepEvent(step=value, dropped=dropped)
    if isinstance(value, Result):
        return ResultEvent(result=value, dropped=dropped)
    return Unknown(reason="shape", head=_head(raw), dropped=dropped)


def _delete(obj: Any, path: str) -> bool:
    parts = re.findall(r"\.([A-Za-z_]\w*)|\[(\d+)\]", path)
    node = obj
    for i, (key, index) in enumerate(parts):
        last = i == len(parts) - 1
        if key:
            if not isinstance(node, dict) or key not in node:
                return False
            if last:
                del node[key]
                return True
            node = node[key]
        else:
            idx = int(index)
            if not isinstance(node, list) or idx >= len(node):
                return False
            if last:
                del node[idx]
                return True
            node = node[idx]
    return False


def _repair(value: Any, kind: Any, dropped: list[str]) -> Any:
    """Convert ``value`` to ``kind``, dropping fields of the wrong type one by
    one (named in ``dropped``); ``None`` when that does not converge."""
    for _ in range(_MAX_REPAIRS):
        try:
            return msgspec.convert(value, kind, strict=False)
        except msgspec.ValidationError as exc:
            match = _PATH.search(str(exc))
            if match is None or not _delete(value, match.group(1)):
                return None
            dropped.append("$" + match.group(1))
    return None


def parse(raw: bytes) -> Event:
    """Classify one line (without its newline). Never raises."""
    event = _parse(raw)
    if type(event) is Unknown and event.reason == "not-json":
        fixed = repair_utf8(raw)
        if fixed is not None:
            event = _parse(fixed)
            event.invalid_utf8 = True
    return event


def _parse(raw: bytes) -> Event:
    try:
        return _classify(_line.decode(raw), raw, [])
    except msgspec.ValidationError:
        pass
    except (msgspec.DecodeError, RecursionError):
        return Unknown(reason="not-json", head=_head(raw))
    try:
        value = _any.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return Unknown(reason="not-json", head=_head(raw))
    if not isinstance(value, dict):
        return Unknown(reason="not-an-object", head=_head(raw))
    dropped: list[str] = []
    line = _repair(value, Line, dropped)
    if not isinstance(line, Line):
        return Unknown(reason="shape", head=_head(raw), dropped=dropped)
    return _classify(line, raw, dropped)


class LineBuffer:
    """Bytes in, complete non-empty lines out (a trailing ``\r`` removed).
    Pipe reads are not aligned to lines, so the tail is kept until its
    newline arrives; the framing is core's linear
    :class:`agy_host.engine.process.LineSplitter`. A line longer than
    ``max_line`` is counted in :attr:`overflows` when detected and skipped
    up to its newline (the reader reports each)."""

    __slots__ = ("_split", "overflows")

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self._split = LineSplitter(max_line)
        #: Lines dropped for exceeding ``max_line``.
        self.overflows = 0

    @property
    def max_line(self) -> int:
        return self._split.max_line

    def feed(self, data: bytes | bytearray) -> list[bytes]:
        lines, refused = self._split.feed(data)
        self.overflows += refused
        return [line[:-1] if line.endswith(b"\r") else line for line in lines if line.strip()]

    def flush(self) -> list[bytes]:
        """The unterminated tail at EOF (a line agy did not finish is still a line)."""
        tail = self._split.flush()
        return [tail] if tail.strip() else []


def encode_user_line(text: str) -> bytes:
    """The stdin line of one turn."""
    return msgspec.json.encode({"event": "user", "message": {"role": "user", "content": text}}) + b"\n"


__all__ = [
    "DeniedAction",
    "Event",
    "InitEvent",
    "InitInfo",
    "Line",
    "LineBuffer",
    "Parsed",
    "Result",
    "ResultEvent",
    "Step",
    "StepEvent",
    "ToolInfo",
    "Unknown",
    "Usage",
    "encode_user_line",
    "parse",
]
