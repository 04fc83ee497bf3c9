"""The session store's files: one small JSON file per host session.

``$XDG_STATE_HOME/agy-host/sessions/<name>.json`` holds that session's
bindings, one per engine (and ACP profile)::

    {"version": 2, "session": "work", "bindings": {"work@acp": {...}, "work": {...}}}

One file per session, rather than one file for all of them, so that what a
command costs does not grow with the user's history: a turn reads and
rewrites its own session's file only, and learning whether a name exists is
one ``open``. Reading needs no lock (every write replaces the file whole);
writing happens under the store's lock (:mod:`agy_host.runtime.store`).

This module knows the format: file names, parsing with every problem
reported, encoding, and the write itself. Parsing is tolerant: a bad entry
is reported and left out, and the caller keeps the original aside before it
rewrites the file (nothing is ever dropped silently).
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec

#: Folder of the per-session files, in the state directory.
SESSIONS_DIR = "sessions"
#: Version of a per-session file (version 1 was the single ``sessions.json``).
FILE_VERSION = 2

Warn = Callable[[str], None]


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


def session_name(key: str) -> str:
    """Store keys are ``NAME`` or ``NAME@engine[:profile]``; names never hold ``@``."""
    return key.partition("@")[0]


#: Characters a file name keeps as they are. Upper-case letters are escaped
#: so that a case-insensitive file system never merges ``Work`` and ``work``.
_KEPT = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-.:")
#: An escaped stem longer than this is cut and given a hash (file names stop at 255 bytes).
_LONGEST_STEM = 180


def file_name(name: str) -> str:
    """The file of session ``name``: the name itself when it is made of
    lower-case letters, digits, ``-``, ``.`` and ``:`` (generated names are),
    else each other character as ``%XX`` of its UTF-8 bytes, a leading ``.``
    too (no hidden file). An empty or over-long result is cut and ends in
    ``_`` and a hash of the name: ``_`` is always escaped otherwise, so no two
    names share a file. The file records the name itself; a file name is
    never decoded."""
    parts = []
    for index, char in enumerate(name):
        if char in _KEPT and not (index == 0 and char == "."):
            parts.append(char)
        else:
            parts.extend(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
    stem = "".join(parts)
    if not stem or len(stem) > _LONGEST_STEM:
        import hashlib

        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        stem = f"{stem[:120]}_{digest}"
    return f"{stem}.json"


class Parsed(msgspec.Struct, kw_only=True):
    """What a store file holds, as far as it could be read."""

    bindings: dict[str, SessionBinding]
    #: Something in the file could not be kept as it was: the original must
    #: be moved aside before the file is rewritten.
    lossy: bool = False


_BINDING_FIELDS = frozenset(f.encode_name for f in msgspec.structs.fields(SessionBinding))


def narrow_entry(key: str, raw: Any, warn: Warn) -> tuple[SessionBinding | None, bool]:
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


def narrow_bindings(raw: Mapping[str, Any], warn: Warn, *, session: str | None = None) -> Parsed:
    """The bindings of a parsed ``bindings`` object. With ``session``, a key
    of another session (a hand edit) is reported and left out."""
    lossy = False
    bindings: dict[str, SessionBinding] = {}
    for key, value in raw.items():
        if session is not None and session_name(key) != session:
            warn(f"session store: entry {key!r} is not a key of session {session!r}; ignored")
            lossy = True
            continue
        binding, lost = narrow_entry(key, value, warn)
        lossy = lossy or lost
        if binding is not None:
            bindings[key] = binding
    return Parsed(bindings=bindings, lossy=lossy)


def parse_session_file(data: bytes, path: Path, warn: Warn, *, session: str | None = None) -> tuple[str, Parsed] | str:
    """A session file's name and bindings, or why it is not a session file
    at all: not JSON (or nested too deep), not an object, or another
    session's (``session`` given: not that one; else one whose own name does
    not lead to this file)."""
    try:
        doc = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        return f"is not valid JSON ({exc})"
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("bindings"), dict)
        or not isinstance(doc.get("session"), str)
    ):
        return "is not a session file"
    name: str = doc["session"]
    if (session is not None and name != session) or file_name(name) != path.name:
        return f"holds session {name!r}, which belongs in another file"
    lossy = False
    if doc.get("version") != FILE_VERSION:
        warn(f"session store: {path} has version {doc.get('version')!r}, expected {FILE_VERSION}; reading what fits")
        lossy = True
    parsed = narrow_bindings(doc["bindings"], warn, session=name)
    parsed.lossy = parsed.lossy or lossy
    return name, parsed


class StoreError(Exception):
    """A state file exists but cannot be read (permissions, I/O error)."""


def read_bytes(path: Path, what: str = "the session store") -> bytes | None:
    """``path``'s bytes; ``None`` when there is no such file; a file that
    exists but cannot be read is a :class:`StoreError`, never an empty store."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot read {what} {path}: {exc}") from exc


def encode_session_file(session: str, bindings: Mapping[str, SessionBinding]) -> bytes:
    doc = {"version": FILE_VERSION, "session": session, "bindings": {k: bindings[k] for k in sorted(bindings)}}
    return msgspec.json.format(msgspec.json.encode(doc), indent=2) + b"\n"


def temp_of(path: Path) -> Path:
    """The one temp file of ``path``'s writes. One name is enough: every write
    holds the store's lock. A writer killed mid-write leaves it; the next
    write of the same file truncates it, and ``sessions prune`` sweeps the
    rest."""
    return path.with_name(f".{path.name}.tmp")


def replace_file(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Replace ``path`` with ``data``: a temp file, its data on disk
    (``fsync``, unless the caller syncs a whole batch itself), then
    ``os.replace``. The caller holds the store's lock.

    A crash of this process at any point leaves the old file or the new one.
    The data is synced before the rename, so a power cut leaves one or the
    other too, never a torn or empty file. The directory is not synced: the
    file system commits the rename within seconds (ext4: 5 s), and a power
    cut in those seconds brings back the previous binding, which is what the
    session had before this turn (see docs/reliability.md)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temp = temp_of(path)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, 0o600)
        if sync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    os.close(fd)
    try:
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


__all__ = [
    "FILE_VERSION",
    "SESSIONS_DIR",
    "Parsed",
    "SessionBinding",
    "StoreError",
    "encode_session_file",
    "file_name",
    "narrow_bindings",
    "narrow_entry",
    "parse_session_file",
    "read_bytes",
    "replace_file",
    "session_name",
    "temp_of",
]
