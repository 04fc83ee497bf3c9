"""Transcripts: what each host session said and heard, turn by turn.

``$XDG_STATE_HOME/agy-host/transcripts/<session>.jsonl``, one JSON object per
line: the user's prompt, the host tools the agent called, the answer (with
the turn's usage and duration). They
are the host side of the conversation, which the agents do not share: the
context digest reads them to tell one engine what happened on another, and
``agy-host sessions show`` prints them, and ``agy_host.get_session()`` returns
them turn by turn.

The observer sees a turn through two hooks: ``agy_host_turn_started`` (the
user's text, the working directory, and the config and environment of the
host running the turn, so a program's own environment decides where the
file goes) and ``agy_host_render_event`` (the answer, host tool calls and
how the turn ended). Each plugin manager has its own observer. A turn is written when it ends, all its lines in one
``write`` on an ``O_APPEND`` descriptor, so concurrent agy-host processes
never interleave half lines and a crash loses at most the turn in flight
(an answer over a mebibyte goes in pieces: :func:`append_entries`).
A torn or foreign line is skipped when reading, never fatal, and the next
turn's lines start on a line of their own. A turn that
failed before the agent had a conversation for it is not written
(:func:`never_started`). Lines are not synced to disk: a power cut may
lose the last turns' lines (a torn one is skipped when read).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import msgspec

from agy_host import hookimpl
from agy_host.builtins.json_slices import SLICE_CHARS, write_sliced
from agy_host.contract.answer import answer_slices
from agy_host.contract.events import HostEvent, ToolUseRequested, TurnEnded, TurnStarted, UsageCounts

if TYPE_CHECKING:
    from agy_host.contract.run_context import TurnContext

TRANSCRIPT_VERSION = 1
TRANSCRIPTS_DIR = "transcripts"

Role = Literal["user", "assistant", "tool"]


class TranscriptEntry(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One line of a transcript."""

    #: Format version, on every line (a reader skips lines it does not know).
    v: int
    #: ISO 8601 UTC time the turn ended.
    ts: str
    role: Role
    text: str = ""
    engine: str = ""
    agent: str = ""
    #: The agent conversation the turn ran in: entries of the conversation a
    #: turn continues are already in that agent's own history.
    conversation_id: str | None = None
    cwd: str = ""
    #: ``assistant`` entries: how the turn ended.
    stop_reason: str = ""
    error: str = ""
    #: ``tool`` entries: the host tool and its arguments.
    tool: str = ""
    args: dict[str, object] = msgspec.field(default_factory=dict)
    is_error: bool = False
    #: ``assistant`` entries: the turn's usage as the agent reported it (none
    #: on lines written before it was recorded) and how long the turn took.
    usage: UsageCounts | None = None
    duration_s: float | None = None


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(TranscriptEntry)


def transcripts_dir(env: Mapping[str, str] | None = None) -> Path:
    from agy_host.config import state_dir

    return state_dir(env) / TRANSCRIPTS_DIR


def transcript_path(session: str, env: Mapping[str, str] | None = None) -> Path:
    """Session names are checked by the CLI (letters, digits, ``._-:``), so the
    name is the file name; anything else is refused rather than escaped."""
    if not session or "/" in session or session in {".", ".."} or "\0" in session:
        raise ValueError(f"not a session name: {session!r}")
    return transcripts_dir(env) / f"{session}.jsonl"


def append_entries(
    session: str,
    entries: list[TranscriptEntry],
    env: Mapping[str, str] | None = None,
    *,
    spooled: tuple[int, Iterable[str]] | None = None,
) -> Path:
    """Append ``entries`` on an ``O_APPEND`` descriptor, in one ``write`` for
    any turn whose lines fit in :data:`SLICE_CHARS` of text.

    A longer text (a flood's 12 MB answer) is encoded a slice at a time and
    written in ~1 MiB pieces instead of being encoded whole: the encoded line
    would be one more copy of the answer, at the turn's end, when the host
    already holds it once. Pieces of one turn never interleave with another
    turn's: a session runs one turn at a time (``runtime/turn_lock.py``). A
    crash between the pieces leaves a torn line; the next append starts on a
    line of its own, and the reader skips the torn one. ``spooled``: the
    text of entry ``spooled[0]``, a slice at a time, in place of its own (an
    answer the turn did not keep in memory, ``contract/answer.py``).
    """
    path = transcript_path(session, env)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        if spooled is not None or any(len(e.text) > SLICE_CHARS for e in entries):
            _append_sliced(fd, entries, spooled)
        else:
            lead = b"" if _ends_a_line(fd) else b"\n"
            _write_all(fd, lead + _encoder.encode_lines(entries))
    finally:
        os.close(fd)
    return path


def _ends_a_line(fd: int) -> bool:
    """Whether the file is empty or ends with a newline (not a torn line)."""
    size = os.fstat(fd).st_size
    return size == 0 or os.pread(fd, 1, size - 1) == b"\n"


def _append_sliced(fd: int, entries: list[TranscriptEntry], spooled: tuple[int, Iterable[str]] | None) -> None:
    buf = bytearray() if _ends_a_line(fd) else bytearray(b"\n")

    def write(piece: bytes | bytearray | memoryview) -> None:
        buf.extend(piece)
        if len(buf) >= SLICE_CHARS:
            _write_all(fd, buf)
            del buf[:]

    for i, entry in enumerate(entries):
        if spooled is not None and i == spooled[0]:
            write_sliced(_encoder, entry, "text", write, spooled[1])
        elif len(entry.text) <= SLICE_CHARS:
            _encoder.encode_into(entry, buf, -1)
        else:
            write_sliced(_encoder, entry, "text", write)
        buf += b"\n"
    _write_all(fd, buf)


def _write_all(fd: int, data: bytes | bytearray) -> None:
    view = memoryview(data)
    while view:  # a regular file takes it in one go; loop for the pathological case
        written = os.write(fd, view)
        view = view[written:]


def read_transcript(
    session: str, env: Mapping[str, str] | None = None, warn: Callable[[str], None] | None = None
) -> list[TranscriptEntry]:
    """Every readable entry, oldest first; ``[]`` when there is no transcript."""
    path = transcript_path(session, env)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    entries: list[TranscriptEntry] = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            entries.append(_decoder.decode(line))
        except (msgspec.DecodeError, RecursionError) as exc:
            if warn is not None:
                warn(f"transcript {path}:{number}: skipped an unreadable line ({exc})")
    return entries


def delete_transcript(session: str, env: Mapping[str, str] | None = None) -> bool:
    try:
        transcript_path(session, env).unlink()
    except FileNotFoundError:
        return False
    return True


def list_transcripts(env: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Session name -> transcript file, for every transcript on disk."""
    root = transcripts_dir(env)
    if not root.is_dir():
        return {}
    return {p.name[: -len(".jsonl")]: p for p in sorted(root.glob("*.jsonl"))}


def turns_of(entries: list[TranscriptEntry]) -> int:
    return sum(1 for e in entries if e.role == "assistant")


def never_started(ended: TurnEnded) -> bool:
    """A turn that failed before the agent had a conversation for it: its
    command not found, a sign-in refused, a conversation that could not be
    resumed. The prompt reached no agent, so nothing is written: a failed
    start must not become a session in ``sessions list`` (it has no binding
    either, and its error was shown when it happened)."""
    return (
        ended.stop_reason == "error"
        and ended.conversation_id is None
        and not ended.response
        and not ended.response_elided
    )


class _Turn:
    __slots__ = ("agent", "asked_at", "cwd", "enabled", "engine", "env", "session", "tools", "user_text")

    def __init__(self, ctx: TurnContext) -> None:
        self.session = ctx.session
        self.engine = ctx.engine
        self.cwd = ctx.cwd
        self.user_text = ctx.user_text
        self.env = ctx.env
        transcripts = getattr(ctx.config, "transcripts", None)
        self.enabled = bool(getattr(transcripts, "enabled", True))
        self.agent = ""
        #: When the prompt went to the agent (the user line's time; the
        #: answer's is when the turn ended).
        self.asked_at = ""
        self.tools: list[ToolUseRequested] = []


class TranscriptObserver:
    """Collects one turn at a time (a host runs one turn at a time) and writes
    it when it ends."""

    def __init__(self) -> None:
        self._pending: _Turn | None = None
        self._turn: _Turn | None = None

    def started(self, ctx: TurnContext) -> None:
        self._pending = _Turn(ctx)

    def event(self, event: HostEvent) -> None:
        match event:
            case TurnStarted():
                pending, self._pending = self._pending, None
                if pending is not None and pending.session == event.session:
                    from agy_host.runtime.store import utc_now

                    pending.agent = event.agent
                    pending.asked_at = utc_now()
                    self._turn = pending
                else:
                    self._turn = None  # a turn this observer did not see start: nothing to write
            case ToolUseRequested():
                if self._turn is not None:
                    self._turn.tools.append(event)
            case TurnEnded():
                turn, self._turn = self._turn, None
                if turn is not None and turn.enabled and not never_started(event):
                    self._write(turn, event)
            case _:
                pass

    def _write(self, turn: _Turn, ended: TurnEnded) -> None:
        from agy_host.runtime.store import utc_now

        ts = utc_now()

        def entry(role: Role, at: str = ts, **fields: object) -> TranscriptEntry:
            return msgspec.convert(
                {
                    "v": TRANSCRIPT_VERSION,
                    "ts": at,
                    "role": role,
                    "engine": turn.engine,
                    "agent": turn.agent,
                    "conversation_id": ended.conversation_id,
                    **fields,
                },
                TranscriptEntry,
            )

        entries = [entry("user", turn.asked_at or ts, text=turn.user_text, cwd=turn.cwd)]
        for tool in turn.tools:
            called = msgspec.json.encode(tool.args).decode() if tool.args else "{}"
            entries.append(
                entry(
                    "tool",
                    tool=tool.name,
                    args=dict(tool.args),
                    text=f"(called with {called}; the result went to that agent)",
                )
            )
        entries.append(
            entry(
                "assistant",
                text=ended.response,
                stop_reason=ended.stop_reason,
                error=ended.error,
                usage=ended.usage,
                duration_s=round(ended.duration_s, 3),
            )
        )
        spooled = (len(entries) - 1, answer_slices(ended)) if ended.response_elided else None
        append_entries(turn.session, entries, turn.env, spooled=spooled)


class TranscriptPlugin:
    """The transcripts of one host (one per plugin manager)."""

    #: Reads an elided answer through ``answer_slices`` (``contract/answer.py``).
    AGY_HOST_RESPONSE_OPTIONAL = True

    def __init__(self) -> None:
        self.observer = TranscriptObserver()

    @hookimpl
    def agy_host_turn_started(self, turn: TurnContext) -> None:
        self.observer.started(turn)

    @hookimpl
    def agy_host_render_event(self, event: HostEvent) -> None:
        self.observer.event(event)


def make_plugin() -> TranscriptPlugin:
    return TranscriptPlugin()


__all__ = [
    "TRANSCRIPTS_DIR",
    "TRANSCRIPT_VERSION",
    "TranscriptEntry",
    "TranscriptObserver",
    "TranscriptPlugin",
    "append_entries",
    "delete_transcript",
    "list_transcripts",
    "make_plugin",
    "never_started",
    "read_transcript",
    "transcript_path",
    "transcripts_dir",
    "turns_of",
]
