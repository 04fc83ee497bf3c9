"""The steps of a fake ACP agent's prompt: what it sends, in order.

Steps are written as one-key objects, ``{"chunk": "HE"}``, ``{"sleep": 0.02}``,
so scenario files stay short; :func:`normalize_step` turns them into the
tagged form (``{"kind": "chunk", "text": "HE"}``) that msgspec validates into
the :data:`Step` union, so a typo fails at startup with a path to the bad
key instead of misbehaving mid-test. The scenario that holds them is in
:mod:`agy_host.testing.acp.scenario`.
"""

from __future__ import annotations

from typing import Any

import msgspec

ALLOW_DENY_OPTIONS: list[dict[str, Any]] = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "deny", "name": "Deny", "kind": "reject_once"},
]


class ScenarioError(ValueError):
    """A scenario cannot be loaded; the message names the file and the bad key."""


class _Step(msgspec.Struct, tag_field="kind", forbid_unknown_fields=True, kw_only=True):
    pass


class Chunk(_Step, tag="chunk"):
    text: str
    message_id: str | None = None


class Thought(_Step, tag="thought"):
    text: str


class Sleep(_Step, tag="sleep"):
    seconds: float


class Update(_Step, tag="update"):
    """Any ``session/update`` payload, passed through untouched (``<session>`` substituted)."""

    update: dict[str, Any]


class Notify(_Step, tag="notify"):
    method: str
    params: Any = None


class Request(_Step, tag="request"):
    """A server-to-client request; the prompt waits for the answer.

    ``branches`` maps an answer to more steps: an ``optionId``, an option
    ``kind`` (``allow_once``), ``allow`` / ``reject`` (kind prefix),
    ``cancelled``, ``error``, ``result`` (any non-error answer), or ``*``.
    """

    method: str
    params: dict[str, Any] = {}
    branches: dict[str, list[Step]] = {}
    #: Seconds after which the agent withdraws the request (``$/cancel_request``)
    #: if it is still unanswered, and goes on waiting for the client's answer.
    withdraw_after: float | None = None


class PromptUsage(_Step, tag="prompt_usage"):
    usage: dict[str, Any]


class PromptMeta(_Step, tag="prompt_meta"):
    meta: dict[str, Any]


class Stop(_Step, tag="stop"):
    reason: str = "end_turn"


class Error(_Step, tag="error"):
    code: int = -32603
    message: str = "Internal error"
    data: Any = None


class Crash(_Step, tag="crash"):
    code: int = 1
    stderr: str = ""


class Hang(_Step, tag="hang"):
    pass


class RawStdout(_Step, tag="raw_stdout"):
    text: str


class Stderr(_Step, tag="stderr"):
    text: str = ""
    flood_bytes: int = 0


class Flood(_Step, tag="flood"):
    #: ``None``: the scenario's ``flood_count`` / ``flood_text``.
    count: int | None = None
    text: str | None = None


class Echo(_Step, tag="echo"):
    prefix: str = ""
    #: Also echo the text of ``resource`` blocks (the context digest).
    resources: bool = False


class McpCall(_Step, tag="mcp_call"):
    """Call ``tool`` on an MCP server from ``mcpServers`` over HTTP, the way an
    agent does, and stream the result back as one ``agent_message_chunk``
    (``prefix`` + text, or ``error_prefix`` + text for an error result).
    A "STILL RUNNING" answer is followed up with ``poll_tool`` until it is
    done (``poll``); ``timeout`` is the agent's own MCP client deadline."""

    tool: str
    arguments: dict[str, Any] = {}
    #: ``mcpServers`` entry name; ``None``: the first HTTP server.
    server: str | None = None
    list_tools: bool = True
    #: Sent in ``initialize`` and as ``MCP-Protocol-Version`` after it (agy sends newer dates).
    protocol_version: str = "2026-07-28"
    #: Seconds the agent waits for one ``tools/call`` answer, then hangs up.
    timeout: float = 30.0
    poll: bool = True
    poll_tool: str = "bridge_poll_result"
    poll_interval: float = 0.2
    max_polls: int = 300
    prefix: str = "tool result: "
    error_prefix: str = "tool error: "


class Repeat(_Step, tag="repeat"):
    steps: list[Step]
    #: ``None`` repeats until the prompt is cancelled or the process dies.
    times: int | None = None


Step = (
    Chunk
    | Thought
    | Sleep
    | Update
    | Notify
    | Request
    | PromptUsage
    | PromptMeta
    | Stop
    | Error
    | Crash
    | Hang
    | RawStdout
    | Stderr
    | Flood
    | Echo
    | McpCall
    | Repeat
)


def _as(kind: str, field: str, value: Any) -> dict[str, Any]:
    """``{"chunk": "HE"}`` -> ``{"kind": "chunk", "text": "HE"}``; a dict value keeps its fields."""
    if isinstance(value, dict):
        return {"kind": kind, **value}
    return {"kind": kind, field: value}


def _update(session_update: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ScenarioError(f"step {session_update!r} takes an object (the raw update fields), got {value!r}")
    return {"kind": "update", "update": {"sessionUpdate": session_update, **value}}


def _permission(value: Any) -> dict[str, Any]:
    spec: dict[str, Any] = dict(value) if isinstance(value, dict) else {}
    unknown = set(spec) - {"tool_call", "options", "branches"}
    if unknown:
        raise ScenarioError(f"permission step: unknown keys {sorted(unknown)} (known: tool_call, options, branches)")
    tool_call = spec.get(
        "tool_call",
        {"toolCallId": "fake-tool-1", "title": "Run fake_tool?", "kind": "edit", "status": "pending"},
    )
    return {
        "kind": "request",
        "method": "session/request_permission",
        "params": {
            "sessionId": "<session>",
            "toolCall": tool_call,
            "options": spec.get("options", ALLOW_DENY_OPTIONS),
        },
        "branches": spec.get("branches", {}),
    }


def normalize_step(raw: Any) -> dict[str, Any]:
    """One step in its tagged form; raises :class:`ScenarioError` for an unknown kind."""
    if isinstance(raw, dict) and "kind" in raw:
        step = dict(raw)
    else:
        if not isinstance(raw, dict) or len(raw) != 1:
            raise ScenarioError(f"a step is a one-key object such as {{'chunk': 'hi'}}, got {raw!r}")
        ((key, value),) = raw.items()
        maker = _SHORTHANDS.get(key)
        if maker is None:
            raise ScenarioError(f"unknown step {key!r} (known: {', '.join(sorted(_SHORTHANDS))})")
        step = maker(value)
    if step.get("kind") == "request" and isinstance(step.get("branches"), dict):
        step["branches"] = {k: normalize_steps(v) for k, v in step["branches"].items()}
    if step.get("kind") == "repeat":
        step["steps"] = normalize_steps(step.get("steps", []))
    return step


def normalize_steps(raw: Any) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        raise ScenarioError(f"steps must be a list, got {raw!r}")
    return [normalize_step(s) for s in raw]


_SHORTHANDS: dict[str, Any] = {
    "chunk": lambda v: _as("chunk", "text", v),
    "thought": lambda v: _as("thought", "text", v),
    "sleep": lambda v: _as("sleep", "seconds", v),
    "update": lambda v: {"kind": "update", "update": v},
    "tool_call": lambda v: _update("tool_call", v),
    "tool_call_update": lambda v: _update("tool_call_update", v),
    "usage": lambda v: _update("usage_update", v),
    "plan": lambda v: _update("plan", {"entries": v} if isinstance(v, list) else v),
    "commands": lambda v: _update("available_commands_update", {"availableCommands": v} if isinstance(v, list) else v),
    "notify": lambda v: _as("notify", "method", v),
    "permission": _permission,
    "request": lambda v: _as("request", "method", v),
    "prompt_usage": lambda v: {"kind": "prompt_usage", "usage": v},
    "prompt_meta": lambda v: {"kind": "prompt_meta", "meta": v},
    "stop": lambda v: _as("stop", "reason", v),
    "error": lambda v: _as("error", "message", v),
    "crash": lambda v: _as("crash", "code", v),
    "hang": lambda v: {"kind": "hang"},
    "raw_stdout": lambda v: _as("raw_stdout", "text", v),
    "stderr": lambda v: _as("stderr", "text", v),
    "stderr_flood_bytes": lambda v: {"kind": "stderr", "flood_bytes": v},
    "flood": lambda v: {"kind": "flood"} if v is True else _as("flood", "count", v),
    "echo": lambda v: {"kind": "echo"} if v is True else _as("echo", "prefix", v),
    "repeat": lambda v: _as("repeat", "steps", v),
    "mcp_call": lambda v: _as("mcp_call", "tool", v),
}

STEP_KINDS = tuple(sorted(_SHORTHANDS))


__all__ = [
    "ALLOW_DENY_OPTIONS",
    "STEP_KINDS",
    "Chunk",
    "Crash",
    "Echo",
    "Error",
    "Flood",
    "Hang",
    "McpCall",
    "Notify",
    "PromptMeta",
    "PromptUsage",
    "RawStdout",
    "Repeat",
    "Request",
    "ScenarioError",
    "Sleep",
    "Step",
    "Stderr",
    "Stop",
    "Thought",
    "Update",
    "normalize_step",
    "normalize_steps",
]
