"""The ACP registry's ``antigravity-acp`` entry, and this machine's platform key.

The registry (``agentclientprotocol/registry``) lists one archive per platform
under ``distribution.binary["<os>-<arch>"]``, for the build it currently
offers. The build stamp is taken from the archive's name,
``agy-acp-server-<build>-<os>-<arm64|x86_64>.zip`` (``<build>`` is ``1.3.0``
since 1.2.1, ``agy_acp_server_<ver>`` before).
"""

from __future__ import annotations

import http.client
import platform as _platform
import re
from collections.abc import Mapping
from urllib.parse import unquote, urlsplit

import msgspec
import trio

from agy_host_acp import netio

REGISTRY_URL = "https://raw.githubusercontent.com/agentclientprotocol/registry/main/antigravity-acp/agent.json"
REGISTRY_ENV = "AGY_ACP_REGISTRY_URL"
AGENT_ID = "antigravity-acp"
#: Spec: the registry fetch gets 15 s.
FETCH_TIMEOUT = 15.0
_MAX_ENTRY_BYTES = 1 << 20

_ARCHIVE = re.compile(
    r"^agy-acp-server-(?P<build>.+)-(?P<os>darwin|linux|windows)-(?P<arch>arm64|aarch64|x86_64)\.zip$"
)
_OS = {"linux": "linux", "darwin": "darwin", "windows": "windows"}
_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


class RegistryError(Exception):
    """The registry cannot be read or does not describe an installable build."""


class BinaryTarget(msgspec.Struct, kw_only=True):
    archive: str
    cmd: str = ""
    args: list[str] = msgspec.field(default_factory=list)


class Distribution(msgspec.Struct, kw_only=True):
    binary: dict[str, BinaryTarget] = msgspec.field(default_factory=dict)


class RegistryEntry(msgspec.Struct, kw_only=True):
    id: str
    version: str = ""
    name: str = ""
    distribution: Distribution = msgspec.field(default_factory=Distribution)


def platform_key(system: str | None = None, machine: str | None = None) -> str:
    """``linux-x86_64``, ``darwin-aarch64``... as the registry names platforms;
    raises :class:`RegistryError` for a platform no build exists for."""
    sysname = (system or _platform.system()).lower()
    mach = (machine or _platform.machine()).lower()
    os_key = _OS.get(sysname)
    arch_key = _ARCH.get(mach)
    if os_key is None or arch_key is None:
        raise RegistryError(
            f"unknown platform {sysname}-{mach}: Antigravity's ACP server is built for "
            "linux, darwin and windows on x86_64 and aarch64 only"
        )
    return f"{os_key}-{arch_key}"


def archive_name(url: str) -> str:
    return unquote(urlsplit(url).path.rsplit("/", 1)[-1])


def build_from_archive(name: str) -> str:
    """The build stamp in an archive name; :class:`RegistryError` if it is not one."""
    m = _ARCHIVE.match(name)
    if not m:
        raise RegistryError(f"unexpected archive name {name!r} (want agy-acp-server-<build>-<os>-<arch>.zip)")
    return m.group("build")


def registry_url(option: str | None, env: Mapping[str, str]) -> str:
    return option or env.get(REGISTRY_ENV) or REGISTRY_URL


def parse_entry(data: bytes, url: str) -> RegistryEntry:
    try:
        entry = msgspec.json.decode(data, type=RegistryEntry)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise RegistryError(f"the registry entry at {url} is not valid: {exc}") from exc
    if entry.id != AGENT_ID:
        raise RegistryError(f"the registry entry at {url} is for {entry.id!r}, not {AGENT_ID!r}")
    return entry


def _fetch_blocking(url: str, timeout: float) -> bytes:
    with netio.open_url(url, {"Accept": "application/json"}, timeout=timeout) as resp:
        data: bytes = resp.read(_MAX_ENTRY_BYTES + 1)
    if len(data) > _MAX_ENTRY_BYTES:
        raise RegistryError(f"the registry entry at {url} is larger than {_MAX_ENTRY_BYTES} bytes")
    return data


async def fetch(url: str, timeout: float = FETCH_TIMEOUT) -> RegistryEntry:
    """Read and parse the entry. urllib blocks, so it runs in a worker thread."""
    try:
        netio.check_url(url)
        data = await trio.to_thread.run_sync(_fetch_blocking, url, timeout)
    except netio.UrlRefused as exc:
        raise RegistryError(str(exc)) from exc
    except (OSError, ValueError, http.client.HTTPException) as exc:  # URLError, HTTPError, timeouts: OSError
        raise RegistryError(f"cannot read the registry at {url}: {netio.describe(exc)}") from exc
    return parse_entry(data, url)


__all__ = [
    "AGENT_ID",
    "REGISTRY_ENV",
    "REGISTRY_URL",
    "BinaryTarget",
    "RegistryEntry",
    "RegistryError",
    "archive_name",
    "build_from_archive",
    "fetch",
    "parse_entry",
    "platform_key",
    "registry_url",
]
