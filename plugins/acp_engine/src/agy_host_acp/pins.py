"""The SHA-256 pin table: which archive bytes agy-host accepts for a build.

The registry publishes URLs, not checksums, and moves hourly; the pins are what
make ``agy-host acp install`` reproducible and tamper-evident. The table ships
as data with the plugin (``pins.toml``, whose header says where every pin came
from). A user file given by ``--pins`` or ``AGY_ACP_PINS`` is merged over it
per build and platform, so a new build can be pinned without waiting for a
release of agy-host, and its ``default`` (when set) replaces ours.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec

PINS_ENV = "AGY_ACP_PINS"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class PinError(Exception):
    """The pin table (ours or the user's) cannot be used; the message says why."""


class ArchivePin(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One platform's archive of one build."""

    sha256: str
    url: str = ""
    #: Archive size in bytes when known: a truncated download is named as such.
    bytes: int = 0
    #: The server binary inside the archive.
    binary: str = ""
    #: Where the pin came from (shown by ``acp status``).
    source: str = ""


class BuildPins(msgspec.Struct, kw_only=True, omit_defaults=True):
    #: The registry's ``version`` for this build ("1.1.1", "1.0.0" for RC01).
    registry_version: str = ""
    #: What the server reports as ``agentInfo.version``.
    agent_version: str = ""
    archives: dict[str, ArchivePin] = msgspec.field(default_factory=dict)


class PinTable(msgspec.Struct, kw_only=True):
    default: str = ""
    builds: dict[str, BuildPins] = msgspec.field(default_factory=dict)
    #: The files the table was read from, in merge order.
    sources: list[str] = msgspec.field(default_factory=list)

    def canonical(self, name: str) -> str | None:
        """The build key for ``name``: the key itself, or a build whose
        registry or agent version is ``name`` (``1.1.1`` -> ``agy_acp_server_1.1.1``)."""
        if name in self.builds:
            return name
        for key, build in self.builds.items():
            if name in (build.registry_version, build.agent_version):
                return key
        return None

    def lookup(self, build: str, platform: str) -> ArchivePin | None:
        key = self.canonical(build)
        if key is None:
            return None
        return self.builds[key].archives.get(platform)


def valid_sha256(text: str) -> bool:
    return bool(_SHA256.match(text))


def _parse(raw: Mapping[str, Any], origin: str) -> PinTable:
    try:
        table = msgspec.convert(dict(raw), PinTable)
    except msgspec.ValidationError as exc:
        raise PinError(f"pin table {origin}: {exc}") from exc
    for build, pins in table.builds.items():
        for platform, pin in pins.archives.items():
            pin.sha256 = pin.sha256.strip().lower()
            if not valid_sha256(pin.sha256):
                raise PinError(f"pin table {origin}: builds.{build}.archives.{platform}.sha256 is not 64 hex digits")
    return table


def shipped() -> PinTable:
    """The table that ships with the plugin."""
    text = resources.files("agy_host_acp").joinpath("pins.toml").read_text(encoding="utf-8")
    table = _parse(tomllib.loads(text), "pins.toml (shipped)")
    table.sources = ["pins.toml (shipped with agy-host-acp)"]
    return table


def read_file(path: Path) -> PinTable:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise PinError(f"pin file {path} does not exist") from exc
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PinError(f"pin file {path} cannot be read: {exc}") from exc
    return _parse(raw, str(path))


def merge(base: PinTable, extra: PinTable) -> PinTable:
    """``extra`` over ``base``: per build, per platform; versions only when set."""
    builds = {key: msgspec.structs.replace(b, archives=dict(b.archives)) for key, b in base.builds.items()}
    for key, build in extra.builds.items():
        mine = builds.get(key)
        if mine is None:
            builds[key] = build
            continue
        mine.archives.update(build.archives)
        mine.registry_version = build.registry_version or mine.registry_version
        mine.agent_version = build.agent_version or mine.agent_version
    return PinTable(default=extra.default or base.default, builds=builds, sources=base.sources + extra.sources)


def load(override: str | None, env: Mapping[str, str]) -> PinTable:
    """The shipped table, with ``override`` (else ``$AGY_ACP_PINS``) merged over it."""
    table = shipped()
    extra = override or env.get(PINS_ENV) or ""
    if extra:
        path = Path(extra).expanduser()
        user = read_file(path)
        user.sources = [str(path)]
        table = merge(table, user)
    return table


__all__ = ["PINS_ENV", "ArchivePin", "BuildPins", "PinError", "PinTable", "load", "merge", "shipped", "valid_sha256"]
