"""One turn at a time per host session, across processes.

Two commands on one session at once would each read the same binding, run
a turn on the same agent conversation and write the binding back: the
agent's storage keeps one of the two exchanges (the harness: the last
writer wins), while agy-host's transcript and usage ledger count both. So
:meth:`~agy_host.runtime.session.SessionRuntime.turn` holds this lock from
before it reads the binding until after it wrote it back (host tools and
late-result follow-ups included), and a second command waits its turn, or,
asked not to wait, fails at once (exit 7, :class:`Busy`).

The lock is ``fcntl.flock`` on a file per store key
(:meth:`~agy_host.engine.base.Engine.store_key`) under
``$XDG_STATE_HOME/agy-host/locks`` (``0700``); the file name is a readable
prefix of the key and a hash of it, so any session name gives a safe one.
The kernel drops a flock when its holder dies, however it dies (SIGKILL
included), so a lock file left behind is never a lock: the next command
simply takes it. The flock is the truth; the note the holder writes into
the file (pid, command line, start time) is for the person who waits, and
one that cannot be read only makes the notice say "another process".

The wait polls with ``LOCK_NB`` on trio's clock rather than blocking in
``flock``: the event loop stays free (the Python API under asyncio runs
trio as a guest on asyncio's own thread, where a blocking call would freeze
the program), and a cancel, Ctrl-C's included, ends the wait at once with
nothing left behind. A turn that has not started has no deadline, so the
wait is not bounded by the turn's timers.

The holder removes the file before it lets go, so no file outlives its
turn; a waiter whose flock landed on a file that is no longer at the path
tries again on the new one (the flock would guard nothing).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
import trio

LOCKS_DIR = "locks"
#: A wait longer than this is told (once), with the holder.
NOTICE_AFTER_S = 0.5
#: The longest pause between two tries: a released lock is taken within it.
POLL_MAX_S = 0.1
#: The holder's command line is cut to this many characters in its note.
COMMAND_MAX = 160

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class Holder(msgspec.Struct, kw_only=True):
    """The note a holder leaves in its lock file, for the people who wait."""

    pid: int
    command: str = ""
    #: Wall-clock seconds (``time.time()``) when the holder took the lock.
    started_at: float = 0.0

    def describe(self, now: float | None = None) -> str:
        """``pid 123 (agy-host run --session work ...), running a turn for 4s``."""
        who = f"pid {self.pid}" + (f" ({self.command})" if self.command else "")
        if self.started_at <= 0:
            return who
        from agy_host.builtins.render_common import fmt_duration

        seconds = max(0.0, (time.time() if now is None else now) - self.started_at)
        return f"{who}, running a turn for {fmt_duration(seconds)}"


class Busy(Exception):
    """Another process is running a turn on the session (and we may not wait)."""

    def __init__(self, holder: str) -> None:
        super().__init__(holder)
        #: Who holds it, for a person (:meth:`Holder.describe`, or "another process").
        self.holder = holder


def lock_path(state_dir: Path, key: str) -> Path:
    """The lock file of store key ``key``: a readable prefix and a hash, so
    any session name (and engine suffix) gives a short, safe file name."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    prefix = _UNSAFE.sub("_", key).strip("._")[:40] or "session"
    return state_dir / LOCKS_DIR / f"{prefix}-{digest}.lock"


def read_holder(path: Path) -> Holder | None:
    """The note in ``path``; ``None`` when there is none or it cannot be read."""
    try:
        return msgspec.json.decode(path.read_bytes(), type=Holder)
    except (OSError, msgspec.DecodeError, RecursionError):
        return None


def describe_holder(path: Path) -> str:
    holder = read_holder(path)
    return holder.describe() if holder is not None else "another process"


class TurnLock:
    """A held turn lock; :meth:`release` (or leaving ``with``) lets it go."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            with contextlib.suppress(OSError):
                if _is_at(fd, self.path):
                    os.unlink(self.path)  # before the unlock: see the module docstring
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> TurnLock:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


async def acquire(path: Path, *, wait: bool = True, on_wait: Callable[[str], None] | None = None) -> TurnLock:
    """Take the lock at ``path``: at once when it is free; else wait for it
    (``on_wait`` hears who holds it once the wait passes
    :data:`NOTICE_AFTER_S`) or, with ``wait=False``, raise :class:`Busy`.

    Cancellable at every try. ``OSError`` when the lock file cannot be made."""
    _make_dir(path.parent)
    started = trio.current_time()
    pause = 0.01
    told = False
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
        except BaseException:
            os.close(fd)
            raise
        else:
            if _is_at(fd, path):
                _note_holder(fd)
                return TurnLock(path, fd)
            os.close(fd)  # its holder removed it as it let go: take the new one
            await trio.lowlevel.checkpoint()
            continue
        if not wait:
            raise Busy(describe_holder(path))
        if not told and trio.current_time() - started >= NOTICE_AFTER_S and on_wait is not None:
            told = True
            on_wait(describe_holder(path))
        await trio.sleep(pause)
        pause = min(pause * 2, POLL_MAX_S)


def holder_now(path: Path) -> str | None:
    """Who holds the lock at ``path`` now (:meth:`Holder.describe`), or
    ``None`` when nobody does; never waits. A free lock is taken for an
    instant to know it is free (a turn starting then retries within
    :data:`POLL_MAX_S`); no file is made."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return None  # a running turn's lock file is there: its holder removes it only as it lets go
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return describe_holder(path)
    finally:
        os.close(fd)  # closing lets go of a flock taken here
    return None


def _make_dir(locks: Path) -> None:
    """``locks/`` and the state dir above it, private (``0700``)."""
    locks.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    locks.mkdir(exist_ok=True, mode=0o700)


def _is_at(fd: int, path: Path) -> bool:
    """``fd`` is still the file at ``path`` (not one its holder removed)."""
    try:
        here, there = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _program() -> str:
    """``agy-host`` for the CLI however it was started (the console script,
    ``python -m agy_host.cli.main``), else the program's file name."""
    first = sys.argv[0] if sys.argv and sys.argv[0] else "python"
    if Path(first).parts[-3:] == ("agy_host", "cli", "main.py"):
        return "agy-host"
    return os.path.basename(first)


def _note_holder(fd: int) -> None:
    """Say who holds the lock, for whoever waits (best effort)."""
    command = shlex.join([_program(), *sys.argv[1:]])
    if len(command) > COMMAND_MAX:
        command = command[: COMMAND_MAX - 1] + "…"
    note = msgspec.json.encode(Holder(pid=os.getpid(), command=command, started_at=time.time())) + b"\n"
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, note, 0)


__all__ = [
    "COMMAND_MAX",
    "LOCKS_DIR",
    "NOTICE_AFTER_S",
    "POLL_MAX_S",
    "Busy",
    "Holder",
    "TurnLock",
    "acquire",
    "describe_holder",
    "holder_now",
    "lock_path",
    "read_holder",
]
