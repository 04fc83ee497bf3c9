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

A lock (:func:`locked`) is held for milliseconds by a healthy process. One
held longer belongs to a process that is stopped (Ctrl-Z) or stuck, so the
wait is bounded (:data:`LOCK_TIMEOUT_S`, then :class:`LockTimeout` naming
the holder), shown once it lasts (who holds it: the kernel's list of locks
names the pid, and each agy-host holder writes its pid and command into the
lock file, cleared as it lets go), and Ctrl-C ends it: on the main thread the
wait turns SIGINT back into ``KeyboardInterrupt`` for its duration, since an
event loop's own handler would only queue the signal until the wait ended.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import signal
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

#: How long :func:`locked` waits for another process before giving up.
LOCK_TIMEOUT_S = 10.0
#: A wait longer than this is shown (with the holder).
LOCK_NOTICE_S = 0.5

#: A temp file older than this was stranded by a killed writer: a live write
#: lasts milliseconds between ``mkstemp`` and ``os.replace``.
STALE_TEMP_S = 60.0

#: Files whose stranded temps this process has swept (see the module docstring).
_SWEPT: set[Path] = set()


def write_atomic(path: Path, data: bytes, mode: int = 0o600, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically (creating parent directories).

    ``durable=False`` skips the two ``fsync`` calls (the file's and its
    directory's): a crash of this process still leaves the old content or
    the new, but a power cut may leave either, or an empty file. For files
    that only describe what happened (doctor's last run), never for what a
    user would lose (docs/reliability.md, "What is synced to disk")."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if durable:
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


class RefusedFile(ValueError):
    """A file refused unread: not a regular file, or too big (the message says which)."""


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_capped(path: Path, max_bytes: int) -> bytes:
    """A regular file's bytes, at most ``max_bytes`` of them.

    Anything else (``/dev/zero``, a FIFO, a directory) is refused unread with
    :class:`RefusedFile` naming what it is, and so is a file bigger than
    ``max_bytes`` or one that grows past it while read: a read that has no
    end is never started. Opened non-blocking, so a FIFO is never waited
    on; checked on the open descriptor, so a symlink swapped meanwhile
    changes nothing. ``OSError`` when it cannot be opened at all."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
            raise RefusedFile(f"{path} is {kind}")
        if info.st_size > max_bytes:
            raise RefusedFile(f"{path} is {info.st_size:,} bytes")
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        got = 0
        while got <= max_bytes:
            chunk = os.read(fd, min(max_bytes + 1 - got, 1 << 20))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            got += len(chunk)
        raise RefusedFile(f"{path} is over {max_bytes:,} bytes")
    finally:
        os.close(fd)


class LockTimeout(OSError):
    """Another process held a lock longer than :data:`LOCK_TIMEOUT_S`."""


def _say_waiting(message: str) -> None:
    with contextlib.suppress(Exception):
        print(f"agy-host: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def locked(
    path: Path, *, timeout: float = LOCK_TIMEOUT_S, on_wait: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``path`` (a sibling ``.lock`` file).

    Waits at most ``timeout`` seconds for another holder (then
    :class:`LockTimeout`); a wait longer than :data:`LOCK_NOTICE_S` is told
    to ``on_wait`` (stderr by default) once, with the holder."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock_path = path.with_name(path.name + ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _wait_for_lock(fd, lock_path, timeout, on_wait or _say_waiting)
        _note_holder(fd)
        yield
    finally:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # the note goes with the lock: a later holder is never named after us
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _wait_for_lock(fd: int, lock_path: Path, timeout: float, on_wait: Callable[[str], None]) -> None:
    started = time.monotonic()
    pause = 0.01
    told = False
    with _ctrl_c_interrupts():
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
            waited = time.monotonic() - started
            if waited >= timeout:
                raise LockTimeout(
                    f"{lock_path} is held by {_holder(lock_path, fd)}; gave up after {timeout:g}s "
                    "(is that process stopped, e.g. with Ctrl-Z?)"
                )
            if not told and waited >= LOCK_NOTICE_S:
                told = True
                on_wait(f"waiting for {lock_path}, held by {_holder(lock_path, fd)} (Ctrl-C to stop)")
            time.sleep(pause)
            pause = min(pause * 2, 0.2)


def _note_holder(fd: int) -> None:
    """Say who holds the lock, for a process that has to wait (best effort)."""
    with contextlib.suppress(OSError):
        who = f"pid {os.getpid()} ({_command(sys.argv)})\n"
        os.ftruncate(fd, 0)
        os.pwrite(fd, who.encode("utf-8", "replace"), 0)


def _command(argv: list[str]) -> str:
    return " ".join(os.path.basename(a) for a in argv[:2])[:80]


def _holder(lock_path: Path, fd: int) -> str:
    """Who holds the lock, as truly as can be told.

    The note in the file is only what the last agy-host to take the lock
    wrote: another program (``flock(1)``, an editor, a backup tool) takes it
    without writing one, and a holder killed with SIGKILL leaves its own. So
    the kernel is asked first (Linux ``/proc/locks``): the note counts when
    it names the pid the kernel names, otherwise that pid is named with its
    command line. Without the kernel's word the note counts only when its pid
    is alive and not this process; else the holder is unknown, and said so."""
    note = _read_note(lock_path)
    pids = _flock_holders(fd)
    if pids:
        if note is not None and note[0] in pids:
            return note[1]
        pid = pids[0]
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace").split("\0")
        except OSError:
            return f"pid {pid}"
        return f"pid {pid} ({_command([a for a in argv if a])})"
    if note is not None and note[0] != os.getpid() and _alive(note[0]):
        return note[1]
    return "an unknown process (it left no note, and the system does not say)"


def _read_note(lock_path: Path) -> tuple[int, str] | None:
    """The holder's note (``pid N (command)``) and its pid, if the file holds one."""
    with contextlib.suppress(OSError, UnicodeDecodeError, ValueError):
        text = lock_path.read_text("utf-8").strip()
        if text.startswith("pid "):
            return int(text.split()[1]), text
    return None


def _flock_holders(fd: int) -> list[int] | None:
    """The pids holding a flock on ``fd``'s file, from ``/proc/locks``; ``None``
    when the kernel cannot be asked (not Linux)."""
    try:
        info = os.fstat(fd)
        with open("/proc/locks", encoding="ascii", errors="replace") as listing:
            lines = listing.read().splitlines()
    except OSError:
        return None
    wanted = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    exact: list[int] = []
    same_inode: list[int] = []  # btrfs and overlayfs list another device than stat gives
    for line in lines:
        parts = line.split()
        # "3: FLOCK  ADVISORY  WRITE 1234 fe:00:5678 0 EOF"; "3: -> FLOCK ..." is a waiter
        if len(parts) < 6 or parts[1] != "FLOCK" or not parts[4].isdigit():
            continue
        if parts[5] == wanted:
            exact.append(int(parts[4]))
        elif parts[5].endswith(f":{info.st_ino}"):
            same_inode.append(int(parts[4]))
    return exact or same_inode


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # alive, someone else's
        return True
    return True


@contextlib.contextmanager
def _ctrl_c_interrupts() -> Iterator[None]:
    """SIGINT raises ``KeyboardInterrupt`` for the duration (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGINT, interrupt)
    except ValueError:  # not the main interpreter's main thread after all
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def quarantine(path: Path, label: str = "corrupt") -> Path:
    """Move an unreadable file aside as ``<name>.corrupt-<timestamp>`` (or
    another ``label``: a file kept after its content moved elsewhere); return
    the new path. The original content is kept byte for byte."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    target = path.with_name(f"{path.name}.{label}-{stamp}")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.{label}-{stamp}-{n}")
        n += 1
    os.replace(path, target)
    return target


__all__ = [
    "LOCK_NOTICE_S",
    "LOCK_TIMEOUT_S",
    "STALE_TEMP_S",
    "LockTimeout",
    "RefusedFile",
    "locked",
    "quarantine",
    "read_capped",
    "sweep_stale_temps",
    "write_atomic",
]
