"""Configuration: one TOML file, read into msgspec Structs, environment on top.

Where: ``$AGY_HOST_CONFIG``, else ``$XDG_CONFIG_HOME/agy-host/config.toml``
(``~/.config/agy-host/config.toml``). Precedence, lowest first: defaults, the
file, environment variables, command-line flags (applied by the CLI).

Bad input never poisons the rest: each value is checked on its own, and a
value of the wrong type or out of range *narrows* to its default with a
visible warning naming the key. A file that is not TOML at all is moved aside
(kept, reported) and the defaults are used. Sections this module does not
know (``[stream_json]``, a third-party plugin's) are kept as raw tables in
:attr:`Config.plugins` for their owners to read. ``[bridge]`` is known here
because its round-trip timings belong to core (:mod:`agy_host.service.roundtrips`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import os
import tomllib
import typing
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec


class TurnConfig(msgspec.Struct, kw_only=True):
    #: Overall turn deadline (parked time does not count).
    timeout_minutes: float = 10.0
    #: Fail the turn when the agent says nothing for this long (0 disables).
    inactivity_minutes: float = 5.0
    #: Upper bound for a permission policy's answer; then the request is cancelled.
    permission_timeout_seconds: float = 300.0
    #: Stop a turn whose tokens (as the agent reports them) cross this (0: no limit).
    max_tokens: int = 0
    #: Stop a turn when the cost the agent reports crosses this (0: no limit).
    max_cost: float = 0.0
    #: A named session's agent stays alive this long after a turn, so the next
    #: command's turn runs on it warm (docs/sessions.md); 0 turns warm agents off.
    keep_alive_minutes: float = 5.0


class AcpProfile(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A named ACP agent: ``[acp.profiles.gemini] command = ["gemini", "--acp"]``."""

    command: list[str]
    env: dict[str, str] = msgspec.field(default_factory=dict)
    #: Set config option ids for model/mode the way agy does (``configId``).
    model: str = ""
    mode: str = ""


class AcpConfig(msgspec.Struct, kw_only=True):
    #: Path of ``agy_acp_server.par``; empty means: resolve (env, PATH, install dir).
    bin: str = ""
    #: Default agent: a profile name, ``agy`` (the default) or a command line.
    agent: str = ""
    #: After ``session/cancel``, how long to wait for ``stopReason: cancelled``
    #: before killing the agent and reloading the session next turn.
    cancel_grace_seconds: float = 2.0
    initialize_timeout_seconds: float = 30.0
    #: Deadline for session/new, load, set_config_option, close.
    session_timeout_seconds: float = 20.0
    #: SIGTERM to the process group, then SIGKILL after this grace.
    kill_grace_seconds: float = 0.5
    profiles: dict[str, AcpProfile] = msgspec.field(default_factory=dict)


class PermissionRule(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One ``[[permissions.rules]]`` entry of the ``rules`` policy.

    Each match field is a glob (or a list of globs, any may match) compared
    case-insensitively; a rule matches when every field it sets matches, so
    a rule with no match field matches every request.
    """

    action: Literal["allow", "deny", "ask"]
    #: The tool kind the agent reports (``read``, ``edit``, ``execute``, ...).
    kind: str | list[str] = msgspec.field(default_factory=list)
    #: The request's title (``Run client_create_file?``).
    title: str | list[str] = msgspec.field(default_factory=list)
    #: The tool name (``client_create_file``, an MCP tool's clean name).
    name: str | list[str] = msgspec.field(default_factory=list)


class AnswerRule(msgspec.Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """One ``[[answer]]`` rule (config or ``--answers FILE``): how a question
    is answered when nobody is there to ask.

    Match fields are globs (or lists of globs, any may match) compared
    case-insensitively; a rule matches when every field it sets matches.
    ``field`` names a form field the rule fills; a form is answered when
    every required field has a value. A question no rule answers fails
    closed (exit 5), it is never answered empty.
    """

    #: The answer: a form field's value, a choice's text, free text; for a
    #: URL question ``accept`` or ``decline`` may be given as ``action`` instead.
    value: Any = None
    action: Literal["accept", "decline"] = "accept"
    #: ``form``, ``url``, ``choice`` or ``text``.
    kind: str | list[str] = msgspec.field(default_factory=list)
    #: A form field's name.
    field: str | list[str] = msgspec.field(default_factory=list)
    #: The question's text.
    title: str | list[str] = msgspec.field(default_factory=list)
    #: The tool the question belongs to, when it belongs to one.
    tool: str | list[str] = msgspec.field(default_factory=list)


#: What a ``permissions.rules`` list that does not validate becomes: one rule
#: that denies everything. A typo in a deny rule must not silently allow what
#: it was written to stop.
DENY_ALL_RULES: tuple[PermissionRule, ...] = (PermissionRule(action="deny"),)


class PermissionsConfig(msgspec.Struct, kw_only=True):
    #: ``auto`` (allow by kind), ``deny``, ``ask``, ``rules``, or a plugin's policy; empty:
    #: nobody chose, the default (:func:`agy_host.service.unattended.chosen_policy`).
    policy: str = ""
    #: What ``ask`` does without a terminal: ``allow`` or ``deny`` by kind, or
    #: ``fail`` (``run`` refuses to start; a request that still comes is cancelled).
    ask_fallback: Literal["allow", "deny", "fail"] = "deny"
    #: The ``rules`` policy's rules; deny wins over ask, ask over allow.
    rules: list[PermissionRule] = msgspec.field(default_factory=list)
    #: What ``rules`` does when no rule matches.
    rules_default: Literal["allow", "deny", "ask"] = "ask"
    #: Tools allowed without the policy, and tools always denied (denied wins):
    #: globs over names, ``kind:`` globs over kinds (docs/permissions.md).
    allowed_tools: list[str] = msgspec.field(default_factory=list)
    disallowed_tools: list[str] = msgspec.field(default_factory=list)


class BridgeConfig(msgspec.Struct, kw_only=True):
    """``[bridge]``: the MCP bridge server and the tool round-trips."""

    #: Serve host tools to the agent (the bridge plugin reads this).
    enabled: bool = True
    #: Loopback port; 0 picks a free one per start.
    port: int = 0
    #: How long a parked host tool call may wait for its result.
    park_ttl_seconds: float = 480.0
    #: After this long the agent is told "still running" with a call id and
    #: polls; 0 never escalates (the agent's MCP client drops a call at ~180 s).
    escalate_after_seconds: float = 20.0
    #: The TTL of an escalated call.
    escalated_ttl_seconds: float = 1800.0
    #: Offer ``activate_skill`` for skills under ``$XDG_CONFIG_HOME/agy-host/skills``.
    skills: bool = True
    #: Projects whose ``<cwd>/.agy-host/skills`` are offered too (a cwd inside one counts).
    trusted_projects: list[str] = msgspec.field(default_factory=list)
    #: stream-json: register the bridge in the agy CLI's global MCP config.
    cli_registration: bool = True


class PromptConfig(msgspec.Struct, kw_only=True):
    """How agy-host assembles a turn's prompt (the user's side, not the engine's)."""

    #: The context digest: tell the agent what the host session did that it did
    #: not see (other engines' turns, host tool results). Off by default: it
    #: changes every turn and so defeats the agent's prompt cache.
    digest: bool = False
    #: Cap of the digest text; the newest items are kept. 0 disables the cap.
    digest_max_chars: int = 8000
    #: Add the ``AGENTS.md`` files from the working directory up to the
    #: repository root to the system prompt of a new agent conversation.
    agents_md: bool = True
    #: Largest file ``@path``, ``--file`` or ``--image`` attaches.
    max_attachment_bytes: int = 4 * 1024 * 1024


class TranscriptsConfig(msgspec.Struct, kw_only=True):
    """Per host session transcripts (``$XDG_STATE_HOME/agy-host/transcripts``)."""

    #: Keep each turn's prompt and answer; the digest and ``sessions show`` read them.
    enabled: bool = True


class Config(msgspec.Struct, kw_only=True):
    """The effective settings: ``config.toml``, then ``AGY_HOST_*`` variables, then the command line (``agy-host
    config show``)."""

    #: Engine name; empty means the default (the only one installed, or the spec's).
    engine: str = ""
    model: str = ""
    effort: str = ""
    mode: str = ""
    #: Let the agent run tools without asking (agy ``yolo`` /
    #: ``--dangerously-skip-permissions``). Off: the agent asks and the policy answers.
    skip_permissions: bool = False
    turn: TurnConfig = msgspec.field(default_factory=TurnConfig)
    acp: AcpConfig = msgspec.field(default_factory=AcpConfig)
    permissions: PermissionsConfig = msgspec.field(default_factory=PermissionsConfig)
    #: The host's system prompt, sent once at the start of every agent
    #: conversation (with ``AGENTS.md``), byte-identical on every engine.
    system_prompt: str = ""
    prompt: PromptConfig = msgspec.field(default_factory=PromptConfig)
    transcripts: TranscriptsConfig = msgspec.field(default_factory=TranscriptsConfig)
    bridge: BridgeConfig = msgspec.field(default_factory=BridgeConfig)
    #: ``[[answer]]``: answers for questions asked with nobody there (after ``--answers``).
    answer: list[AnswerRule] = msgspec.field(default_factory=list)
    #: Tables owned by plugins (``[stream_json]``, ``[bridge]``...), kept raw.
    plugins: dict[str, Any] = msgspec.field(default_factory=dict)

    def section(self, name: str) -> dict[str, Any]:
        """A plugin's raw table (``{}`` when absent)."""
        value = self.plugins.get(name, {})
        return value if isinstance(value, dict) else {}


#: Known top-level keys that are Structs or scalars on :class:`Config`.
_KNOWN = {f.name for f in msgspec.structs.fields(Config)} - {"plugins"}

#: Environment variable -> dotted config key. Env wins over the file.
ENV_OVERRIDES: dict[str, str] = {
    "AGY_HOST_ENGINE": "engine",
    "AGY_HOST_MODEL": "model",
    "AGY_HOST_EFFORT": "effort",
    "AGY_HOST_MODE": "mode",
    "AGY_HOST_SKIP_PERMISSIONS": "skip_permissions",
    "AGY_HOST_PERMISSIONS": "permissions.policy",
    "AGY_HOST_TIMEOUT_MINUTES": "turn.timeout_minutes",
    "AGY_HOST_INACTIVITY_MINUTES": "turn.inactivity_minutes",
    "AGY_HOST_KEEP_ALIVE_MINUTES": "turn.keep_alive_minutes",
    "AGY_ACP_BIN": "acp.bin",
    "AGY_HOST_AGENT": "acp.agent",
    "AGY_HOST_ASK_FALLBACK": "permissions.ask_fallback",
    "AGY_HOST_BRIDGE": "bridge.enabled",
    "AGY_HOST_SYSTEM_PROMPT": "system_prompt",
    "AGY_HOST_DIGEST": "prompt.digest",
}

_NON_NEGATIVE = {
    "turn.timeout_minutes",
    "turn.inactivity_minutes",
    "turn.permission_timeout_seconds",
    "turn.max_tokens",
    "turn.max_cost",
    "acp.cancel_grace_seconds",
    "acp.initialize_timeout_seconds",
    "acp.session_timeout_seconds",
    "acp.kill_grace_seconds",
    "bridge.port",
    "bridge.escalate_after_seconds",
    "prompt.digest_max_chars",
    "prompt.max_attachment_bytes",
}


#: Keys that must be > 0: a zero TTL would fail every host tool call at once.
_POSITIVE = {"bridge.park_ttl_seconds", "bridge.escalated_ttl_seconds"}

#: Keys whose value, when it does not validate, is replaced by a safe value
#: other than the default (see :data:`DENY_ALL_RULES`).
_ON_ERROR: dict[str, Callable[[], Any]] = {"permissions.rules": lambda: list(DENY_ALL_RULES)}


StructT = typing.TypeVar("StructT", bound=msgspec.Struct)


class ConfigError(Exception):
    """A config file cannot be written safely, or a value given to ``set`` is wrong."""


def config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("AGY_HOST_CONFIG"):
        return Path(env["AGY_HOST_CONFIG"]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "agy-host" / "config.toml"


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "agy-host"


# ---------------------------------------------------------------------------
# narrowing
# ---------------------------------------------------------------------------


def _check_number(dotted: str, value: Any) -> str | None:
    """Why a numeric value is unusable, or ``None``. NaN and infinity pass
    msgspec's float check but would poison a trio deadline."""
    if isinstance(value, float) and not math.isfinite(value):
        return "must be a finite number"
    if dotted in _NON_NEGATIVE and isinstance(value, (int, float)) and value < 0:
        return "must not be negative"
    if dotted in _POSITIVE and isinstance(value, (int, float)) and value <= 0:
        return "must be positive"
    bounds = _RANGES.get(dotted)
    if bounds is not None and isinstance(value, (int, float)) and not bounds[0] <= value <= bounds[1]:
        return f"must be between {bounds[0]} and {bounds[1]}"
    return None


#: Values that only make sense inside a range (a TCP port, 0 picking a free one).
_RANGES: dict[str, tuple[int, int]] = {"bridge.port": (0, 65535)}


@functools.cache
def _fields_by_key(struct_type: type[msgspec.Struct]) -> dict[str, msgspec.structs.FieldInfo]:
    """Resolved once per class: resolving a Struct's annotations costs about
    a millisecond, and built-ins without a bound config read it per turn."""
    return {f.encode_name: f for f in msgspec.structs.fields(struct_type)}


def _narrow(struct_type: type[msgspec.Struct], raw: Mapping[str, Any], prefix: str, warn: Callable[[str], None]) -> Any:
    """Build ``struct_type`` from ``raw`` field by field; bad values take the
    default with a warning, unknown keys are reported and ignored."""
    fields = _fields_by_key(struct_type)
    values: dict[str, Any] = {}
    for key, value in raw.items():
        dotted = f"{prefix}{key}"
        fld = fields.get(key)
        if fld is None:
            warn(f"config: unknown key {dotted!r} ignored")
            continue
        ftype = fld.type
        if isinstance(ftype, type) and issubclass(ftype, msgspec.Struct):
            if not isinstance(value, Mapping):
                warn(f"config: {dotted!r} must be a table; using defaults")
                continue
            values[fld.name] = _narrow(ftype, value, dotted + ".", warn)
            continue
        item_type = _struct_values(ftype)
        if item_type is not None and isinstance(value, Mapping):
            # A table of tables (``[acp.profiles.NAME]``): one bad entry must
            # not take the good ones with it.
            values[fld.name] = _narrow_items(item_type, value, dotted, warn)
            continue
        try:
            converted = msgspec.convert(value, ftype, strict=False)
        except msgspec.ValidationError as exc:
            fallback = _ON_ERROR.get(dotted)
            if fallback is not None:
                warn(f"config: bad value for {dotted!r} ({exc}); it is replaced by one rule that denies everything")
                values[fld.name] = fallback()
                continue
            warn(f"config: bad value for {dotted!r} ({exc}); using the default")
            continue
        problem = _check_number(dotted, converted)
        if problem is not None:
            warn(f"config: {dotted!r} {problem}; using the default")
            continue
        values[fld.name] = converted
    return struct_type(**values)


def narrow_section(
    struct_type: type[StructT], raw: Mapping[str, Any], section: str, warn: Callable[[str], None]
) -> StructT:
    """A plugin's table (:meth:`Config.section`) as ``struct_type``, by core's
    rules: a bad value takes its default with a warning naming the key, an
    unknown key is reported and ignored, NaN and infinity are refused."""
    narrowed: StructT = _narrow(struct_type, raw, f"{section}.", warn)
    return narrowed


def _struct_values(ftype: Any) -> type[msgspec.Struct] | None:
    """``X`` for a ``dict[str, X]`` field whose ``X`` is a Struct."""
    if typing.get_origin(ftype) is not dict:
        return None
    args = typing.get_args(ftype)
    if len(args) == 2 and isinstance(args[1], type) and issubclass(args[1], msgspec.Struct):
        return args[1]
    return None


def _narrow_items(
    item_type: type[msgspec.Struct], raw: Mapping[str, Any], dotted: str, warn: Callable[[str], None]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, item in raw.items():
        try:
            out[str(name)] = msgspec.convert(item, item_type, strict=False)
        except msgspec.ValidationError as exc:
            warn(f"config: bad value for {dotted}.{name!s} ({exc}); ignored")
    return out


def narrow(raw: Mapping[str, Any], warn: Callable[[str], None]) -> Config:
    """A :class:`Config` from a raw TOML table (plugin tables kept raw)."""
    known = {k: v for k, v in raw.items() if k in _KNOWN}
    plugins = {k: v for k, v in raw.items() if k not in _KNOWN}
    if "plugins" in raw and isinstance(raw["plugins"], Mapping):
        plugins.pop("plugins")
        plugins.update(raw["plugins"])
    for key, value in plugins.items():
        if not isinstance(value, Mapping):
            # Plugins own tables; a bare top-level value is most likely a typo
            # of a known key. It is kept (never dropped) but reported.
            warn(f"config: unknown top-level key {key!r} (not a table); kept for plugins but unused by agy-host")
    cfg: Config = _narrow(Config, known, "", warn)
    cfg.plugins = dict(plugins)
    return cfg


def set_dotted(raw: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = raw
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def read_raw(path: Path, warn: Callable[[str], None]) -> dict[str, Any]:
    """The file's tables; ``{}`` when absent. An unparsable file is moved aside."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        warn(f"config: cannot read {path}: {exc}; using defaults")
        return {}
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
        from agy_host import fsutil  # here: the thin client reads the config on its hot path

        moved = fsutil.quarantine(path)
        warn(f"config: {path} is not valid TOML ({exc}); moved it to {moved} and using defaults")
        return {}


def load(
    env: Mapping[str, str] | None = None,
    warn: Callable[[str], None] | None = None,
    path: Path | None = None,
) -> Config:
    """Defaults, then the file, then environment overrides."""
    env = os.environ if env is None else env
    sink = warn or (lambda _m: None)
    raw = read_raw(path or config_path(env), sink)
    for var, dotted in ENV_OVERRIDES.items():
        if var not in env:
            continue
        try:
            value = coerce_value(dotted, env[var])
        except ConfigError as exc:
            # The file's value (or the default) stays; the warning names the
            # variable so the user knows which knob to fix.
            sink(f"config: ${var}={env[var]!r} ignored: {exc}")
            continue
        set_dotted(raw, dotted, value)
    return narrow(raw, sink)


def coerce_value(dotted: str, text: str) -> Any:
    """Parse a ``config set`` value by the key's declared type; raise
    :class:`ConfigError` for unknown keys and bad values."""
    struct_type: type[msgspec.Struct] = Config
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        fields = {f.name: f for f in msgspec.structs.fields(struct_type)}
        fld = fields.get(part)
        if fld is None or part == "plugins":
            if i == 0 and part not in _KNOWN:
                return _guess_scalar(text)  # a plugin's table: keep the user's type
            raise ConfigError(f"unknown config key {dotted!r}")
        if isinstance(fld.type, type) and issubclass(fld.type, msgspec.Struct):
            struct_type = fld.type
            continue
        if i != len(parts) - 1:
            raise ConfigError(f"unknown config key {dotted!r}")
        if fld.type is str:
            return text  # ``config set model 1.5`` means the string "1.5"
        try:
            value = msgspec.convert(_guess_scalar(text), fld.type, strict=False)
        except msgspec.ValidationError as exc:
            raise ConfigError(f"bad value for {dotted!r}: {exc}") from exc
        problem = _check_number(dotted, value)
        if problem is not None:
            raise ConfigError(f"{dotted!r} {problem}")
        return value
    raise ConfigError(f"{dotted!r} is a table; set one of its keys")


def _guess_scalar(text: str) -> Any:
    low = text.strip().lower()
    if low in {"true", "on", "yes"}:
        return True
    if low in {"false", "off", "no"}:
        return False
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


def to_toml(cfg: Config) -> str:
    """The effective config as TOML (for ``config show``)."""
    import tomli_w

    data = msgspec.to_builtins(cfg)
    plugins = data.pop("plugins", {}) if isinstance(data, dict) else {}
    if isinstance(data, dict):
        data.update(plugins)
    return tomli_w.dumps(data)


#: The config of the turn this task is running (set by the turn layer for the
#: length of a turn): what built-in plugins read, so a turn layer driven from
#: Python with its own config is seen by them as it is, and no hook reads the
#: file again at every turn.
_IN_USE: contextvars.ContextVar[Config | None] = contextvars.ContextVar("agy_host_config_in_use", default=None)


@contextlib.contextmanager
def using(config: Config) -> Iterator[None]:
    """Make ``config`` the one :func:`in_use` returns in this task, until the block ends."""
    token = _IN_USE.set(config)
    try:
        yield
    finally:
        _IN_USE.reset(token)


def in_use() -> Config | None:
    """The config of the turn running in this task, if any (see :func:`using`)."""
    return _IN_USE.get()


__all__ = [
    "set_dotted",
    "ENV_OVERRIDES",
    "AcpConfig",
    "AcpProfile",
    "BridgeConfig",
    "Config",
    "ConfigError",
    "DENY_ALL_RULES",
    "AnswerRule",
    "PermissionRule",
    "PermissionsConfig",
    "PromptConfig",
    "TranscriptsConfig",
    "TurnConfig",
    "coerce_value",
    "config_path",
    "in_use",
    "load",
    "narrow",
    "narrow_section",
    "state_dir",
    "to_toml",
    "using",
]
