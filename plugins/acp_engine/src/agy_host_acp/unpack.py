"""Check and unpack a server archive into a fresh directory.

The archive is checked before anything is written: every member name must
stay inside the target (no absolute paths, no ``..``, no drive letters, no
symlinks), and the server binary must be at the top level. Extraction reads
each member through :mod:`zipfile`, which verifies its CRC, so a corrupt
archive fails here even when its checksum was not pinned. The caller unpacks
into a temporary directory beside the final one and renames it into place, so
a failure never leaves a half-unpacked build where the engine looks.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from agy_host_acp.profiles import HARNESS
from agy_host_acp.progress import human

_NO_SPACE = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


class UnpackError(Exception):
    """The archive is unusable or cannot be unpacked; the message says why."""


def _safe_name(name: str) -> PurePosixPath:
    norm = name.replace("\\", "/")
    path = PurePosixPath(norm)
    if not norm or norm.startswith("/") or (len(norm) > 1 and norm[1] == ":"):
        raise UnpackError(f"archive member {name!r} has an absolute path; refusing the archive")
    if any(part == ".." for part in path.parts):
        raise UnpackError(f"archive member {name!r} points outside the install directory; refusing the archive")
    return path


def inspect(archive: Path, binary: str) -> list[zipfile.ZipInfo]:
    """The archive's members after the safety checks; raises :class:`UnpackError`."""
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError) as exc:
        raise UnpackError(f"the archive is corrupt or truncated ({exc})") from exc
    names: set[str] = set()
    for info in infos:
        path = _safe_name(info.filename)
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise UnpackError(f"archive member {info.filename!r} is a symlink; refusing the archive")
        names.add(str(path).rstrip("/"))
    if binary not in names:
        listed = ", ".join(sorted(names)[:6]) or "nothing"
        raise UnpackError(f"the archive has no {binary} at its top level (it holds: {listed})")
    return infos


def unpacked_size(infos: list[zipfile.ZipInfo]) -> int:
    return sum(info.file_size for info in infos)


def extract(archive: Path, dest: Path, binary: str) -> None:
    """Unpack into the existing, empty directory ``dest``; 0755 for programs."""
    infos = inspect(archive, binary)
    need = unpacked_size(infos)
    free = shutil.disk_usage(dest).free
    if free < need:
        raise UnpackError(f"not enough free space in {dest.parent}: unpacking needs {human(need)}, {human(free)} free")
    root = dest.resolve()
    try:
        with zipfile.ZipFile(archive) as zf:
            for info in infos:
                rel = _safe_name(info.filename)
                target = (root / rel).resolve()
                if root not in target.parents and target != root:
                    raise UnpackError(f"archive member {info.filename!r} escapes the install directory")
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "xb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                mode = (info.external_attr >> 16) & 0o777
                program = rel.name in (binary, HARNESS, HARNESS + ".exe") or bool(mode & 0o111)
                os.chmod(target, 0o755 if program else 0o644)
    except UnpackError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise UnpackError(f"the archive is corrupt ({exc})") from exc
    except OSError as exc:
        if exc.errno in _NO_SPACE:
            raise UnpackError(f"no space left while unpacking into {dest.parent} ({exc.strerror})") from exc
        raise UnpackError(f"cannot unpack into {dest}: {exc}") from exc


__all__ = ["UnpackError", "extract", "inspect", "unpacked_size"]
