"""The install layout on disk, shared by ``acp install`` and ``acp status``.

::

    ~/.local/opt/agy-acp/                 install root (AGY_ACP_HOME, --root)
      <build>/agy_acp_server.par          one directory per build
      <build>/localharness_external
      <build>/zip.sha256                  "<sha256>  <archive name>\\n"
      <build>/install.json                where it came from, how it was verified
      current -> <build>                  relative symlink, switched atomically
      <archive>.part, <archive>.part.json a download in progress (resumable)
      .install.lock                       one install at a time

The engine (``profiles.py``) looks for ``$HOME/.local/opt/agy-acp/current``;
an install root elsewhere is found only through ``AGY_ACP_BIN`` or
``acp.bin``, and the commands say so.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

import msgspec

from agy_host_acp.profiles import AGY_BINARY, HARNESS

HOME_ENV = "AGY_ACP_HOME"
DEFAULT_SUBDIR = Path(".local/opt/agy-acp")
CURRENT = "current"
ZIP_SHA = "zip.sha256"
RECORD = "install.json"
LOCK = ".install.lock"
TEMP_PREFIXES = (".unpack-", ".old-", ".current-")


class InstallRecord(msgspec.Struct, kw_only=True, omit_defaults=True):
    build: str
    platform: str
    archive: str
    url: str
    sha256: str
    bytes: int = 0
    binary: str = AGY_BINARY
    #: ``pin`` (the pin table), ``sha256-option`` (--sha256), or ``none`` (--build latest, unverified).
    verified_by: str = "none"
    pin_source: str = ""
    installed_at: str = ""


class InstalledBuild(msgspec.Struct, kw_only=True):
    build: str
    path: str
    binary: str
    binary_ok: bool
    harness_ok: bool
    sha256: str = ""
    archive: str = ""
    current: bool = False
    record: InstallRecord | None = None


class LockBusy(Exception):
    """Another install holds the lock."""


def default_root(env: Mapping[str, str]) -> Path:
    """Where the engine looks: ``$HOME/.local/opt/agy-acp`` (``HOME`` from ``env``)."""
    home = env.get("HOME")
    return (Path(home) if home else Path.home()) / DEFAULT_SUBDIR


def install_root(option: str | None, env: Mapping[str, str]) -> Path:
    raw = option or env.get(HOME_ENV) or ""
    return Path(raw).expanduser() if raw else default_root(env)


def read_zip_sha(build_dir: Path) -> tuple[str, str] | None:
    try:
        text = (build_dir / ZIP_SHA).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    sha, _sep, name = text.strip().partition("  ")
    return (sha.lower(), name.strip()) if sha else None


def read_record(build_dir: Path) -> InstallRecord | None:
    try:
        return msgspec.json.decode((build_dir / RECORD).read_bytes(), type=InstallRecord)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def current_build(root: Path) -> str | None:
    link = root / CURRENT
    try:
        target = os.readlink(link)
    except OSError:
        return None
    return Path(target).name


def describe_build(root: Path, name: str, current: str | None = None) -> InstalledBuild:
    build_dir = root / name
    record = read_record(build_dir)
    binary = build_dir / (record.binary if record else AGY_BINARY)
    zsha = read_zip_sha(build_dir)
    return InstalledBuild(
        build=name,
        path=str(build_dir),
        binary=str(binary),
        binary_ok=binary.is_file() and os.access(binary, os.X_OK),
        harness_ok=(build_dir / HARNESS).is_file() or (build_dir / (HARNESS + ".exe")).is_file(),
        sha256=zsha[0] if zsha else "",
        archive=zsha[1] if zsha else "",
        current=name == current,
        record=record,
    )


def list_builds(root: Path) -> list[InstalledBuild]:
    """Every build directory under ``root`` (temp and hidden entries skipped)."""
    if not root.is_dir():
        return []
    current = current_build(root)
    out = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(".") or entry.name == CURRENT or entry.is_symlink() or not entry.is_dir():
            continue
        out.append(describe_build(root, entry.name, current))
    return out


def partial_downloads(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(p for p in root.glob("*.part") if p.is_file())


def sweep_temp(root: Path) -> list[str]:
    """Remove what a killed install left (temp unpack dirs, old builds being
    replaced, temp symlinks). Call it only while holding the lock."""
    removed: list[str] = []
    if not root.is_dir():
        return removed
    for entry in root.iterdir():
        if entry.name.startswith(TEMP_PREFIXES):
            if entry.is_symlink() or entry.is_file():
                entry.unlink()
            else:
                shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry.name)
    return removed


def temp_name(root: Path, prefix: str, build: str) -> Path:
    return root / f"{prefix}{build}-{secrets.token_hex(4)}"


def point_current(root: Path, build: str) -> None:
    """``current -> build``, replaced atomically: a temp symlink, then ``os.replace``."""
    link = root / CURRENT
    if link.exists() and not link.is_symlink():
        raise OSError(f"{link} exists and is not a symlink; move it away and run the command again")
    tmp = temp_name(root, ".current-", build)
    os.symlink(build, tmp)
    try:
        os.replace(tmp, link)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    _fsync_dir(root)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def install_lock(root: Path) -> Iterator[None]:
    """One install at a time per root; a second one fails fast, it never waits
    behind a 1 GB download."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise LockBusy(f"another `agy-host acp install` is running in {root} (lock {root / LOCK})") from exc
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


__all__ = [
    "CURRENT",
    "HOME_ENV",
    "RECORD",
    "ZIP_SHA",
    "InstallRecord",
    "InstalledBuild",
    "LockBusy",
    "current_build",
    "default_root",
    "describe_build",
    "install_lock",
    "install_root",
    "list_builds",
    "partial_downloads",
    "point_current",
    "read_record",
    "read_zip_sha",
    "sweep_temp",
    "temp_name",
]
