"""The keeper's wire: typed frames over a Unix stream socket.

Every frame is a 4-byte big-endian length and a msgspec JSON document, one
of the tagged structs below (``kind``), except the answer's text: an
``Event`` of a ``TextDelta`` goes as a byte ``0x00`` and the text's UTF-8 (a
flood's 12 MB are not JSON-escaped by the keeper and scanned again by the
client; a JSON document never starts with that byte). Frames are size-bounded on both
sides (:data:`MAX_FRAME`), decoded into their type or refused: a garbage or
hostile peer gets an error and is dropped, never a crash of the keeper.

The payloads are the host's own contract types (prompt blocks, host events,
permission requests, questions, turn results), so nothing is translated.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

import msgspec

from agy_host.contract.events import HostEvent, TextDelta
from agy_host.contract.interactions import Answer, Question
from agy_host.contract.permissions import PermissionDecision, PermissionRequest
from agy_host.contract.prompt import PromptBlock
from agy_host.contract.tool_calls import ListEntry, ToolCall, ToolVerdict
from agy_host.contract.tools import ToolResult
from agy_host.contract.turn_result import TurnResult

if TYPE_CHECKING:  # imported when a FrameStream is made: the thin client runs without trio
    import trio

#: The wire's own version: a client and a keeper that differ never talk.
WIRE_VERSION = 2
#: Largest frame either side accepts (a prompt with images, a long answer).
MAX_FRAME = 64 * 1024 * 1024
_LENGTH = struct.Struct(">I")
#: The first byte of a text frame's body (see the module docstring).
TEXT_FRAME = 0
_TEXT_MARK = bytes([TEXT_FRAME])


class _Frame(msgspec.Struct, tag_field="kind", kw_only=True, omit_defaults=True):
    pass


# -- client -> keeper ------------------------------------------------------------------


class Hello(_Frame, tag="hello"):
    """The first frame of every connection."""

    wire: int
    #: ``agy_host.__version__`` plus a stamp of the installed code: a keeper of
    #: another build is never driven (:func:`agy_host.keeper.place.build_stamp`).
    build: str
    pid: int
    command: str = ""


class ToolSpec(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A host tool that runs in the client (a program's own function, passed
    as ``tools=``): the keeper offers it to the agent under this name and
    schema and asks the attached client to run it (:class:`CallTool`)."""

    name: str
    description: str
    #: JSON schema of the arguments object.
    input_schema: dict[str, Any] = msgspec.field(default_factory=dict)


class HostSpec(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What the keeper needs to build the command's host for a session: the
    same environment, engine choice and command-line overrides."""

    env: dict[str, str]
    engine: str | None = None
    agent: str | None = None
    permissions: str | None = None
    trace: str | None = None
    system_prompt: str | None = None
    digest: bool | None = None
    #: The client draws diffs of edits (the keeper's turn keeps a baseline).
    draws_diffs: bool = False
    #: Host tools the client runs itself; part of the warm profile (another
    #: list starts cold).
    tools: list[ToolSpec] = msgspec.field(default_factory=list)
    #: The command's tool lists (``--allow-tool``, ``--deny-tool``, a program's
    #: ``allowed_tools=``...); the config's the keeper reads itself.
    allowed_tools: list[ListEntry] = msgspec.field(default_factory=list)
    disallowed_tools: list[ListEntry] = msgspec.field(default_factory=list)
    #: The client has a ``before_tool`` hook: the keeper asks it about each
    #: host tool and harness step (:class:`CheckTool`).
    before_tool: bool = False


class Settings(msgspec.Struct, kw_only=True, omit_defaults=True):
    """:class:`~agy_host.runtime.session.TurnSettings` on the wire."""

    model: str | None = None
    effort: str | None = None
    mode: str | None = None
    skip_permissions: bool | None = None
    timeout_s: float | None = None
    inactivity_s: float | None = None
    additional_directories: list[str] = msgspec.field(default_factory=list)
    max_tokens: int | None = None
    max_cost: float | None = None
    resume: bool = False
    #: Wait while another command holds the session's turn lock (``False``:
    #: the turn ends at once with error kind ``busy``, exit 7).
    wait: bool = True


class RunTurn(_Frame, tag="run"):
    """Run one turn of ``session`` on its warm agent (started when there is none)."""

    session: str
    prompt: list[PromptBlock]
    cwd: str
    host: HostSpec
    settings: Settings = msgspec.field(default_factory=Settings)
    #: How long the agent stays warm after this turn (seconds).
    keep_alive_s: float = 300.0
    #: Fail at once when another command's turn runs on the session.
    no_wait: bool = False
    #: Only on an agent that is warm already (the thin client's request,
    #: :mod:`agy_host.keeper.thin`): otherwise the keeper answers
    #: ``Refused(fallback=True)`` before anything else and the command takes
    #: its normal path.
    warm_only: bool = False
    #: ``False``: the ``done`` frame's result leaves out the answer's text,
    #: which the client drew from the events already (a flood's answer is
    #: not sent twice).
    result_text: bool = True
    #: The client keeps the text events it draws and rebuilds ``turn_end``'s
    #: answer from them (:mod:`agy_host.keeper.rebuild`): the keeper leaves
    #: it out of ``turn_end`` when it is exactly that text.
    rebuild_answer: bool = False


class Interrupt(_Frame, tag="interrupt"):
    """Ctrl-C (or SIGTERM/SIGHUP, named) at the client: abort, then stop waiting."""

    signal: str = ""


class PermissionAnswer(_Frame, tag="permission_answer"):
    id: int
    decision: PermissionDecision


class QuestionAnswer(_Frame, tag="question_answer"):
    id: int
    answer: Answer


class ToolAnswer(_Frame, tag="tool_answer"):
    """The result of the client's own tool the keeper asked for (:class:`CallTool`)."""

    id: int
    result: ToolResult


class ToolChecked(_Frame, tag="tool_checked"):
    """The client's tool gate's verdict the keeper asked for (:class:`CheckTool`)."""

    id: int
    verdict: ToolVerdict


class Status(_Frame, tag="status"):
    session: str | None = None


class Stop(_Frame, tag="stop"):
    """End warm agents gracefully: one session, or every one (``session`` unset)."""

    session: str | None = None
    #: Leave a session whose turn is running alone (a cold command about to
    #: wait for that turn: the agent is replaced later, as outdated).
    only_idle: bool = False


class Cancel(_Frame, tag="cancel"):
    """Cancel the running turn of ``session`` (from another terminal)."""

    session: str


# -- keeper -> client ------------------------------------------------------------------


class Welcome(_Frame, tag="welcome"):
    wire: int
    build: str
    pid: int


class Refused(_Frame, tag="refused"):
    """The keeper will not serve this request (another build, a busy session)."""

    reason: str
    #: The exit code the client should end with.
    code: int = 1
    #: Not an error: the request asked for ``warm_only`` and the session is
    #: not warm (or not in a way the thin client can serve); nothing ran.
    fallback: bool = False


class Event(_Frame, tag="event"):
    event: HostEvent


class DiffText(_Frame, tag="diff"):
    """The diff of an edit card, rendered by the keeper against the "before"
    snapshot its turn took (only when the client draws diffs); sent just
    before the card's event, which the client's renderer then draws with it.
    ``None``: no plugin renders diffs there either."""

    call_id: str
    text: str | None = None


class Warning_(_Frame, tag="warning"):
    """A warning of the session's host (config, plugins), for the client's stderr."""

    message: str


class AskPermission(_Frame, tag="ask_permission"):
    id: int
    request: PermissionRequest


class AskQuestion(_Frame, tag="ask_question"):
    id: int
    question: Question


class CallTool(_Frame, tag="call_tool"):
    """The agent called one of the client's own tools (a :class:`ToolSpec` of
    its request): the client runs it and answers with :class:`ToolAnswer`."""

    id: int
    name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)


class CheckTool(_Frame, tag="check_tool"):
    """A tool call about to run on the warm agent, for the client's tool gate
    (its program's ``before_tool``): answered with :class:`ToolChecked`."""

    id: int
    call: ToolCall


class TurnDone(_Frame, tag="done"):
    """The turn's end: its result, or ``None`` with ``error`` when the keeper
    could not run it (or stopped waiting for it)."""

    result: TurnResult | None = None
    error: str = ""
    #: The agent was warm before this turn (no spawn, no initialize, no load).
    warm: bool = False


class WarmInfo(msgspec.Struct, kw_only=True):
    """One warm session, as ``agy-host sessions status`` shows it."""

    session: str
    warm: bool
    engine: str
    agent: str
    model: str = ""
    agent_pid: int | None = None
    idle_s: float = 0.0
    keep_alive_s: float = 0.0
    turn_running: bool = False
    turns: int = 0
    attached: str = ""
    cwd: str = ""
    #: The other warm sessions on the same agent process (a shared harness).
    shared_with: list[str] = msgspec.field(default_factory=list)


class StatusReply(_Frame, tag="status_reply"):
    keeper_pid: int
    build: str
    started_s: float
    sessions: list[WarmInfo] = msgspec.field(default_factory=list)


class Done(_Frame, tag="ok"):
    """A control request (stop, cancel) was carried out; ``message`` says what."""

    message: str = ""
    count: int = 0


ToKeeper = (
    Hello | RunTurn | Interrupt | PermissionAnswer | QuestionAnswer | ToolAnswer | ToolChecked | Status | Stop | Cancel
)
ToClient = (
    Welcome
    | Refused
    | Event
    | DiffText
    | Warning_
    | AskPermission
    | AskQuestion
    | CallTool
    | CheckTool
    | TurnDone
    | StatusReply
    | Done
)

_encoder = msgspec.json.Encoder()
_to_keeper = msgspec.json.Decoder(ToKeeper)
_to_client = msgspec.json.Decoder(ToClient)


class FrameError(Exception):
    """A frame that is too large or not one of the wire's types."""


def encode(frame: _Frame) -> bytes:
    body = _encoder.encode(frame)
    if len(body) > MAX_FRAME:
        raise FrameError(f"frame of {len(body)} bytes is over the {MAX_FRAME} byte limit")
    return _LENGTH.pack(len(body)) + body


def encode_all(frames: tuple[_Frame, ...] | list[_Frame], out: bytearray | None = None) -> bytearray:
    """Frames as one buffer to send at once (appended to ``out`` when given),
    each body encoded in place after its header: a large body (a flood's
    answer) is not copied again."""
    if out is None:
        out = bytearray()
    for frame in frames:
        start = len(out)
        out += bytes(HEADER_SIZE)
        event = getattr(frame, "event", None)
        if type(event) is TextDelta:
            out += _TEXT_MARK
            out += event.delta.encode("utf-8", "surrogatepass")
        else:
            _encoder.encode_into(frame, out, -1)
        size = len(out) - start - HEADER_SIZE
        if size > MAX_FRAME:
            raise FrameError(f"frame of {size} bytes is over the {MAX_FRAME} byte limit")
        _LENGTH.pack_into(out, start, size)
    return out


def frame_length(header: bytes | bytearray | memoryview) -> int:
    """The body length a 4-byte header announces; refused when too large."""
    (length,) = _LENGTH.unpack(header)
    if length > MAX_FRAME:
        raise FrameError(f"peer announced a frame of {length} bytes (limit {MAX_FRAME})")
    return int(length)


def decode_for_keeper(body: bytes) -> ToKeeper:
    try:
        return _to_keeper.decode(body)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise FrameError(f"not a keeper request: {exc}") from exc


def decode_for_client(body: bytes | bytearray | memoryview) -> ToClient:
    if body[:1] == _TEXT_MARK:
        try:
            return Event(event=TextDelta(delta=str(body[1:], "utf-8", "surrogatepass")))
        except UnicodeDecodeError as exc:
            raise FrameError(f"not a keeper answer: a text frame that is not UTF-8 ({exc})") from exc
    try:
        return _to_client.decode(body)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise FrameError(f"not a keeper answer: {exc}") from exc


HEADER_SIZE = _LENGTH.size


class FrameStream:
    """Frames over one trio stream: whole frames in, whole frames out, one
    writer at a time. ``receive`` returns ``None`` at a clean end of stream."""

    def __init__(self, stream: trio.abc.Stream, buffered: bytes = b"") -> None:
        import trio

        self.stream = stream
        #: ``buffered``: bytes already read from the stream (a connection handed over mid-turn).
        self._buffer = bytearray(buffered)
        self._send_lock = trio.Lock()

    async def send(self, *frames: _Frame) -> None:
        await self.send_bytes(encode_all(frames))

    async def send_bytes(self, data: bytes | bytearray) -> None:
        """Frames encoded already (:func:`encode_all`)."""
        async with self._send_lock:
            await self.stream.send_all(data)

    def write_now(self, data: bytes | bytearray | memoryview) -> int:
        """Write what the socket takes of ``data`` at once, from synchronous
        code; the number of bytes written (``0`` when it would wait, or while
        an async :meth:`send` is under way: its bytes go first). Raises
        ``OSError`` on a broken connection."""
        import os

        sock = getattr(self.stream, "socket", None)
        if sock is None or self._send_lock.locked() or not data:
            return 0
        try:
            return os.write(sock.fileno(), data)
        except BlockingIOError:
            return 0

    async def wait_writable(self) -> None:
        """Until the socket can take more (a stream that cannot say: a checkpoint)."""
        import trio

        sock = getattr(self.stream, "socket", None)
        if sock is None:
            await trio.lowlevel.checkpoint()
            return
        await trio.lowlevel.wait_writable(sock)

    async def _read(self, n: int) -> bytes | None:
        while len(self._buffer) < n:
            chunk = await self.stream.receive_some(max(65536, n - len(self._buffer)))
            if not chunk:
                if self._buffer:
                    raise FrameError("the peer closed the connection mid-frame")
                return None
            self._buffer += chunk
        out = bytes(self._buffer[:n])
        del self._buffer[:n]
        return out

    async def receive_raw(self) -> bytes | None:
        header = await self._read(HEADER_SIZE)
        if header is None:
            return None
        body = await self._read(frame_length(header))
        if body is None:
            raise FrameError("the peer closed the connection mid-frame")
        return body

    async def wait_readable(self) -> None:
        """Until the peer has sent something or closed (what is buffered
        counts): how a keeper notices a client that leaves, or interrupts,
        while its request waits."""
        import trio

        if self._buffer:
            return
        sock = getattr(self.stream, "socket", None)
        if sock is None:
            await trio.sleep_forever()  # a stream that cannot say
        await trio.lowlevel.wait_readable(sock)

    async def aclose(self) -> None:
        await self.stream.aclose()


__all__ = [
    "HEADER_SIZE",
    "MAX_FRAME",
    "TEXT_FRAME",
    "WIRE_VERSION",
    "AskPermission",
    "AskQuestion",
    "CallTool",
    "Cancel",
    "Done",
    "Event",
    "FrameError",
    "FrameStream",
    "Hello",
    "HostSpec",
    "Interrupt",
    "PermissionAnswer",
    "CheckTool",
    "ToolChecked",
    "QuestionAnswer",
    "Refused",
    "RunTurn",
    "Settings",
    "Status",
    "StatusReply",
    "Stop",
    "ToClient",
    "ToKeeper",
    "ToolAnswer",
    "ToolSpec",
    "TurnDone",
    "WarmInfo",
    "Warning_",
    "Welcome",
    "decode_for_client",
    "decode_for_keeper",
    "encode",
    "encode_all",
    "frame_length",
]
