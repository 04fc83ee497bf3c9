"""What the files were before the turn: the "old" side of a stream-json edit.

The stream-json dialect reports an edit as "tool X touched file F" (at best
with the new content), so the old side must come from the host. It is
taken once per turn, before the agent sees the prompt:

* **in a git repository**: the commit checked out then, plus a snapshot of
  every file that was dirty or untracked then (``git status``), so "before"
  means the working tree at turn start, not the last commit (the user's own
  uncommitted work is not shown as the agent's);
* **outside git**: a bounded snapshot of the working directory's text files;
* **on first sight**: a file the snapshot did not cover is read when its edit
  card first appears, which on stream-json is before the tool ran.

An edit of a file seen earlier in the same turn is diffed against the
content after the previous edit, so each card shows its own change. Git is
only read (``GIT_OPTIONAL_LOCKS=0``: not even the index is refreshed).

**Never on the event loop, never blocking.** The snapshot is taken in a
worker thread (:meth:`Baseline.start`): a directory walk or ``git status``
on a big tree would otherwise stall every turn, and Ctrl-C with it. Only
regular files are read, opened non-blocking and checked with ``fstat``
(a FIFO in the tree used to hang ``run`` for good). The walk is bounded
(:data:`MAX_ENTRIES` looked at, :data:`MAX_FILES` and
:data:`MAX_TOTAL_BYTES` kept) and says when a bound stopped it
(:attr:`Baseline.capped`). The first edit card stops the snapshot: what it
has not read by then may already be the agent's, so those files are read
at first sight instead, which comes before the tool runs.
"""

from __future__ import annotations

import os
import stat
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

GIT_TIMEOUT_S = 5.0
MAX_FILE_BYTES = 512 * 1024
MAX_FILES = 1000
MAX_TOTAL_BYTES = 32 * 1024 * 1024
#: Directory entries the plain walk looks at, at most (100k files took 2-3 s).
MAX_ENTRIES = 20_000
#: How long the first edit card waits for a snapshot still being taken.
STOP_WAIT_S = 0.5
SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".ruff_cache", ".tox", ".nox"}
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)

Git = Callable[[list[str], Path], bytes | None]
_ABSENT = object()  # too big to keep, or not a regular file


def run_git(args: list[str], cwd: Path) -> bytes | None:
    """``git ARGS`` in ``cwd``; its stdout, or ``None`` when it failed."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def read_regular(path: Path, limit: int, max_size: int | None = None) -> str | object | None:
    """A regular file's text (up to ``limit`` bytes); ``None`` when it does
    not exist or cannot be read; ``_ABSENT`` when it is not a regular file
    (a FIFO, a device, a socket) or is bigger than ``max_size``.

    Opened non-blocking and checked on the open descriptor: a FIFO put
    where a file was (or behind a symlink) is never waited on."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or (max_size is not None and info.st_size > max_size):
            return _ABSENT
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return decode(b"".join(chunks))
    except OSError:
        return None
    finally:
        os.close(fd)


def read_text(path: Path, limit: int = MAX_FILE_BYTES * 8) -> str | None:
    """The file's text, ``None`` when it does not exist, cannot be read, or
    is not a regular file."""
    text = read_regular(path, limit)
    return text if isinstance(text, str) else None


class Baseline:
    """The "before" side of every file one turn may touch."""

    def __init__(self, cwd: str | Path, *, git: Git = run_git, snapshot: bool = True, background: bool = False) -> None:
        """Locate the repository; with ``snapshot`` (at turn start) also keep
        what may change. Without it (asked outside a turn) git's commit is
        the only "before" there is. With ``background`` the work runs in a
        worker thread (:meth:`start` does that); otherwise here and now."""
        self.cwd = Path(cwd).resolve()
        self._git = git
        self.repo: Path | None = None
        #: The commit checked out at turn start (``None``: no git, or no commits yet).
        self.head: str | None = None
        #: Files captured at turn start; ``None`` marks a file listed but absent.
        self.files: dict[Path, str | None] = {}
        #: The snapshot covered everything it meant to (no bound, no early stop).
        self.complete = False
        #: Why the snapshot stopped short (a bound), for a notice; ``None`` otherwise.
        self.capped: str | None = None
        #: Content after the last edit shown this turn, per file.
        self.seen: dict[Path, str | None] = {}
        #: Files read when their card first appeared.
        self.first_sight: dict[Path, str | None] = {}
        self._lock = threading.Lock()
        self._stopped = False
        self._done = threading.Event()
        if background:
            threading.Thread(target=self._take, args=(snapshot,), name="agy-host-diff-baseline", daemon=True).start()
        else:
            self._take(snapshot)

    @classmethod
    def start(cls, cwd: str | Path, *, git: Git = run_git) -> Baseline:
        """Begin the turn-start snapshot in a worker thread and return at once."""
        return cls(cwd, git=git, background=True)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the snapshot (tests, tools); whether it finished."""
        return self._done.wait(timeout)

    def stop(self) -> None:
        """The agent may change files from now on: the snapshot keeps what it
        has and reads nothing more (waiting briefly for a walk in progress)."""
        with self._lock:
            self._stopped = True
        self._done.wait(STOP_WAIT_S)

    # -- taking (in the worker thread) ----------------------------------------------

    def _take(self, snapshot: bool) -> None:
        try:
            top = self._git(["rev-parse", "--show-toplevel"], self.cwd) if self.cwd.is_dir() else None
            if top is not None and top.strip():
                self.repo = Path(decode(top).strip()).resolve()
                head = self._git(["rev-parse", "--verify", "-q", "HEAD"], self.repo)
                self.head = decode(head).strip() if head else None
            if snapshot and self.repo is not None:
                self.complete = self._dirty()
            elif snapshot:
                self.complete = self._walk()
        except Exception as exc:  # a worker thread has nobody to raise to
            self.capped = f"the snapshot failed ({type(exc).__name__}: {exc})"
        finally:
            self._done.set()

    def _keep(self, path: Path, text: str | None) -> bool:
        """Record one file unless the snapshot was stopped; whether it was."""
        with self._lock:
            if self._stopped:
                return False
            self.files[path] = text
            return True

    def _dirty(self) -> bool:
        """Snapshot what ``git status`` lists: modified, added, untracked."""
        assert self.repo is not None
        out = self._git(["status", "--porcelain=v1", "-z", "--untracked-files=all"], self.repo)
        if out is None:
            return False
        fields = out.split(b"\0")
        total = 0
        i = 0
        while i < len(fields):
            entry = fields[i]
            i += 1
            if len(entry) < 4:
                continue
            status, rel = entry[:2], decode(entry[3:])
            if status[:1] in (b"R", b"C"):
                i += 1  # the rename's source follows; the new path is what can change
            path = self.repo / rel
            if len(self.files) >= MAX_FILES or total > MAX_TOTAL_BYTES:
                self.capped = f"git lists more than {MAX_FILES} changed files or {MAX_TOTAL_BYTES >> 20} MiB"
                return False
            text = read_regular(path, MAX_FILE_BYTES, MAX_FILE_BYTES)
            if text is _ABSENT:
                continue
            if not self._keep(path, text if isinstance(text, str) else None):
                return False
            total += len(text) if isinstance(text, str) else 0
        return True

    def _walk(self) -> bool:
        """Outside git: the working directory's regular files, bounded."""
        if self.cwd in (Path("/"), Path.home().resolve()):
            return False  # far too big to snapshot every turn; first sight covers it
        total = 0
        entries = 0
        for root, dirs, names in os.walk(self.cwd):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
            for name in sorted(names):
                entries += 1
                if entries > MAX_ENTRIES or len(self.files) >= MAX_FILES or total > MAX_TOTAL_BYTES:
                    self.capped = (
                        f"stopped at {MAX_ENTRIES} entries, {MAX_FILES} files or "
                        f"{MAX_TOTAL_BYTES >> 20} MiB under {self.cwd}"
                    )
                    return False
                path = Path(root) / name
                text = read_regular(path, MAX_FILE_BYTES, MAX_FILE_BYTES)
                if isinstance(text, str) and not self._keep(path, text):
                    return False
                total += len(text) if isinstance(text, str) else 0
        return True

    # -- reading -------------------------------------------------------------------

    def note_first_sight(self, path: Path) -> None:
        """Read ``path`` now, before its tool runs, unless the baseline has it."""
        self.stop()
        if path in self.first_sight or path in self.files or path in self.seen:
            return
        if self.complete and self.repo is not None and self._in_repo(path):
            return  # git and the dirty snapshot know what it was
        self.first_sight[path] = read_text(path)

    def _in_repo(self, path: Path) -> bool:
        assert self.repo is not None
        try:
            path.relative_to(self.repo)
        except ValueError:
            return False
        return True

    def before(self, path: Path) -> str | None:
        """What ``path`` held before this turn (or before the last edit shown
        this turn); ``None`` when it did not exist."""
        self.stop()
        if path in self.seen:
            return self.seen[path]
        if path in self.files:
            return self.files[path]
        if path in self.first_sight:
            return self.first_sight[path]
        if self.repo is not None and self._in_repo(path):
            if self.head is None:
                return None
            rel = path.relative_to(self.repo).as_posix()
            shown = self._git(["show", f"{self.head}:{rel}"], self.repo)
            return decode(shown) if shown is not None else None
        return None

    def shown(self, path: Path, content: str | None) -> None:
        self.seen[path] = content


__all__ = [
    "GIT_TIMEOUT_S",
    "MAX_ENTRIES",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "Baseline",
    "read_regular",
    "read_text",
    "run_git",
]
