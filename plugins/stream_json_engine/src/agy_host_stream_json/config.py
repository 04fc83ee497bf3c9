"""The ``[stream_json]`` config table and where the ``agy`` binary comes from.

Core keeps plugin tables raw (:meth:`agy_host.config.Config.section`), so this
module narrows the table itself, with the same rule as core: a bad value
falls back to its default with a warning naming the key, an unknown key is
reported and ignored, and nothing else is affected.

The model, effort, mode, permissions and timers are core fields (``model``,
``effort``, ``mode``, ``skip_permissions``, ``turn.*``) and reach the engine
through each :class:`~agy_host.engine.driver.TurnRequest`; only what is specific to
driving the CLI lives here.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

SECTION = "stream_json"
DEFAULT_BIN = "agy"


class StreamJsonConfig(msgspec.Struct, kw_only=True):
    #: The agy binary; ``$AGY_BIN`` wins; empty means ``agy`` on ``PATH``.
    bin: str = ""
    #: Extra arguments appended to every spawn (after the engine's own flags).
    extra_args: list[str] = msgspec.field(default_factory=list)
    #: agy's ``--print-timeout`` is the turn deadline plus this margin. agy's
    #: clock keeps running while a turn is parked on a host tool, ours does
    #: not, so the margin must cover a slow human answer.
    print_timeout_margin_seconds: float = 900.0
    #: SIGTERM to the process group, then SIGKILL after this grace.
    kill_grace_seconds: float = 0.5
    #: After stdin is closed (shutdown, or a failed turn), how long agy gets to
    #: exit by itself and finish its stderr before it is killed.
    exit_grace_seconds: float = 2.0
    #: Watchdog of ``agy models`` (and ``agy --version`` in doctor).
    models_timeout_seconds: float = 8.0
    #: How long a discovered model catalog is used without asking agy again.
    models_cache_ttl_seconds: float = 300.0


_NUMBERS = {
    "print_timeout_margin_seconds",
    "kill_grace_seconds",
    "exit_grace_seconds",
    "models_timeout_seconds",
    "models_cache_ttl_seconds",
}


def narrow(raw: Mapping[str, Any], warn: Callable[[str], None]) -> StreamJsonConfig:
    """Build the config key by key; bad values take the default with a warning."""
    fields = {f.name: f for f in msgspec.structs.fields(StreamJsonConfig)}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        fld = fields.get(key)
        if fld is None:
            warn(f"config: unknown key '{SECTION}.{key}' ignored (known: {', '.join(sorted(fields))})")
            continue
        try:
            converted = msgspec.convert(value, fld.type, strict=False)
        except msgspec.ValidationError as exc:
            warn(f"config: bad value for '{SECTION}.{key}' ({exc}); using the default")
            continue
        if key in _NUMBERS and (not math.isfinite(converted) or converted < 0):
            warn(f"config: '{SECTION}.{key}' must be a finite, non-negative number; using the default")
            continue
        values[key] = converted
    return StreamJsonConfig(**values)


class BinaryChoice(msgspec.Struct, kw_only=True):
    """Which agy runs, and why (doctor shows it)."""

    #: What is spawned: the resolved path, or the raw value when not found.
    command: str
    #: ``AGY_BIN``, ``config`` or ``PATH``.
    source: str
    #: The configured value before resolution.
    value: str
    found: bool


def resolve_bin(cfg: StreamJsonConfig, env: Mapping[str, str]) -> BinaryChoice:
    """``$AGY_BIN`` > ``stream_json.bin`` > ``agy``; a bare name is looked up
    on the ``PATH`` the child will see."""
    if env.get("AGY_BIN", "").strip():
        value, source = env["AGY_BIN"].strip(), "AGY_BIN"
    elif cfg.bin.strip():
        value, source = cfg.bin.strip(), "config"
    else:
        value, source = DEFAULT_BIN, "PATH"
    value = os.path.expanduser(value)
    if os.sep in value:
        found = os.path.isfile(value) and os.access(value, os.X_OK)
        return BinaryChoice(command=value, source=source, value=value, found=found)
    path = shutil.which(value, path=env.get("PATH", os.defpath))
    return BinaryChoice(command=path or value, source=source, value=value, found=path is not None)


__all__ = ["DEFAULT_BIN", "SECTION", "BinaryChoice", "StreamJsonConfig", "narrow", "resolve_bin"]
