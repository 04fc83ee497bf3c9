"""The session store: which agent conversation each host session is bound to.

``agy-host run --session NAME`` resumes a session's conversation after a
restart because its binding is on disk, one file per session
(``$XDG_STATE_HOME/agy-host/sessions/<name>.json``, format in
:mod:`agy_host.runtime.store_files`). Keys are scoped per engine by
:meth:`agy_host.engine.base.Engine.store_key` (``NAME`` for stream-json,
``NAME@acp`` for ACP), and all of a session's keys share its file: engines
never touch each other's keys, so switching engine and back keeps both.

What a command pays does not grow with the history on disk: ``get`` reads
one small file (no cache: every read sees the last write of any process),
``set`` rewrites one. Only the commands that show every session
(``sessions list --all``, ``doctor``) read them all.

Several agy-host processes may write at once (two terminals, a script, the
warm-agent keeper). Every write happens under one file lock
(``sessions.json.lock``, the lock of the store's first format too), re-reads
the session's file and replaces it atomically, so a binding another process
wrote in the meantime survives.

Bad input never loses data: a file that is not a session file is moved
aside (:func:`agy_host.fsutil.quarantine`) and reported; a file with bad
entries is reported entry by entry, and the original is moved aside before
the cleaned file is written over it. The first format, one
``sessions.json`` for all sessions, is moved into the per-session files the
first time a store sees it (:mod:`agy_host.runtime.store_legacy`).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from agy_host import fsutil
from agy_host.runtime.store_files import (
    FILE_VERSION,
    SESSIONS_DIR,
    Parsed,
    SessionBinding,
    StoreError,
    encode_session_file,
    file_name,
    parse_session_file,
    read_bytes,
    replace_file,
    session_name,
)
from agy_host.runtime.store_legacy import LEGACY_FILE, merged, move_aside, read_legacy

#: The store's first format (one file for every session), read once and moved.
STORE_FILE = LEGACY_FILE
#: How long a write waits for the lock once this process gave up on it (see ``SessionStore._locked``).
LOCK_RETRY_S = 1.0
#: Version of a session's file.
STORE_VERSION = FILE_VERSION

Warn = Callable[[str], None]


def _ignore(_message: str) -> None:
    return None


def utc_now() -> str:
    """``2026-12-02T15:24:00Z``: sortable, and readable in the raw file."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class SessionStore:
    """Host session key -> :class:`SessionBinding`, one file per session.

    ``get`` and ``bindings_of`` read the session's file each time; ``set``
    and ``delete`` write through at once. ``warn`` receives every problem
    found on disk (each once per process)."""

    def __init__(self, state_dir: Path, *, warn: Warn | None = None) -> None:
        #: The folder of the session files: what a user looks at.
        self.path = state_dir / SESSIONS_DIR
        self.legacy_path = state_dir / STORE_FILE
        self._warn = warn or _ignore
        #: Who hears that the lock is being waited for (stderr without ``warn``).
        self._on_wait = warn
        self._gave_up = False
        #: Files whose problems were already reported (path and content hash).
        self._told: set[tuple[Path, int]] = set()
        self.reload()

    @classmethod
    def in_state_dir(cls, state_dir: Path, *, warn: Warn | None = None) -> SessionStore:
        return cls(state_dir, warn=warn)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The store's lock. Once a write of this process gave up on a holder
        that did not let go, later writes try for :data:`LOCK_RETRY_S` only,
        and quietly: a command waits out :data:`~agy_host.fsutil.LOCK_TIMEOUT_S`
        once, not once per write (a turn writes its binding when its
        conversation is known and again when it ends)."""
        timeout, on_wait = (LOCK_RETRY_S, _ignore) if self._gave_up else (fsutil.LOCK_TIMEOUT_S, self._on_wait)
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(fsutil.locked(self.legacy_path, timeout=timeout, on_wait=on_wait))
            except fsutil.LockTimeout:
                self._gave_up = True
                raise
            self._gave_up = False
            yield

    def file_of(self, name: str) -> Path:
        return self.path / file_name(name)

    # -- the first format ------------------------------------------------------------

    def reload(self) -> None:
        """Move the first format's ``sessions.json`` into per-session files
        if there is one (an older build may have written it since the last
        look): one ``stat`` when there is none. Reads are always fresh."""
        if not self.legacy_path.exists():
            return
        with self._locked():
            legacy = read_legacy(self.legacy_path, self._warn)
            if legacy is None:
                return  # another process moved it first, or it was not a store (moved aside, reported)
            for name, incoming in legacy.sessions.items():
                path = self.file_of(name)
                current = self._read_locked(path, name)
                bindings = merged(current.bindings, incoming)
                if bindings != current.bindings or current.lossy:
                    self._rewrite(path, name, bindings, current, sync=False)
            os.sync()  # one sync for the whole batch, before the old file goes
            moved = move_aside(self.legacy_path)
        self._warn(
            f"session store: moved {legacy.count} binding(s) of {len(legacy.sessions)} session(s) from "
            f"{self.legacy_path} into {self.path} (a file per session); the old file is kept as {moved}"
        )

    # -- reading ---------------------------------------------------------------------

    def _teller(self, path: Path, data: bytes) -> Warn:
        """``warn`` the first time this process reads this content of ``path``."""
        mark = (path, hash(data))
        if mark in self._told:
            return _ignore
        self._told.add(mark)
        return self._warn

    def _parse(self, path: Path, name: str | None) -> tuple[str, Parsed] | str | None:
        """The file's session name and bindings, why it is not a session file
        (of ``name``, when given), or ``None`` when there is no file."""
        data = read_bytes(path)
        if data is None:
            return None
        return parse_session_file(data, path, self._teller(path, data), session=name)

    def _read(self, path: Path, name: str) -> Parsed:
        got = self._parse(path, name)
        if isinstance(got, str):  # look again under the lock before moving anything
            with self._locked():
                return self._read_locked(path, name)
        return got[1] if got is not None else Parsed(bindings={})

    def _read_locked(self, path: Path, name: str | None) -> Parsed:
        """The file's bindings; the caller holds the lock. A file that is not
        a session file (of ``name``, when given) is moved aside, and that is
        always reported."""
        got = self._parse(path, name)
        if isinstance(got, str):
            moved = fsutil.quarantine(path)
            self._warn(f"session store: {path} {got}; moved it to {moved}, its bindings are not used")
            return Parsed(bindings={})
        return got[1] if got is not None else Parsed(bindings={})

    def get(self, key: str) -> SessionBinding | None:
        return self.bindings_of(session_name(key)).get(key)

    def bindings_of(self, name: str) -> dict[str, SessionBinding]:
        """Session ``name``'s bindings, every engine's: one file read."""
        return self._read(self.file_of(name), name).bindings

    def names(self) -> list[str]:
        """Every session with a binding, without reading the files whose name
        is the session's own (generated names always are)."""
        names = []
        for path in self._files():
            stem = path.name[: -len(".json")]
            if "%" not in stem and "_" not in stem:
                names.append(stem)
                continue
            with contextlib.suppress(FileNotFoundError, OSError):
                got = parse_session_file(path.read_bytes(), path, _ignore)
                if not isinstance(got, str):
                    names.append(got[0])
        return sorted(names)

    def sessions(self) -> dict[str, dict[str, SessionBinding]]:
        """Every session's bindings: reads every file (for the commands that
        show them all)."""
        self.reload()
        out: dict[str, dict[str, SessionBinding]] = {}
        for path in self._files():
            got = self._parse(path, None)
            if got is None:
                continue  # removed meanwhile
            if isinstance(got, str):
                with self._locked():
                    self._read_locked(path, None)  # moved aside and reported, unless fixed meanwhile
                continue
            if got[1].bindings:
                out[got[0]] = got[1].bindings
        return out

    def all(self) -> dict[str, SessionBinding]:
        """Every binding of every session, by key (reads every file)."""
        return {key: b for bindings in self.sessions().values() for key, b in bindings.items()}

    def __len__(self) -> int:
        return len(self.all())

    def _files(self) -> list[Path]:
        try:
            entries = os.listdir(self.path)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StoreError(f"cannot list the session store {self.path}: {exc}") from exc
        return [self.path / e for e in sorted(entries) if e.endswith(".json") and not e.startswith(".")]

    # -- writing ---------------------------------------------------------------------

    def set(self, key: str, binding: SessionBinding) -> None:
        """Bind ``key`` and write its session's file."""
        name = session_name(key)
        path = self.file_of(name)
        with self._locked():
            current = self._read_locked(path, name)
            self._rewrite(path, name, {**current.bindings, key: binding}, current)

    def delete(self, key: str) -> bool:
        """Forget ``key``; ``False`` when it was not bound."""
        name = session_name(key)
        path = self.file_of(name)
        with self._locked():
            current = self._read_locked(path, name)
            if key not in current.bindings:
                return False
            bindings = {k: b for k, b in current.bindings.items() if k != key}
            self._rewrite(path, name, bindings, current)
        return True

    def remove_session(self, name: str) -> int:
        """Forget every binding of session ``name``; how many there were."""
        path = self.file_of(name)
        with self._locked():
            current = self._read_locked(path, name)
            self._rewrite(path, name, {}, current)
        return len(current.bindings)

    def _rewrite(
        self, path: Path, name: str, bindings: dict[str, SessionBinding], current: Parsed, *, sync: bool = True
    ) -> None:
        """Write ``bindings`` as session ``name``'s file (none: remove it),
        keeping a lossy original aside first. The caller holds the lock."""
        if current.lossy and path.exists():
            moved = fsutil.quarantine(path)
            self._warn(f"session store: kept the original {path.name} as {moved} before rewriting it")
        if bindings:
            replace_file(path, encode_session_file(name, bindings), sync=sync)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def sweep_temps(self, older_than_s: float = fsutil.STALE_TEMP_S) -> int:
        """Remove the temp files writers killed mid-write left (a minute old:
        never a live writer's, which holds the lock for milliseconds)."""
        cutoff = time.time() - older_than_s
        removed = 0
        with contextlib.suppress(OSError):
            for entry in os.listdir(self.path):
                stray = self.path / entry
                if entry.startswith(".") and entry.endswith(".json.tmp"):  # store_files.temp_of's names
                    with contextlib.suppress(OSError):
                        if stray.stat().st_mtime < cutoff:
                            stray.unlink()
                            removed += 1
        return removed


__all__ = [
    "STORE_FILE",
    "STORE_VERSION",
    "SessionBinding",
    "SessionStore",
    "StoreError",
    "session_name",
    "utc_now",
]
