"""The fake ACP agent's script: a :class:`Scenario` and the steps of a prompt.

A scenario is a JSON or TOML object. Agent-level keys say how the agent
behaves on the protocol (handshake, auth, load, cancel, signals); ``prompts``
lists, for the 1st, 2nd, ... ``session/prompt``, the steps to run (the last
list repeats for every later prompt; ``prompt`` is shorthand for one list).
The full key list is in :mod:`agy_host.testing.acp.agent`'s docstring.

Steps are written as one-key objects, ``{"chunk": "HE"}``, ``{"sleep": 0.02}``,
so scenario files stay short; :func:`normalize_step` turns them into the
tagged form (``{"kind": "chunk", "text": "HE"}``) that msgspec validates into
the :data:`Step` union, so a typo fails at startup with a path to the bad
key instead of misbehaving mid-test.

Precedence, lowest first: the scenario (``extends`` first, then the file or
built-in), ``AGY_FAKE_ACP_<KEY>`` environment variables, ``--set key=value``.
Values from env and ``--set`` are parsed as JSON when they parse, else taken
as strings, so ``--set cancel=unsupported`` and ``--set flood_count=5`` work.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec

ENV_PREFIX = "AGY_FAKE_ACP_"
#: A conversation no fake agent has: the fake ACP agent refuses to load or
#: resume it (-32000 "unknown session"), the fake agy CLI has no such file,
#: and the real harness never made it. Tests bind a session to it to play an
#: agent that forgot the conversation.
FORGOTTEN_CONVERSATION = "0badc0de0badc0de0badc0de0badc0de"
#: Env variables with a meaning of their own (not scenario keys).
ENV_RESERVED = frozenset({"AGY_FAKE_ACP_SCENARIO", "AGY_FAKE_ACP_LOG"})

DEFAULT_AUTH_MESSAGE = (
    "No authentication method selected. Either call the `authenticate` method (supports oauth-personal), "
    "or set `auth.type` in settings.json (~/.gemini/antigravity-acp/settings.json). "
    "With agy-host: run `agy-host acp-auth`."
)

ALLOW_DENY_OPTIONS: list[dict[str, Any]] = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "deny", "name": "Deny", "kind": "reject_once"},
]


class ScenarioError(ValueError):
    """A scenario cannot be loaded; the message names the file and the bad key."""


# ---------------------------------------------------------------------------
# steps
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# the scenario
# ---------------------------------------------------------------------------


def _default_models() -> dict[str, Any]:
    return {
        "availableModels": [
            {"modelId": "fake-model-high", "name": "Fake Model (High)", "description": "fake-model-high"},
            {"modelId": "fake-model-low", "name": "Fake Model (Low)", "description": "fake-model-low"},
        ],
        "currentModelId": "fake-model-high",
    }


def _default_modes() -> dict[str, Any]:
    return {
        "currentModeId": "default",
        "availableModes": [
            {"id": "default", "name": "Default", "description": "Default permission prompt flow"},
            {"id": "auto_edit", "name": "Auto Edit", "description": "Auto-approve file edit tools"},
            {"id": "yolo", "name": "YOLO", "description": "Auto-approve all tools"},
        ],
    }


def _default_config_options() -> list[dict[str, Any]]:
    models = _default_models()
    modes = _default_modes()
    return [
        {
            "id": "model",
            "name": "Model",
            "category": "model",
            "type": "select",
            "currentValue": models["currentModelId"],
            "options": [
                {"value": m["modelId"], "name": m["name"], "description": m["description"]}
                for m in models["availableModels"]
            ],
        },
        {
            "id": "mode",
            "name": "Session Mode",
            "category": "mode",
            "type": "select",
            "currentValue": modes["currentModeId"],
            "options": [
                {"value": m["id"], "name": m["name"], "description": m["description"]} for m in modes["availableModes"]
            ],
        },
    ]


def _default_prompts() -> list[list[Step]]:
    return [[Chunk(text="HE"), Sleep(seconds=0.02), Chunk(text="LLO")]]


class Scenario(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    #: Built-in scenario whose keys this one starts from (resolved while loading).
    extends: str | None = None
    description: str = ""
    agent_info: dict[str, Any] = msgspec.field(
        default_factory=lambda: {"name": "fake-acp", "title": "Fake ACP", "version": "fake-1"}
    )
    protocol_version: int = 1
    auth_methods: list[dict[str, Any]] = []
    prompt_capabilities: dict[str, Any] = msgspec.field(
        default_factory=lambda: {"image": True, "audio": False, "embeddedContext": True}
    )
    load_session: bool = True
    #: The agent's own commands, by name: a prompt whose *first* content
    #: block is text starting with ``/NAME`` plays these steps instead of the
    #: prompt's (as claude-agent-acp and codex-acp run theirs); a ``/NAME``
    #: anywhere else is plain text.
    slash_commands: dict[str, list[Step]] = {}
    #: Extra keys merged over ``agentCapabilities``.
    agent_capabilities: dict[str, Any] = {}
    listed_sessions: list[dict[str, Any]] = []
    #: A fixed id, or ``"generate"`` for a fresh UUID per ``session/new``.
    session_id: str = "fake-session-0001"
    initialize: Literal["ok", "hang", "exit", "garbage-first"] = "ok"
    #: Exit status for ``initialize: exit``.
    exit_code: int = 1
    auth_required: bool = False
    auth_message: str = DEFAULT_AUTH_MESSAGE
    authenticate: Literal["ok", "fails", "hang"] = "ok"
    #: When set, ``authenticate`` first prints agy's sign-in line with this URL on stdout.
    auth_url: str = ""
    #: ``logout``: ``none`` not offered (the request gets -32601); ``ok`` and
    #: ``fails`` advertise ``agentCapabilities.auth.logout``; ``ok`` answers
    #: ``{}`` and signs out (session/new then needs ``authenticate``),
    #: ``fails`` answers -32603.
    logout: Literal["none", "ok", "fails"] = "none"
    load: Literal["ok", "fails", "replay", "replay-after"] = "ok"
    #: ``load: replay-after``: how long after its answer the replay starts (the Gemini CLI: at once).
    replay_delay_ms: int = 0
    #: History replayed by ``load: replay``: ``{"user": text}`` / ``{"agent": text}`` / ``{"thought": text}``.
    load_history: list[dict[str, str]] = msgspec.field(
        default_factory=lambda: [{"user": "OLD USER"}, {"agent": "OLD REPLY FULL TEXT"}]
    )
    cancel: Literal["graceful", "unsupported", "ignore"] = "graceful"
    sigterm: Literal["exit", "ignore", "slow-death"] = "exit"
    #: > 0: on SIGTERM say so on stderr and exit this much later (implies ``sigterm: slow-death``).
    slow_death_ms: int = 0
    models: dict[str, Any] | None = msgspec.field(default_factory=_default_models)
    modes: dict[str, Any] | None = msgspec.field(default_factory=_default_modes)
    config_options: list[dict[str, Any]] | None = msgspec.field(default_factory=_default_config_options)
    stderr_lines: list[str] = []
    stdin_eof: Literal["exit", "ignore"] = "exit"
    #: Multiplies every ``sleep`` step, so tests can run slow scenarios fast.
    sleep_scale: float = 1.0
    flood_count: int = 1000
    flood_text: str = "x"
    #: First id of server-to-client requests (real agents start at 0).
    request_id_start: int = 0
    prompts: list[list[Step]] = msgspec.field(default_factory=_default_prompts)
    #: ``session/update`` payloads sent right after answering session/new,
    #: load or resume, in the same write (``<session>`` substituted).
    session_updates: list[dict[str, Any]] = []
    #: A file counting prompts across processes of this agent ("": per process).
    prompt_counter: str = ""

    def command_steps(self, prompt: Any) -> tuple[str, list[Step]] | None:
        """The command a prompt runs (its name and steps), when its first
        block is text starting with ``/NAME`` of one of :attr:`slash_commands`."""
        first = prompt[0] if isinstance(prompt, list) and prompt else None
        if not isinstance(first, dict) or first.get("type") != "text" or not isinstance(first.get("text"), str):
            return None
        text = first["text"]
        name = text[1:].split(maxsplit=1)[0] if text[:1] == "/" and text[1:2].strip() else ""
        return (name, self.slash_commands[name]) if name in self.slash_commands else None

    def steps_for(self, index: int) -> list[Step]:
        """Steps of the ``index``-th prompt (0-based); the last list repeats."""
        if not self.prompts:
            return []
        return self.prompts[min(index, len(self.prompts) - 1)]

    @property
    def slow_death(self) -> bool:
        return self.sigterm == "slow-death" or self.slow_death_ms > 0


# __struct_fields__ rather than msgspec.structs.fields(): the latter imports
# msgspec.inspect, a tenth of the fake agent's start-up time.
SCENARIO_KEYS: tuple[str, ...] = (*Scenario.__struct_fields__, "prompt")


def parse_value(text: str) -> Any:
    """A knob's value from env or ``--set``: JSON if it parses, else the string."""
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError:
        return text


def read_scenario_file(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"cannot read scenario {path}: {exc}") from exc
    try:
        if path.suffix.lower() == ".toml":
            import tomllib

            raw: Any = tomllib.loads(data.decode("utf-8"))
        else:
            raw = msgspec.json.decode(data)
    except (msgspec.DecodeError, ValueError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"scenario {path} does not parse: {exc}") from exc
    if not isinstance(raw, dict):
        raise ScenarioError(f"scenario {path} must hold an object, got {type(raw).__name__}")
    return raw


def _looks_like_path(spec: str) -> bool:
    return os.sep in spec or spec.endswith((".json", ".toml")) or Path(spec).is_file()


def merge_keys(raw: dict[str, Any], new: Mapping[str, Any]) -> None:
    """``raw.update(new)``, except that a newer ``prompt`` replaces an older
    ``prompts`` and the other way round."""
    if "prompt" in new:
        raw.pop("prompts", None)
    if "prompts" in new:
        raw.pop("prompt", None)
    raw.update(new)


def raw_scenario(spec: str | Mapping[str, Any] | None, *, _depth: int = 0) -> dict[str, Any]:
    """The scenario's keys with ``extends`` resolved (shallow: later keys win)."""
    from agy_host.testing.acp.scenarios import BUILTIN

    if _depth > 8:
        raise ScenarioError("scenario 'extends' chain is too deep (a loop?)")
    if spec is None:
        spec = "happy"
    if isinstance(spec, Mapping):
        raw = dict(spec)
    elif _looks_like_path(spec):
        raw = read_scenario_file(Path(spec))
    elif spec in BUILTIN:
        raw = dict(BUILTIN[spec])
    else:
        raise ScenarioError(
            f"unknown scenario {spec!r} (built-in: {', '.join(sorted(BUILTIN))}; or a .json/.toml path)"
        )
    base = raw.pop("extends", None)
    if base is not None:
        if not isinstance(base, str):
            raise ScenarioError(f"'extends' must name a scenario, got {base!r}")
        merged = raw_scenario(base, _depth=_depth + 1)
        merge_keys(merged, raw)
        raw = merged
    return raw


def env_overrides(env: Mapping[str, str], warn: Any = None) -> dict[str, Any]:
    """``AGY_FAKE_ACP_<KEY>`` variables as scenario keys; unknown names are warned about."""
    out: dict[str, Any] = {}
    for name, value in env.items():
        if not name.startswith(ENV_PREFIX) or name in ENV_RESERVED:
            continue
        key = name[len(ENV_PREFIX) :].lower()
        if key not in SCENARIO_KEYS:
            if warn is not None:
                warn(f"fake_acp_agent: ignoring unknown env {name} (not a scenario key)")
            continue
        out[key] = parse_value(value)
    return out


def build_scenario(raw: Mapping[str, Any]) -> Scenario:
    """Validate raw keys into a :class:`Scenario` (steps normalised first)."""
    data = dict(raw)
    data.pop("extends", None)
    if "prompt" in data and "prompts" in data:
        raise ScenarioError("give either 'prompt' (one step list) or 'prompts' (one list per prompt), not both")
    if "prompt" in data:
        data["prompts"] = [data.pop("prompt")]
    if "prompts" in data:
        prompts = data["prompts"]
        if not isinstance(prompts, list):
            raise ScenarioError(f"'prompts' must be a list of step lists, got {prompts!r}")
        data["prompts"] = [normalize_steps(p) for p in prompts]
    if isinstance(data.get("slash_commands"), dict):
        data["slash_commands"] = {k: normalize_steps(v) for k, v in data["slash_commands"].items()}
    try:
        return msgspec.convert(data, Scenario)
    except msgspec.ValidationError as exc:
        raise ScenarioError(f"bad scenario: {exc}") from exc


def load_scenario(
    spec: str | Mapping[str, Any] | None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    warn: Any = None,
) -> Scenario:
    """Resolve a scenario name/path/mapping, then env knobs, then overrides."""
    raw = raw_scenario(spec)
    if env is not None:
        merge_keys(raw, env_overrides(env, warn))
    if overrides:
        unknown = sorted(set(overrides) - set(SCENARIO_KEYS))
        if unknown:
            raise ScenarioError(f"unknown scenario key(s) {unknown} (known: {', '.join(SCENARIO_KEYS)})")
        merge_keys(raw, overrides)
    return build_scenario(raw)


__all__ = [
    "ALLOW_DENY_OPTIONS",
    "DEFAULT_AUTH_MESSAGE",
    "ENV_PREFIX",
    "SCENARIO_KEYS",
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
    "Scenario",
    "ScenarioError",
    "Sleep",
    "Step",
    "Stderr",
    "Stop",
    "Thought",
    "Update",
    "build_scenario",
    "env_overrides",
    "load_scenario",
    "merge_keys",
    "normalize_step",
    "normalize_steps",
    "parse_value",
    "raw_scenario",
]
