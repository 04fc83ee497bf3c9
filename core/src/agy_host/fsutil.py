"""Files that must never be half-written: atomic replace, locks, quarantine.

Everything agy-host keeps on disk (config, session bindings, agent facts) goes
through :func:`write_atomic`: a temp file in the same directory, fsync, then
``os.replace``, so a crash or SIGKILL mid-write leaves either the old or the new
content, never a torn file; the temp file such a kill strands is swept by the
next process's first write of the same file (:func:`sweep_stale_temps`; once
per file and process, so a store written at every turn end does not list its
directory every time). A file that cannot
be parsed is moved aside by
:func:`quarantine` (and the move reported) instead of being overwritten, so the
user's data is kept for inspection.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

#: A temp file older than this was stranded by a killed writer: a live write
#: lasts milliseconds between ``mkstemp`` and ``os.replace``.
STALE_TEMP_S = 60.0

#: Files whose stranded temps this process has swept (see the module docstring).
_SWEPT: set[Path] = set()


def write_atomic(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Replace ``path`` with ``data`` atomically (creating parent directories)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    if path not in _SWEPT:
        _SWEPT.add(path)
        sweep_stale_temps(path)


def sweep_stale_temps(path: Path, older_than_s: float = STALE_TEMP_S) -> list[Path]:
    """Remove the temp files of ``path`` that a killed writer left behind
    (``.<name>.*.tmp``, older than ``older_than_s``); return what went.

    Their content is a write that never happened: ``path`` itself still holds
    the last complete one, so nothing the user had is lost. Best effort."""
    cutoff = time.time() - older_than_s
    removed: list[Path] = []
    with contextlib.suppress(OSError):
        for stale in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
            with contextlib.suppress(OSError):
                if stale.stat().st_mtime < cutoff:
                    stale.unlink()
                    removed.append(stale)
    return removed


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``path`` (a sibling ``.lock`` file)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock_path = path.with_name(path.name + ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def quarantine(path: Path) -> Path:
    """Move an unreadable file aside as ``<name>.corrupt-<timestamp>``; return
    the new path. The original content is kept byte for byte."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
        n += 1
    os.replace(path, target)
    return target


__all__ = ["STALE_TEMP_S", "locked", "quarantine", "sweep_stale_temps", "write_atomic"]
