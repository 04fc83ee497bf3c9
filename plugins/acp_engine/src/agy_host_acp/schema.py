"""The ACP v1 messages agy-host reads, as msgspec Structs.

Only what the engine uses is modelled, and every model is *tolerant*: unknown
fields are ignored, optional fields default, and content blocks are loose
structs keyed by ``type`` rather than a strict union, because agents in the
field send shapes the schema does not (a bare ``{text}`` content entry, a
``_meta`` on anything). ``sessionUpdate`` is a tagged union; an update with a
variant this module does not know decodes to :class:`UnknownUpdate` holding
the raw object, so a newer agent can never crash the host.

Field names follow the wire (camelCase) through ``rename="camel"``; ``_meta``
is mapped explicitly.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from agy_host.engine.utf8 import repair_utf8

PROTOCOL_VERSION = 1


class _Wire(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """Base for tolerant wire structs."""


# ---------------------------------------------------------------------------
# initialize
# ---------------------------------------------------------------------------


class PromptCapabilities(_Wire, kw_only=True):
    image: bool = False
    audio: bool = False
    embedded_context: bool = False


class McpCapabilities(_Wire, kw_only=True):
    http: bool = False
    sse: bool = False


class AgentCapabilities(_Wire, kw_only=True):
    load_session: bool = False
    prompt_capabilities: PromptCapabilities = msgspec.field(default_factory=PromptCapabilities)
    mcp_capabilities: McpCapabilities = msgspec.field(default_factory=McpCapabilities)
    session_capabilities: dict[str, Any] = msgspec.field(default_factory=dict)
    #: ``{"logout": {}}`` when the agent offers ``logout``; loose (``null`` is allowed).
    auth: Any = None


class AuthMethod(_Wire, kw_only=True):
    id: str
    name: str = ""
    description: str | None = None
    #: ``terminal``: the user runs the agent's own command with ``args`` and
    #: ``env`` to sign in (never sent to ``authenticate``); absent: ``agent``.
    #: Loose: a wrong shape here must not fail the whole handshake.
    type: Any = "agent"
    args: Any = None
    env: Any = None


class Implementation(_Wire, kw_only=True):
    name: str = ""
    title: str | None = None
    version: str = ""


class InitializeResult(_Wire, kw_only=True):
    protocol_version: int = PROTOCOL_VERSION
    agent_capabilities: AgentCapabilities = msgspec.field(default_factory=AgentCapabilities)
    auth_methods: list[AuthMethod] = msgspec.field(default_factory=list)
    agent_info: Implementation | None = None


# ---------------------------------------------------------------------------
# sessions
# ---------------------------------------------------------------------------


class SelectOption(_Wire, kw_only=True):
    value: str
    name: str = ""
    description: str | None = None


class ConfigOption(_Wire, kw_only=True):
    id: str
    current_value: Any = None
    options: list[Any] = msgspec.field(default_factory=list)
    name: str = ""
    category: str | None = None
    type: str = "select"

    def values(self) -> list[str]:
        """Option values, flattening grouped options (``{group, options}``)."""
        out: list[str] = []
        for opt in self.options:
            if isinstance(opt, dict):
                if "value" in opt:
                    out.append(str(opt["value"]))
                for sub in opt.get("options", []) or []:
                    if isinstance(sub, dict) and "value" in sub:
                        out.append(str(sub["value"]))
        return out


class ModelEntry(_Wire, kw_only=True):
    model_id: str
    name: str = ""
    description: str | None = None


class SessionModels(_Wire, kw_only=True):
    available_models: list[ModelEntry] = msgspec.field(default_factory=list)
    current_model_id: str | None = None


class ModeEntry(_Wire, kw_only=True):
    id: str
    name: str = ""
    description: str | None = None


class SessionModes(_Wire, kw_only=True):
    available_modes: list[ModeEntry] = msgspec.field(default_factory=list)
    current_mode_id: str | None = None


class SessionSetup(_Wire, kw_only=True):
    """The result of ``session/new`` and ``session/load`` (load has no id)."""

    session_id: str | None = None
    modes: SessionModes | None = None
    models: SessionModels | None = None
    config_options: list[ConfigOption] | None = None


class SetConfigOptionResult(_Wire, kw_only=True):
    config_options: list[ConfigOption] = msgspec.field(default_factory=list)


class PromptUsage(_Wire, kw_only=True):
    input_tokens: int | None = None
    output_tokens: int | None = None
    thought_tokens: int | None = None
    cached_read_tokens: int | None = None
    cached_write_tokens: int | None = None
    total_tokens: int | None = None


class PromptResult(_Wire, kw_only=True):
    stop_reason: str | None = None
    usage: PromptUsage | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


# ---------------------------------------------------------------------------
# content (loose)
# ---------------------------------------------------------------------------


class Content(_Wire, kw_only=True, gc=False):
    """Any ContentBlock, loosely: text, image, audio, resource_link, resource.

    Not tracked by the cycle collector, like the flood's other structs: every
    message chunk holds one, and a pipe read's 1,100 of them, allocated as
    tracked objects and alive together, set off one collection per read (178
    in a 200,000-chunk turn, 15 ms). Decoded JSON cannot build a cycle
    through it (``resource`` is a plain dict of JSON values)."""

    type: str = "text"
    text: str | None = None
    data: str | None = None
    mime_type: str | None = None
    uri: str | None = None
    resource: dict[str, Any] | None = None


class ToolContent(_Wire, kw_only=True):
    """A tool call content entry: ``content`` (wrapping a block), ``diff``,
    ``terminal``; also tolerates a bare ``{text}``."""

    type: str = "content"
    content: Content | None = None
    path: str | None = None
    old_text: str | None = None
    new_text: str | None = None
    terminal_id: str | None = None
    text: str | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class Location(_Wire, kw_only=True):
    path: str
    line: int | None = None


# ---------------------------------------------------------------------------
# session/update: a tagged union on "sessionUpdate"
# ---------------------------------------------------------------------------


class _Update(msgspec.Struct, tag_field="sessionUpdate", rename="camel", kw_only=True, omit_defaults=True):
    pass


# The flood's structs are not tracked by the cycle collector (``gc=False``): a
# decoded update holds only strings and untracked structs, so it can never be
# part of a cycle, and 200,000 tracked objects per turn would cost collections.
class AgentMessageChunk(_Update, tag="agent_message_chunk", kw_only=True, gc=False):
    content: Content
    message_id: str | None = None


class AgentThoughtChunk(_Update, tag="agent_thought_chunk", kw_only=True, gc=False):
    content: Content


class UserMessageChunk(_Update, tag="user_message_chunk", kw_only=True):
    content: Content


class ToolCallFields(_Update, kw_only=True):
    tool_call_id: str
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    content: list[ToolContent] | None = None
    locations: list[Location] | None = None
    raw_input: Any = None
    raw_output: Any = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class ToolCall(ToolCallFields, tag="tool_call", kw_only=True):
    pass


class ToolCallUpdate(ToolCallFields, tag="tool_call_update", kw_only=True):
    pass


class Plan(_Update, tag="plan", kw_only=True):
    """The agent's whole plan; entries stay loose (``{content, priority,
    status}``) because the schema skips an invalid entry rather than the
    update: :mod:`agy_host_acp.events` does the same."""

    entries: list[Any] = msgspec.field(default_factory=list)


class AvailableCommand(_Wire, kw_only=True):
    """``{name, description, input: {hint} | null}``; a nameless one is skipped."""

    name: str = ""
    description: str = ""
    input: Any = None


class AvailableCommandsUpdate(_Update, tag="available_commands_update", kw_only=True):
    available_commands: list[AvailableCommand] = msgspec.field(default_factory=list)


class CurrentModeUpdate(_Update, tag="current_mode_update", kw_only=True):
    current_mode_id: str = ""


class Cost(_Wire, kw_only=True):
    amount: float
    currency: str = ""


class UsageUpdate(_Update, tag="usage_update", kw_only=True):
    used: int | None = None
    size: int | None = None
    cost: Cost | None = None


class ConfigOptionUpdate(_Update, tag="config_option_update", kw_only=True):
    config_options: list[ConfigOption] = msgspec.field(default_factory=list)


class SessionInfoUpdate(_Update, tag="session_info_update", kw_only=True):
    title: str | None = None


class NoticeUpdate(_Update, tag="notice", kw_only=True):
    """A live notice for the user (sent only to clients advertising ``session.notices``)."""

    severity: str = "info"
    title: str = ""
    description: str | None = None


class CompactionUpdate(_Update, tag="compaction_update", kw_only=True):
    """A context compaction's state (``session.compaction``); patch semantics by id."""

    compaction_id: str = ""
    status: str = ""
    summary: list[Content] | None = None
    error: str | None = None


class CompactionSummaryChunk(_Update, tag="compaction_summary_chunk", kw_only=True):
    compaction_id: str = ""
    content: Content | None = None


KnownUpdate = (
    AgentMessageChunk
    | AgentThoughtChunk
    | UserMessageChunk
    | ToolCall
    | ToolCallUpdate
    | Plan
    | AvailableCommandsUpdate
    | CurrentModeUpdate
    | UsageUpdate
    | ConfigOptionUpdate
    | SessionInfoUpdate
    | NoticeUpdate
    | CompactionUpdate
    | CompactionSummaryChunk
)


class ListedSession(_Wire, kw_only=True):
    session_id: str = ""
    cwd: str | None = None
    title: str | None = None
    updated_at: str | None = None


class ListSessionsResult(_Wire, kw_only=True):
    """``session/list``'s answer: one page, and the cursor of the next."""

    sessions: list[ListedSession] = msgspec.field(default_factory=list)
    next_cursor: str | None = None


class UnknownUpdate(msgspec.Struct, kw_only=True):
    """An update this version does not model (or could not decode); ignored."""

    kind: str
    raw: Any


class SessionNotification(_Wire, kw_only=True, gc=False):
    session_id: str | None = None
    update: KnownUpdate


class UpdateNotification(msgspec.Struct, kw_only=True, gc=False):
    """A whole ``session/update`` JSON-RPC line, decoded in one pass (the hot path).

    ``method`` must be ``session/update``: any other notification fails this
    decoder and takes the generic path."""

    method: Literal["session/update"]
    params: SessionNotification


#: What identifies a ``session/update`` line cheaply before decoding it.
UPDATE_MARKER = b'"session/update"'
update_line_decoder = msgspec.json.Decoder(UpdateNotification)


class _LooseNotification(_Wire, kw_only=True):
    session_id: str | None = None
    update: Any = None


Update = KnownUpdate | UnknownUpdate


class PermissionOptionWire(_Wire, kw_only=True):
    option_id: str
    name: str = ""
    kind: str = ""


class PermissionToolCall(_Wire, kw_only=True):
    tool_call_id: str = ""
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    content: list[ToolContent] | None = None
    raw_input: Any = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class RequestPermissionParams(_Wire, kw_only=True):
    session_id: str | None = None
    tool_call: PermissionToolCall = msgspec.field(default_factory=PermissionToolCall)
    options: list[PermissionOptionWire] = msgspec.field(default_factory=list)


# ---------------------------------------------------------------------------
# decoding helpers
# ---------------------------------------------------------------------------

_notification_decoder = msgspec.json.Decoder(SessionNotification)
_loose_decoder = msgspec.json.Decoder(_LooseNotification)


def decode_session_update(params: bytes) -> tuple[str | None, Update, bool]:
    """``session/update`` params -> (sessionId, update, repaired). Never raises.

    ``repaired`` is true when the params held bytes that are not UTF-8: they
    are decoded with U+FFFD in their place (and the caller warns), so an
    agent's one bad byte never drops the text around it (core's
    :func:`~agy_host.engine.utf8.repair_utf8`, which stream-json uses too)."""
    try:
        note = _notification_decoder.decode(params)
        return note.session_id, note.update, False
    except (msgspec.DecodeError, RecursionError):
        pass
    fixed = repair_utf8(params)
    repaired = fixed is not None
    if fixed is not None:
        params = fixed
        try:
            note = _notification_decoder.decode(params)
            return note.session_id, note.update, True
        except (msgspec.DecodeError, RecursionError):
            pass
    try:
        loose = _loose_decoder.decode(params)
    except (msgspec.DecodeError, RecursionError):
        return None, UnknownUpdate(kind="<garbage>", raw=None), repaired
    raw = loose.update
    kind = raw.get("sessionUpdate") if isinstance(raw, dict) else None
    return loose.session_id, UnknownUpdate(kind=str(kind) if kind else "<missing>", raw=raw), repaired


def convert(raw: Any, typ: type[Any]) -> Any:
    """``msgspec.convert`` from already-decoded builtins (responses)."""
    return msgspec.convert(raw, typ, strict=False)


__all__ = [
    "PROTOCOL_VERSION",
    "AgentCapabilities",
    "AgentMessageChunk",
    "AgentThoughtChunk",
    "AuthMethod",
    "AvailableCommandsUpdate",
    "ConfigOption",
    "ConfigOptionUpdate",
    "Content",
    "CurrentModeUpdate",
    "Implementation",
    "InitializeResult",
    "KnownUpdate",
    "Location",
    "Plan",
    "PromptCapabilities",
    "PromptResult",
    "PromptUsage",
    "RequestPermissionParams",
    "SessionInfoUpdate",
    "SessionNotification",
    "SessionSetup",
    "SetConfigOptionResult",
    "ToolCall",
    "ToolCallUpdate",
    "ToolContent",
    "UnknownUpdate",
    "Update",
    "UsageUpdate",
    "UserMessageChunk",
    "convert",
    "decode_session_update",
]
