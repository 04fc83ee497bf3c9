"""State on disk: the session store and a small JSON state-file helper.

The session store (``$XDG_STATE_HOME/agy-host/sessions.json``) remembers which
agent conversation a host session is bound to, so ``agy-host run --session
NAME`` resumes it after a restart. Keys are scoped per engine by
:meth:`agy_host.engine.base.Engine.store_key` (``NAME`` for stream-json,
``NAME@acp`` for ACP): engines never touch each other's keys, so switching
engine and back keeps both bindings.

Several agy-host processes may update the store at once (two terminals, a
script). Every write therefore happens under a file lock, re-reads the file,
overlays *only the keys this process changed* and replaces the file
atomically; a binding another process wrote in the meantime survives.

Bad input never loses data: a file that is not a store at all is moved aside
(:func:`agy_host.fsutil.quarantine`) and reported; a store with bad entries is
reported entry by entry and the original file is moved aside before the
cleaned store is written over it.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from agy_host import fsutil

#: Version of ``sessions.json``; a file with another version is kept aside
#: before this build rewrites it.
STORE_VERSION = 1
STORE_FILE = "sessions.json"

Warn = Callable[[str], None]


def _ignore(_message: str) -> None:
    return None


class SessionBinding(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One host session's agent conversation on one engine."""

    conversation_id: str
    engine: str = ""
    #: The agent the conversation lives in (a command or profile label): a
    #: conversation id means nothing to another agent.
    agent: str = ""
    cwd: str = ""
    #: ISO 8601 UTC time of the last turn that touched the binding.
    updated_at: str = ""
    #: context digest watermark: host messages the agent has already seen.
    last_message_count: int = 0
    #: The host's system block is still owed: the conversation started with a
    #: slash command (sent alone), so its first plain prompt carries the block.
    system_pending: bool = False


def utc_now() -> str:
    """``2026-12-02T15:24:00Z``: sortable, and readable in the raw file."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class _Narrowed(msgspec.Struct, kw_only=True):
    bindings: dict[str, SessionBinding]
    #: True when something in the file could not be kept as it was, so the
    #: original must be moved aside before the file is rewritten.
    lossy: bool = False


_BINDING_FIELDS = frozenset(f.encode_name for f in msgspec.structs.fields(SessionBinding))


def _narrow_entry(key: str, raw: Any, warn: Warn) -> tuple[SessionBinding | None, bool]:
    """One binding from its raw JSON value; the bool says whether it lost anything."""
    if not isinstance(raw, dict):
        warn(f"session store: entry {key!r} is not an object; ignored")
        return None, True
    cid = raw.get("conversation_id")
    if not isinstance(cid, str) or not cid:
        warn(f"session store: entry {key!r} has no conversation_id; ignored")
        return None, True
    lossy = False
    values: dict[str, Any] = {"conversation_id": cid}
    for name in ("engine", "agent", "cwd", "updated_at"):
        value = raw.get(name, "")
        if isinstance(value, str):
            values[name] = value
        else:
            warn(f"session store: entry {key!r}: {name} is not a string; dropped")
            lossy = True
    count = raw.get("last_message_count", 0)
    if isinstance(count, bool) or not isinstance(count, (int, float)) or not math.isfinite(count) or count < 0:
        warn(f"session store: entry {key!r}: last_message_count {count!r} is not a count; using 0")
        lossy = True
        count = 0
    values["last_message_count"] = int(count)
    pending = raw.get("system_pending", False)
    if isinstance(pending, bool):
        values["system_pending"] = pending
    else:
        warn(f"session store: entry {key!r}: system_pending {pending!r} is not true or false; using false")
        lossy = True
    unknown = set(raw) - _BINDING_FIELDS
    if unknown:
        # A newer agy-host may have added fields: keep the original file aside.
        warn(f"session store: entry {key!r} has unknown fields {sorted(unknown)}; they are not kept")
        lossy = True
    return SessionBinding(**values), lossy


def _narrow(doc: Any, path: Path, warn: Warn) -> _Narrowed | None:
    """The bindings of a parsed store; ``None`` when it is not a store at all."""
    if not isinstance(doc, dict) or not isinstance(doc.get("bindings"), dict):
        return None
    lossy = False
    version = doc.get("version")
    if version != STORE_VERSION:
        warn(f"session store: {path} has version {version!r}, expected {STORE_VERSION}; reading what fits")
        lossy = True
    bindings: dict[str, SessionBinding] = {}
    for key, raw in doc["bindings"].items():
        binding, lost = _narrow_entry(key, raw, warn)
        lossy = lossy or lost
        if binding is not None:
            bindings[key] = binding
    return _Narrowed(bindings=bindings, lossy=lossy)


class SessionStore:
    """Host session key -> :class:`SessionBinding`, persisted in ``sessions.json``.

    ``get`` and ``all`` read the copy loaded at construction (and refreshed by
    every write); ``set`` and ``delete`` write through at once. ``warn``
    receives every problem found in the file.
    """

    def __init__(self, path: Path, *, warn: Warn | None = None) -> None:
        self.path = path
        self._warn = warn or _ignore
        #: Who hears that the file's lock is being waited for (stderr without ``warn``).
        self._on_wait = warn
        self._cache: dict[str, SessionBinding] = {}
        #: Keys this process changed (``None`` = deleted) and has not yet
        #: written: only these are overlaid on the file's current content.
        self._dirty: dict[str, SessionBinding | None] = {}
        #: The file as this process last read or wrote it, and its stat
        #: signature: a write finds the file unchanged (the usual case, one
        #: writer) and skips re-reading and re-checking every entry.
        self._known: tuple[tuple[int, int, int, int], dict[str, SessionBinding]] | None = None
        self.reload()

    @classmethod
    def in_state_dir(cls, state_dir: Path, *, warn: Warn | None = None) -> SessionStore:
        return cls(state_dir / STORE_FILE, warn=warn)

    # -- reading -----------------------------------------------------------------

    def _read_locked(self, warn: Warn) -> _Narrowed:
        """The file's bindings; the caller holds the lock. A file that is not a
        store is moved aside (it is kept, never overwritten) and that is always
        reported; ``warn`` only receives the per-entry problems."""
        signature = self._signature()
        known = self._known
        if signature is not None and known is not None and known[0] == signature:
            return _Narrowed(bindings=known[1])  # callers copy before they change it
        self._known = None
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return _Narrowed(bindings={})
        except OSError as exc:
            raise StoreError(f"cannot read the session store {self.path}: {exc}") from exc
        try:
            doc = json.loads(data.decode("utf-8"))
        except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, or nested too deep
            moved = fsutil.quarantine(self.path)
            self._warn(f"session store: {self.path} is not valid JSON ({exc}); moved it to {moved} and starting empty")
            return _Narrowed(bindings={})
        narrowed = _narrow(doc, self.path, warn)
        if narrowed is None:
            moved = fsutil.quarantine(self.path)
            self._warn(f"session store: {self.path} is not a session store; moved it to {moved} and starting empty")
            return _Narrowed(bindings={})
        if signature is not None and not narrowed.lossy:
            # the signature was taken before the read: a change in between
            # only makes the next write read the file again
            self._known = (signature, narrowed.bindings)
        return narrowed

    def _signature(self) -> tuple[int, int, int, int] | None:
        """Inode, size, mtime and ctime: every write replaces the file (new
        inode), and an edit in place moves the times."""
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def reload(self) -> None:
        """Re-read the file (keeping this process's unwritten changes on top)."""
        with fsutil.locked(self.path, on_wait=self._on_wait):
            narrowed = self._read_locked(self._warn)
        self._cache = dict(narrowed.bindings)
        self._apply_dirty(self._cache)

    def get(self, key: str) -> SessionBinding | None:
        return self._cache.get(key)

    def all(self) -> dict[str, SessionBinding]:
        return dict(self._cache)

    def __len__(self) -> int:
        return len(self._cache)

    # -- writing -----------------------------------------------------------------

    def set(self, key: str, binding: SessionBinding) -> None:
        """Bind ``key`` and write the store."""
        self._cache[key] = binding
        self._dirty[key] = binding
        self.flush()

    def delete(self, key: str) -> bool:
        """Forget ``key``; ``False`` when it was not bound."""
        existed = self._cache.pop(key, None) is not None
        self._dirty[key] = None
        self.flush()
        return existed

    def _apply_dirty(self, bindings: dict[str, SessionBinding]) -> None:
        for key, binding in self._dirty.items():
            if binding is None:
                bindings.pop(key, None)
            else:
                bindings[key] = binding

    def flush(self) -> None:
        """Write the keys this process changed, merged into the file's current
        content. Problems already reported when the file was loaded are not
        reported twice; the original is moved aside before a lossy rewrite."""
        if not self._dirty:
            return
        with fsutil.locked(self.path, on_wait=self._on_wait):
            narrowed = self._read_locked(_ignore)
            if narrowed.lossy and self.path.exists():
                moved = fsutil.quarantine(self.path)
                self._warn(f"session store: kept the original {self.path.name} as {moved} before rewriting it")
            merged = dict(narrowed.bindings)
            self._apply_dirty(merged)
            doc = {"version": STORE_VERSION, "bindings": {k: merged[k] for k in sorted(merged)}}
            fsutil.write_atomic(self.path, msgspec.json.format(msgspec.json.encode(doc), indent=2) + b"\n")
            signature = self._signature()
            self._known = (signature, dict(merged)) if signature is not None else None
        self._dirty.clear()
        self._cache = merged


class StoreError(Exception):
    """A state file exists but cannot be read (permissions, I/O error)."""


__all__ = [
    "STORE_FILE",
    "STORE_VERSION",
    "SessionBinding",
    "SessionStore",
    "StoreError",
    "utc_now",
]
