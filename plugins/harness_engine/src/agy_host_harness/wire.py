"""The harness's conversation frames (protobuf-JSON text frames) as msgspec
Structs.

Names are lowerCamelCase on the wire (``rename="camel"``), int64 values
arrive as strings (decoded with ``strict=False``), enums by name. Unknown
fields are ignored, an unknown event kind decodes to an :class:`OutputEvent`
with none of the known fields set, and an unknown step action leaves a step
with no known action: the mapping shows it as a generic tool card. Nothing
here raises on a shape the harness may add later; a frame that is not JSON
at all is a :class:`msgspec.DecodeError` the reader reports and skips.
"""

from __future__ import annotations

from typing import Any

import msgspec


class _W(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    pass


class Usage(_W):
    prompt_token_count: int = 0
    cached_content_token_count: int = 0
    candidates_token_count: int = 0
    thoughts_token_count: int = 0
    total_token_count: int = 0


class TrajectoryUsage(_W):
    trajectory_id: str = ""
    usage: Usage | None = None


class UsageUpdate(_W):
    agents: list[TrajectoryUsage] = msgspec.field(default_factory=list)
    total: Usage | None = None


class ToolCall(_W):
    id: str = ""
    name: str = ""
    arguments_json: str = ""
    trajectory_id: str = ""


class ToolResponse(_W):
    id: str = ""
    response_json: str = ""
    error_message: str = ""


class ActionCustomTool(_W):
    tool_call: ToolCall | None = None
    tool_response: ToolResponse | None = None


class ActionError(_W):
    error_message: str = ""
    http_code: int = 0


class ActionRunCommand(_W):
    command_line: str = ""
    working_dir: str = ""
    exit_code: int | None = None
    combined_output: str = ""


class DiffLine(_W):
    text: str = ""
    action: str = ""


class DiffBlock(_W):
    start_line: int = 0
    end_line: int = 0
    lines: list[DiffLine] = msgspec.field(default_factory=list)


class ActionEditFile(_W):
    file_path: str = ""
    diff_block: list[DiffBlock] = msgspec.field(default_factory=list)


class ActionCreateFile(_W):
    file_path: str = ""
    contents: str = ""


class ActionViewFile(_W):
    file_path: str = ""
    start_line: int = 0
    end_line: int = 0


class ActionListDirectory(_W):
    directory_path: str = ""
    results: list[dict[str, Any]] = msgspec.field(default_factory=list)


class ActionFindFile(_W):
    directory_path: str = ""
    query: str = ""
    output: str = ""


class ActionSearchDirectory(_W):
    directory_path: str = ""
    query: str = ""
    num_results: int = 0


class ActionMcpTool(_W):
    server_name: str = ""
    tool_name: str = ""
    arguments_json: str = ""


class ActionSearchWeb(_W):
    query: str = ""
    domain: str = ""
    summary: str = ""


class ActionReadUrlContent(_W):
    url: str = ""
    title: str = ""
    summary: str = ""


class ActionGenerateImage(_W):
    prompt: str = ""
    output_path: str = ""


class StepUpdate(_W):
    cascade_id: str = ""
    trajectory_id: str = ""
    parent_trajectory_id: str = ""
    step_index: int = 0
    state: str = ""
    source: str = ""
    target: str = ""
    error_message: str = ""
    text_delta: str = ""
    text: str = ""
    thinking_delta: str = ""
    error: ActionError | None = None
    list_directory: ActionListDirectory | None = None
    find_file: ActionFindFile | None = None
    search_directory: ActionSearchDirectory | None = None
    view_file: ActionViewFile | None = None
    create_file: ActionCreateFile | None = None
    edit_file: ActionEditFile | None = None
    run_command: ActionRunCommand | None = None
    mcp_tool: ActionMcpTool | None = None
    custom_tool: ActionCustomTool | None = None
    search_web: ActionSearchWeb | None = None
    read_url_content: ActionReadUrlContent | None = None
    generate_image: ActionGenerateImage | None = None
    invoke_subagent: dict[str, Any] | None = None
    compaction: dict[str, Any] | None = None
    finish: dict[str, Any] | None = None
    skill_lookup: dict[str, Any] | None = None
    run_workflow: dict[str, Any] | None = None
    questions_request: dict[str, Any] | None = None
    tool_confirmation_request: dict[str, Any] | None = None


class TrajectoryState(_W):
    trajectory_id: str = ""
    parent_trajectory_id: str = ""
    depth: int = 0
    state: str = ""
    error: str = ""
    error_code: str = ""
    stop_reason: str = ""


class PreToolArgs(_W):
    tool_name: str = ""
    arguments_json: str = ""
    server_name: str = ""
    call_id: str = ""
    trajectory_id: str = ""
    step_index: int = 0


class PolicyDecisionRequest(_W):
    request_id: str = ""
    rule_id: str = ""
    tool_args: PreToolArgs | None = None
    reason: str = ""


class CallHookRequest(_W):
    request_id: str = ""
    name: str = ""
    type: str = ""
    #: The step about to run (``LIFECYCLE_HOOK_PRE_TOOL``).
    pre_tool_args: PreToolArgs | None = None


class InitializeResponse(_W):
    cascade_id: str = ""
    history: list[StepUpdate] = msgspec.field(default_factory=list)
    cumulative_usage: Usage | None = None


class OutputEvent(_W):
    seq_num: int = 0
    step_update: StepUpdate | None = None
    trajectory_state_update: TrajectoryState | None = None
    tool_call: ToolCall | None = None
    initialize_conversation_response: InitializeResponse | None = None
    call_hook_request: CallHookRequest | None = None
    session_end_response: bool | None = None
    policy_decision_request: PolicyDecisionRequest | None = None
    usage_update: UsageUpdate | None = None


_decoder = msgspec.json.Decoder(OutputEvent, strict=False)
_encoder = msgspec.json.Encoder()

#: Trajectory states (the enum names as the harness sends them).
IDLE = "STATE_FULLY_IDLE"
CANCELLED = "STATE_CANCELLED"
STEP_DONE = "STATE_DONE"
STEP_ERROR = "STATE_ERROR"


def decode(frame: str | bytes) -> OutputEvent:
    """One frame; :class:`msgspec.DecodeError` (or ``ValidationError``) when it
    is not a JSON object of the expected shape."""
    return _decoder.decode(frame)


def decode_or_reason(frame: str | bytes) -> tuple[OutputEvent | None, str]:
    """``(event, "")``, or ``(None, why)`` for a frame that is not one: not
    JSON, the wrong shape, or nested too deep to decode (msgspec raises
    ``RecursionError`` there, which is garbage like any other, never a crash)."""
    try:
        return _decoder.decode(frame), ""
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        return None, str(exc)
    except RecursionError:
        return None, "nested too deep"


def encode(message: dict[str, Any]) -> str:
    return _encoder.encode(message).decode()


def plain(name: str, prefix: str) -> str:
    """``STATE_FULLY_IDLE`` -> ``FULLY_IDLE`` for messages and doctor."""
    return name[len(prefix) :] if name.startswith(prefix) else name


__all__ = [
    "CANCELLED",
    "IDLE",
    "STEP_DONE",
    "STEP_ERROR",
    "InitializeResponse",
    "OutputEvent",
    "PolicyDecisionRequest",
    "StepUpdate",
    "ToolCall",
    "TrajectoryState",
    "Usage",
    "UsageUpdate",
    "decode",
    "decode_or_reason",
    "encode",
    "plain",
]
