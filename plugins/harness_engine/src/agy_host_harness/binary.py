"""Where the ``localharness`` binary comes from, in this order:

1. ``$ANTIGRAVITY_HARNESS_PATH`` (the variable Google's SDK reads too);
2. config ``[harness] bin``;
3. an installed ``google-antigravity`` distribution's own file (found from its
   file list; nothing of the SDK is imported);
4. agy-host's managed install (``agy-host harness install``), under the
   user's data dir.

A source that names a file which is missing or not executable is an error
naming that source, never a silent fall-through to the next one: a user who
set a path means that binary.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import msgspec

from agy_host_harness import pin

ENV_VAR = "ANTIGRAVITY_HARNESS_PATH"
INSTALL_HINT = (
    "install it with `agy-host harness install` (fetches the pinned google-antigravity wheel and keeps only "
    "the binary), or point ANTIGRAVITY_HARNESS_PATH or [harness] bin at a localharness binary"
)


class BinaryChoice(msgspec.Struct, kw_only=True):
    #: The path to run ("" when nothing was found).
    path: str
    #: ``ANTIGRAVITY_HARNESS_PATH``, ``config``, ``google-antigravity``, ``managed`` or ``none``.
    source: str
    found: bool
    #: The wheel version behind it, when known.
    version: str = ""
    #: Why it cannot be used (missing, not executable), for errors and doctor.
    problem: str = ""


def data_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_DATA_HOME/agy-host/harness`` (``~/.local/share/...``)."""
    base = env.get("XDG_DATA_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "share")
    return Path(base) / "agy-host" / "harness"


def managed_binary(env: Mapping[str, str]) -> Path:
    return data_dir(env) / "current" / "localharness"


def _check(path: str, source: str, version: str = "") -> BinaryChoice:
    if not os.path.isfile(path):
        return BinaryChoice(path=path, source=source, found=False, version=version, problem=f"{path} does not exist")
    if not os.access(path, os.X_OK):
        return BinaryChoice(path=path, source=source, found=False, version=version, problem=f"{path} is not executable")
    return BinaryChoice(path=path, source=source, found=True, version=version)


def from_distribution() -> BinaryChoice | None:
    """The binary of an installed ``google-antigravity`` (file list only)."""
    from importlib import metadata

    try:
        dist = metadata.distribution(pin.DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
    for file in dist.files or []:
        if str(file).replace("\\", "/") == pin.BINARY_IN_WHEEL:
            return _check(str(dist.locate_file(file)), pin.DISTRIBUTION, dist.version)
    return None


def managed_version(env: Mapping[str, str]) -> str:
    current = data_dir(env) / "current"
    try:
        return os.path.basename(os.readlink(current))
    except OSError:
        return ""


def resolve(configured: str, env: Mapping[str, str]) -> BinaryChoice:
    value = env.get(ENV_VAR, "").strip()
    if value:
        return _check(os.path.expanduser(value), ENV_VAR)
    if configured.strip():
        return _check(os.path.expanduser(configured.strip()), "config")
    found = from_distribution()
    if found is not None:
        return found
    managed = managed_binary(env)
    if managed.exists():
        return _check(str(managed), "managed", managed_version(env))
    return BinaryChoice(path="", source="none", found=False, problem="no localharness binary found")


__all__ = ["ENV_VAR", "INSTALL_HINT", "BinaryChoice", "data_dir", "managed_binary", "resolve"]
