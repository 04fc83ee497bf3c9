"""The session store's first format, ``sessions.json``, read so it can move.

Up to this build every binding of every session lived in one file,
``$XDG_STATE_HOME/agy-host/sessions.json`` (``{"version": 1, "bindings":
{key: binding}}``), rewritten whole at every turn's end: it grew with every
unnamed run, and every run paid for it. The store now keeps one file per
session (:mod:`agy_host.runtime.store_files`). The first store that finds a
``sessions.json`` moves its bindings into those files, under the store's
lock (:meth:`agy_host.runtime.store.SessionStore.reload`), then moves the old
file aside, byte for byte, as ``sessions.json.v1-<time>``.

Nothing is lost on the way: a binding that is newer in its session's file
(an older build still running wrote the old file again) is kept; a crash
part-way leaves ``sessions.json`` in place, so the next command moves it
again (the same bindings, nothing doubled); a file that is not a store at all
is moved aside as ``sessions.json.corrupt-<time>`` and reported, as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import msgspec

from agy_host import fsutil
from agy_host.runtime.store_files import SessionBinding, narrow_bindings, read_bytes, session_name

#: The old single-file store, in the state directory; its lock file
#: (``sessions.json.lock``) stays the store's lock, so an older build still
#: running and this one never write at the same time.
LEGACY_FILE = "sessions.json"
LEGACY_VERSION = 1

Warn = Callable[[str], None]


class Legacy(msgspec.Struct, kw_only=True):
    """The old file's bindings, by session name."""

    sessions: dict[str, dict[str, SessionBinding]]
    count: int = 0


def read_legacy(path: Path, warn: Warn) -> Legacy | None:
    """The bindings of ``sessions.json``; ``None`` when there is none (or it
    was not a store: then it is moved aside and that is reported). The caller
    holds the store's lock."""
    data = read_bytes(path, "the old session store")
    if data is None:
        return None
    try:
        doc = json.loads(data.decode("utf-8"))  # the reader that wrote and read it so far
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, or nested too deep
        moved = fsutil.quarantine(path)
        warn(f"session store: {path} is not valid JSON ({exc}); moved it to {moved}, its bindings are not read")
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("bindings"), dict):
        moved = fsutil.quarantine(path)
        warn(f"session store: {path} is not a session store; moved it to {moved}, its bindings are not read")
        return None
    if doc.get("version") != LEGACY_VERSION:
        warn(f"session store: {path} has version {doc.get('version')!r}, expected {LEGACY_VERSION}; reading what fits")
    parsed = narrow_bindings(doc["bindings"], warn)
    grouped: dict[str, dict[str, SessionBinding]] = {}
    for key, binding in parsed.bindings.items():
        grouped.setdefault(session_name(key), {})[key] = binding
    return Legacy(sessions=grouped, count=len(parsed.bindings))


def merged(current: dict[str, SessionBinding], incoming: dict[str, SessionBinding]) -> dict[str, SessionBinding]:
    """``current`` with ``incoming``'s bindings where they are newer (or new)."""
    out = dict(current)
    for key, binding in incoming.items():
        have = out.get(key)
        if have is None or binding.updated_at > have.updated_at:
            out[key] = binding
    return out


def move_aside(path: Path) -> Path:
    """Keep the moved file, byte for byte, as ``sessions.json.v1-<time>``."""
    return fsutil.quarantine(path, label=f"v{LEGACY_VERSION}")


__all__ = ["LEGACY_FILE", "LEGACY_VERSION", "Legacy", "merged", "move_aside", "read_legacy"]
