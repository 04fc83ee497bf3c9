"""Where the keeper lives: a private directory, a socket and a lock per build.

The directory is ``$XDG_RUNTIME_DIR/agy-host`` when the system gives one
(a per-user tmpfs, gone at logout), else ``<state dir>/run``; it is created
0700 and refused when another user owns it or others may write to it. In it,
per build of agy-host (:func:`build_stamp`):

* ``keeper-<build>.sock``: the socket (0600);
* ``keeper-<build>.lock``: held (``flock``) by the live keeper for its whole
  life, so a socket file without a lock holder is stale and is removed;
* ``keeper.log`` (in the state dir): what keepers had to say.

A directory whose socket path would be too long for the system (108 bytes)
moves to ``/tmp/agy-host-<uid>-<hash of the state dir>``, with the same checks.

A newer agy-host has another build stamp and so another socket: it never
attaches to an older keeper's warm agents.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path

#: Unix socket paths are limited to 107 bytes on Linux; a longer one falls back to /tmp.
_MAX_SOCKET_PATH = 100


class PlaceError(Exception):
    """The keeper's directory cannot be used safely."""


def build_stamp() -> str:
    """``<version>-<hash>``: the version and a hash of core's installed code
    location and modification time, so two checkouts or installs of the same
    version never share a keeper either, and of the distributions installed
    (:func:`installed`): a plugin or engine installed, upgraded or removed
    is a new build, whose commands start a keeper that loads it (the old one
    ends once idle). A keeper loads its plugins once, when it starts."""
    from agy_host import __version__

    here = Path(__file__).resolve().parent.parent
    try:
        mtime = max(p.stat().st_mtime_ns for p in here.rglob("*.py"))
    except (OSError, ValueError):
        mtime = 0
    digest = hashlib.sha256(f"{here}:{mtime}:{installed()}".encode()).hexdigest()[:10]
    return f"{__version__}-{digest}"


def installed() -> str:
    """The distributions on ``sys.path`` (their metadata folders' names, which
    carry name and version), one listing per folder: nothing is read.
    ``sys.path[0]``, the script's or the current folder, differs between a
    command and the keeper it starts, and is left out."""
    names: list[str] = []
    for entry in sys.path[1:]:
        try:
            names.extend(n for n in os.listdir(entry) if n.endswith((".dist-info", ".egg-info")))
        except OSError:
            continue  # a zip, a folder that is gone
    return ",".join(sorted(names))


def runtime_dir(env: Mapping[str, str], state_dir: Path, *, create: bool = True) -> Path:
    """The private directory (created 0700; checked). ``create=False``: a
    command that only talks to a keeper already running leaves a missing
    directory missing (a keeper removes it when it ends; its socket cannot
    be there either)."""
    base = env.get("XDG_RUNTIME_DIR", "").strip()
    where = Path(base) / "agy-host" if base and Path(base).is_dir() else state_dir / "run"
    if len(str(where)) + 40 > _MAX_SOCKET_PATH:
        # too long for a socket path: a short one, still this state dir's own
        tag = hashlib.sha256(str(state_dir).encode()).hexdigest()[:12]
        where = Path("/tmp") / f"agy-host-{os.getuid()}-{tag}"
    if not create and not where.exists():
        return where
    where.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = where.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise PlaceError(f"{where} is not a directory of this user; warm agents are off")
    if info.st_mode & 0o077:
        try:
            os.chmod(where, 0o700)
        except OSError as exc:
            raise PlaceError(f"{where} is open to other users and cannot be closed: {exc}") from exc
    return where


def socket_path(directory: Path, build: str) -> Path:
    return directory / f"keeper-{build}.sock"


def lock_path(directory: Path, build: str) -> Path:
    return directory / f"keeper-{build}.lock"


def log_path(state_dir: Path) -> Path:
    return state_dir / "keeper.log"


__all__ = ["PlaceError", "build_stamp", "installed", "lock_path", "log_path", "runtime_dir", "socket_path"]
