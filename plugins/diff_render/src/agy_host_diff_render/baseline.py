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
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

GIT_TIMEOUT_S = 5.0
MAX_FILE_BYTES = 512 * 1024
MAX_FILES = 1000
MAX_TOTAL_BYTES = 32 * 1024 * 1024
SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".ruff_cache", ".tox", ".nox"}

Git = Callable[[list[str], Path], bytes | None]
_ABSENT = object()


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


def read_text(path: Path, limit: int = MAX_FILE_BYTES * 8) -> str | None:
    """The file's text, ``None`` when it does not exist (or cannot be read)."""
    try:
        with open(path, "rb") as fh:
            return decode(fh.read(limit))
    except OSError:
        return None


class Baseline:
    """The "before" side of every file one turn may touch."""

    def __init__(self, cwd: str | Path, *, git: Git = run_git, snapshot: bool = True) -> None:
        """Locate the repository; with ``snapshot`` (at turn start) also keep
        what may change. Without it (asked outside a turn) git's commit is
        the only "before" there is."""
        self.cwd = Path(cwd).resolve()
        self._git = git
        self.repo: Path | None = None
        #: The commit checked out at turn start (``None``: no git, or no commits yet).
        self.head: str | None = None
        #: Files captured at turn start; ``None`` marks a file listed but absent.
        self.files: dict[Path, str | None] = {}
        #: The plain (non-git) snapshot covered every file of the directory.
        self.complete = False
        #: Content after the last edit shown this turn, per file.
        self.seen: dict[Path, str | None] = {}
        #: Files read when their card first appeared.
        self.first_sight: dict[Path, str | None] = {}
        top = self._git(["rev-parse", "--show-toplevel"], self.cwd) if self.cwd.is_dir() else None
        if top is not None and top.strip():
            self.repo = Path(decode(top).strip()).resolve()
            head = self._git(["rev-parse", "--verify", "-q", "HEAD"], self.repo)
            self.head = decode(head).strip() if head else None
        if snapshot and self.repo is not None:
            self._dirty()
        elif snapshot:
            self._walk()

    # -- taking --------------------------------------------------------------------

    def _dirty(self) -> None:
        """Snapshot what ``git status`` lists: modified, added, untracked."""
        assert self.repo is not None
        out = self._git(["status", "--porcelain=v1", "-z", "--untracked-files=all"], self.repo)
        if out is None:
            return
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
                break
            text = self._read_small(path)
            if text is not _ABSENT:
                self.files[path] = text if isinstance(text, str) else None
                total += len(text) if isinstance(text, str) else 0

    def _read_small(self, path: Path) -> str | object | None:
        """The text, ``None`` for an absent file, ``_ABSENT`` when too big to keep."""
        try:
            size = path.stat().st_size
        except OSError:
            return None
        if size > MAX_FILE_BYTES:
            return _ABSENT
        return read_text(path)

    def _walk(self) -> None:
        """Outside git: the working directory's files, bounded."""
        if self.cwd in (Path("/"), Path.home().resolve()):
            return  # far too big to snapshot every turn; first sight covers it
        total = 0
        for root, dirs, names in os.walk(self.cwd):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
            for name in sorted(names):
                if len(self.files) >= MAX_FILES or total > MAX_TOTAL_BYTES:
                    return
                path = Path(root) / name
                text = self._read_small(path)
                if isinstance(text, str):
                    self.files[path] = text
                    total += len(text)
        self.complete = True

    # -- reading -------------------------------------------------------------------

    def note_first_sight(self, path: Path) -> None:
        """Read ``path`` now, before its tool runs, unless the baseline has it."""
        if path in self.first_sight or path in self.files or path in self.seen:
            return
        if self.repo is not None and self._in_repo(path):
            return  # git knows what it was
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
        if path in self.seen:
            return self.seen[path]
        if path in self.files:
            return self.files[path]
        if self.repo is not None and self._in_repo(path):
            if self.head is None:
                return None
            rel = path.relative_to(self.repo).as_posix()
            shown = self._git(["show", f"{self.head}:{rel}"], self.repo)
            return decode(shown) if shown is not None else None
        if path in self.first_sight:
            return self.first_sight[path]
        return None

    def shown(self, path: Path, content: str | None) -> None:
        self.seen[path] = content


__all__ = ["GIT_TIMEOUT_S", "MAX_FILES", "MAX_FILE_BYTES", "Baseline", "read_text", "run_git"]
