"""The fake ACP agent's script: a :class:`Scenario` and the steps of a prompt.

A scenario is a JSON or TOML object. Agent-level keys say how the agent
behaves on the protocol (handshake, auth, load, cancel, signals); ``prompts``
lists, for the 1st, 2nd, ... ``session/prompt``, the steps to run (the last
list repeats for every later prompt; ``prompt`` is shorthand for one list).
The full key list is in :mod:`agy_host.testing.acp.agent`'s docstring.

The steps themselves are in :mod:`agy_host.testing.acp.steps` (re-exported
here, where the agent and older tests import them from).

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

from agy_host.testing.acp.steps import (
    ALLOW_DENY_OPTIONS,
    STEP_KINDS,
    Chunk,
    Crash,
    Echo,
    Error,
    Flood,
    Hang,
    McpCall,
    Notify,
    PromptMeta,
    PromptUsage,
    RawStdout,
    Repeat,
    Request,
    ScenarioError,
    Sleep,
    Stderr,
    Step,
    Stop,
    Thought,
    Update,
    normalize_step,
    normalize_steps,
)

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
