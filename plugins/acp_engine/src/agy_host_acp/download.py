"""Download one archive to a ``.part`` file: hashed on the way, resumable.

The server's archive is hundreds of megabytes, so an interrupted transfer
must not start over when it does not have to: the bytes already on disk stay
in ``<archive>.part`` (with a ``.part.json`` naming the URL and the server's
validators), and the next attempt asks for the rest with an HTTP ``Range``
request. A server that answers the range with the whole file (200) gets a
clean restart, never a corrupted append; a ``206`` whose ``Content-Range``
does not start where the file ends is treated the same way.

urllib is blocking; each chunk is read, written and hashed in a worker thread
(``trio.to_thread.run_sync``, not abandoned on cancel), so Ctrl-C lands between
chunks and the partial file is always a prefix of the archive.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import http.client
import json
import os
import re
import shutil
import urllib.error
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import msgspec
import trio

from agy_host_acp import netio
from agy_host_acp.progress import human

if TYPE_CHECKING:
    from agy_host_acp.progress import Progress

CHUNK = 256 * 1024
#: A socket read that stalls this long counts as an interruption.
READ_TIMEOUT = 30.0
ATTEMPTS = 3
#: Clean restarts (a refused or mismatched range) before giving up.
_MAX_RESTARTS = 2
_NO_SPACE = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")


class DownloadError(Exception):
    """The archive could not be fetched; ``kept`` is the partial file left for a resume."""

    def __init__(self, message: str, *, kept: Path | None = None) -> None:
        super().__init__(message)
        self.kept = kept


class Downloaded(msgspec.Struct, kw_only=True):
    path: Path
    sha256: str
    size: int
    #: True when part of the file came from an earlier attempt or run.
    resumed: bool


class _Interrupted(Exception):
    """The transfer stopped early; worth another attempt."""


class _WriteFailed(Exception):
    def __init__(self, exc: OSError) -> None:
        super().__init__(str(exc))
        self.exc = exc


def meta_path(part: Path) -> Path:
    return part.with_name(part.name + ".json")


def discard(part: Path) -> None:
    for path in (part, meta_path(part)):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _read_meta(part: Path) -> dict[str, str]:
    try:
        raw = json.loads(meta_path(part).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def _write_meta(part: Path, meta: dict[str, str]) -> None:
    from agy_host import fsutil

    fsutil.write_atomic(meta_path(part), json.dumps(meta).encode(), mode=0o644)


def _size(part: Path) -> int:
    try:
        return part.stat().st_size
    except FileNotFoundError:
        return 0


def _open_part(part: Path, append: bool) -> IO[bytes]:
    return open(part, "ab" if append else "wb")


def _hash_prefix(part: Path) -> tuple[Any, int]:
    hasher = hashlib.sha256()
    size = 0
    with open(part, "rb") as fh:
        while block := fh.read(1 << 20):
            hasher.update(block)
            size += len(block)
    return hasher, size


def _open(url: str, headers: dict[str, str]) -> Any:
    try:
        return netio.open_url(url, headers, timeout=READ_TIMEOUT)
    except urllib.error.HTTPError as exc:
        # A 416 is an answer about our range, not a failure of the download.
        if exc.code == 416:
            exc.close()
            return None
        raise


def _pump(resp: Any, fh: IO[bytes], hasher: Any) -> int:
    try:
        block = resp.read(CHUNK)
    except (http.client.HTTPException, OSError) as exc:
        raise _Interrupted(
            netio.describe(exc) if not isinstance(exc, http.client.IncompleteRead) else "cut short"
        ) from exc
    if not block:
        return 0
    try:
        fh.write(block)
    except OSError as exc:
        raise _WriteFailed(exc) from exc
    hasher.update(block)
    return len(block)


def _no_space(part: Path, exc: OSError) -> DownloadError:
    discard(part)
    reason = "no space left on the device" if exc.errno != errno.EFBIG else "the file size limit was reached"
    return DownloadError(f"cannot write {part}: {reason} ({exc.strerror}); free some space and run the command again")


def _check_free(part: Path, need: int) -> None:
    if need <= 0:
        return
    free = shutil.disk_usage(part.parent).free
    if free < need:
        raise DownloadError(
            f"not enough free space in {part.parent}: the download needs {human(need)}, {human(free)} free"
        )


async def download(
    url: str, part: Path, *, expected_size: int = 0, progress: Progress, attempts: int = ATTEMPTS
) -> Downloaded:
    """Fetch ``url`` into ``part``, resuming what an earlier run left there."""
    meta = _read_meta(part)
    if _size(part) and meta.get("url") != url:
        # A partial download of something else: never append to it.
        discard(part)
    failures = 0
    restarts = 0
    last_reason = ""
    while True:
        if restarts > _MAX_RESTARTS:
            raise DownloadError(f"cannot download {url}: the server keeps answering ranges it was not asked for")
        offset = _size(part)
        if expected_size and offset > expected_size:
            discard(part)
            offset = 0
        hasher: Any = hashlib.sha256()
        if offset:
            hasher, offset = await trio.to_thread.run_sync(_hash_prefix, part)
        headers: dict[str, str] = {}
        if offset:
            headers["Range"] = f"bytes={offset}-"
            validator = meta.get("etag") or meta.get("last_modified")
            if validator:
                headers["If-Range"] = validator
        try:
            resp = await trio.to_thread.run_sync(_open, url, headers)
        except netio.UrlRefused as exc:
            raise DownloadError(str(exc)) from exc
        except urllib.error.HTTPError as exc:
            raise DownloadError(f"cannot download {url}: {netio.describe(exc)}", kept=part if offset else None) from exc
        except (OSError, http.client.HTTPException) as exc:
            failures += 1
            last_reason = netio.describe(exc)
            if failures >= attempts:
                raise DownloadError(f"cannot download {url}: {last_reason}", kept=part if offset else None) from exc
            progress.note(f"cannot connect ({last_reason}); trying again ({failures + 1} of {attempts})")
            await trio.sleep(0.5 * failures)
            continue
        if resp is None:  # 416: our range is past the end
            if expected_size and offset == expected_size:
                hasher, offset = await trio.to_thread.run_sync(_hash_prefix, part)
                return Downloaded(path=part, sha256=hasher.hexdigest(), size=offset, resumed=True)
            if not offset:
                raise DownloadError(f"cannot download {url}: HTTP 416 to a request without a range")
            progress.note("the server refused to resume this partial download; starting again")
            discard(part)
            meta = {}
            restarts += 1
            continue
        try:
            result = await _transfer(
                resp, url=url, part=part, offset=offset, hasher=hasher, expected_size=expected_size, progress=progress
            )
        except _Interrupted as exc:
            failures += 1
            last_reason = str(exc)
            have = _size(part)
            if failures >= attempts:
                raise DownloadError(
                    f"the download was interrupted {failures} times (last: {last_reason}); the {human(have)} "
                    f"received are kept in {part}: run the same command again to resume",
                    kept=part,
                ) from exc
            progress.note(f"interrupted at {human(have)} ({last_reason}); resuming ({failures + 1} of {attempts})")
            await trio.sleep(0.5 * failures)
            meta = _read_meta(part)
            continue
        finally:
            resp.close()
        if result is None:  # restart from zero requested by the transfer
            meta = {}
            restarts += 1
            continue
        return result


async def _transfer(
    resp: Any, *, url: str, part: Path, offset: int, hasher: Any, expected_size: int, progress: Progress
) -> Downloaded | None:
    status = getattr(resp, "status", 200) or 200
    length_header = resp.headers.get("Content-Length")
    length = int(length_header) if length_header and length_header.isdigit() else None
    total: int | None
    if status == 206 and offset:
        m = _CONTENT_RANGE.match(resp.headers.get("Content-Range", "").strip())
        if not m or int(m.group(1)) != offset:
            progress.note("the server answered a different range; starting again")
            discard(part)
            return None
        total = int(m.group(3)) if m.group(3) != "*" else None
    else:
        if offset:
            progress.note("the server does not support resuming; starting again from the beginning")
            discard(part)
            offset = 0
            hasher = hashlib.sha256()
        total = length
    if expected_size and total is not None and total != expected_size:
        discard(part)
        raise DownloadError(
            f"the server offers {total} bytes for {url}, but the pinned archive is {expected_size} bytes; "
            "refusing it (wrong file, or the pin is stale)"
        )
    _check_free(part, (total or expected_size) - offset)
    _write_meta(
        part,
        {
            "url": url,
            "etag": resp.headers.get("ETag", "") or "",
            "last_modified": resp.headers.get("Last-Modified", "") or "",
        },
    )
    resumed = offset > 0
    done = offset
    progress.start(done, total)
    try:
        with _open_part(part, append=offset > 0) as fh:
            while True:
                n = await trio.to_thread.run_sync(_pump, resp, fh, hasher)
                if n == 0:
                    break
                done += n
                progress.update(done)
            fh.flush()
            os.fsync(fh.fileno())
    except _WriteFailed as exc:
        progress.finish()
        if exc.exc.errno in _NO_SPACE:
            raise _no_space(part, exc.exc) from exc
        raise DownloadError(f"cannot write {part}: {exc.exc.strerror or exc.exc}") from exc
    except OSError as exc:  # open / fsync
        progress.finish()
        if exc.errno in _NO_SPACE:
            raise _no_space(part, exc) from exc
        raise DownloadError(f"cannot write {part}: {exc.strerror or exc}") from exc
    progress.finish()
    if total is not None and done < total:
        raise _Interrupted(f"the connection closed at {done} of {total} bytes")
    return Downloaded(path=part, sha256=hasher.hexdigest(), size=done, resumed=resumed)


__all__ = ["ATTEMPTS", "CHUNK", "DownloadError", "Downloaded", "discard", "download", "meta_path"]
