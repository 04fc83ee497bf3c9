"""Host sessions found by name, listed, read and removed: the one
implementation behind ``agy-host sessions list|show|rm|clear|prune``,
chat's ``/session``, and the Python API's ``list_sessions``,
``get_session``, ``delete_session`` and ``fork_session``.

A session is its store file (a binding per engine) and its transcript.
Finding one reads those two files only; nothing here reads the whole
history unless asked for every session (``sessions list --all``, a
filter). Unnamed runs (a generated name,
:func:`agy_host.runtime.naming.generated_stamp`) pile up, so the default
listing shows the named sessions and only the latest few unnamed ones.

Reads take no lock (a store file is replaced whole, a transcript appended
a turn at a time); a removal takes the store's lock for one file's
rewrite. So every function here is a plain, quick call: the CLI calls them
as they are and the Python API offers them as plain functions, under any
loop or none.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

import msgspec

from agy_host.contract.sessions import (
    BoundConversation,
    HostToolUse,
    SessionDetail,
    SessionEntry,
    SessionInfo,
    add_usage,
)
from agy_host.runtime.naming import generated_stamp

if TYPE_CHECKING:
    from agy_host.builtins.transcripts import TranscriptEntry
    from agy_host.runtime.store import SessionBinding, SessionStore

#: Unnamed runs ``sessions list`` shows without ``--all``: the latest ones.
RECENT_UNNAMED = 5

_Info = TypeVar("_Info", bound=SessionInfo)


class Place(Protocol):
    """Where sessions live: the store, and the environment that says where
    transcripts are. A :class:`~agy_host.runtime.host.Host` is one; the
    Python API makes a lighter one (no config, plugins or engine)."""

    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def state_dir(self) -> Path: ...
    @property
    def store(self) -> SessionStore: ...
    def warn(self, message: str) -> None: ...


class Listing(msgspec.Struct, kw_only=True):
    """What ``sessions list`` shows, oldest first, and how many unnamed runs it left out."""

    sessions: list[SessionInfo]
    hidden: int = 0


def conversation(binding: SessionBinding) -> BoundConversation:
    """A store binding as a program reads it (without the store's own bookkeeping)."""
    return msgspec.convert(binding, BoundConversation, from_attributes=True)


def transcript_of(place: Place, name: str) -> Path | None:
    """The session's transcript file, if it has one."""
    from agy_host.builtins.transcripts import transcript_path

    try:
        path = transcript_path(name, place.env)
    except ValueError:  # not a name a transcript can have
        return None
    return path if path.is_file() else None


def lookup(place: Place, name: str) -> SessionInfo | None:
    """Session ``name`` from its store file and its transcript; ``None`` when
    it has neither."""
    found = _read(place, name, SessionInfo)
    return None if found is None else found[0]


def detail(place: Place, name: str) -> SessionDetail | None:
    """Session ``name`` with its transcript, turn by turn; ``None`` when it has neither."""
    found = _read(place, name, SessionDetail)
    if found is None:
        return None
    info, lines = found
    info.entries = entries_of(lines)
    return info


def _read(place: Place, name: str, kind: type[_Info]) -> tuple[_Info, list[TranscriptEntry]] | None:
    from agy_host.builtins.transcripts import read_transcript, turns_of

    bindings = place.store.bindings_of(name)
    transcript = transcript_of(place, name)
    if not bindings and transcript is None:
        return None
    info = kind(name=name, named=generated_stamp(name) is None)
    for key, binding in sorted(bindings.items()):
        info.bindings[key] = conversation(binding)
        if binding.updated_at >= info.last_used:
            info.last_used = binding.updated_at
            info.cwd = binding.cwd or info.cwd
            info.agent = binding.agent or binding.engine or info.agent
    lines: list[TranscriptEntry] = []
    if transcript is not None:
        lines = read_transcript(name, place.env, warn=place.warn)
        info.turns = turns_of(lines)
        info.transcript = str(transcript)
        for line in lines:
            info.usage = add_usage(info.usage, line.usage)
        if lines and lines[-1].ts > info.last_used:
            info.last_used = lines[-1].ts
        if not info.cwd:
            info.cwd = next((e.cwd for e in reversed(lines) if e.cwd), "")
        if not info.agent:
            info.agent = next((e.agent or e.engine for e in reversed(lines) if e.agent or e.engine), "")
    return info, lines


def entries_of(lines: list[TranscriptEntry]) -> list[SessionEntry]:
    """A transcript's lines (a user line, its tool lines, an assistant line
    per turn) as one entry per turn. A turn whose user line was lost (a torn
    line, skipped) keeps its answer with an empty prompt."""
    entries: list[SessionEntry] = []
    open_: SessionEntry | None = None
    for line in lines:
        if line.role == "user" or open_ is None:
            open_ = SessionEntry(
                time=line.ts,
                prompt=line.text if line.role == "user" else "",
                engine=line.engine,
                agent=line.agent,
                conversation_id=line.conversation_id,
                cwd=line.cwd,
            )
            entries.append(open_)
        if line.role == "tool":
            open_.tools.append(HostToolUse(name=line.tool, args=dict(line.args)))
        elif line.role == "assistant":
            open_.time, open_.response = line.ts, line.text
            open_.stop_reason, open_.error = line.stop_reason, line.error
            open_.usage, open_.duration_s = line.usage, line.duration_s
            open_.conversation_id = line.conversation_id
            open_ = None
    return entries


def every_name(place: Place) -> set[str]:
    """Every session with a binding or a transcript (file names only: no
    file is read for a generated name)."""
    from agy_host.builtins.transcripts import list_transcripts

    return set(place.store.names()) | set(list_transcripts(place.env))


def matches(info: SessionInfo, cwd: str | None, agent: str | None) -> bool:
    """``--cwd DIR``: the session ran in DIR or below it; ``--agent TEXT``:
    its agent or engine contains TEXT (any case). Any binding may match."""
    if cwd is not None:
        places = {info.cwd, *(b.cwd for b in info.bindings.values())} - {""}
        if not any(place == cwd or place.startswith(cwd.rstrip("/") + "/") for place in places):
            return False
    if agent is not None:
        wanted = agent.lower()
        labels = {info.agent, *(b.agent for b in info.bindings.values()), *(b.engine for b in info.bindings.values())}
        if not any(wanted in label.lower() for label in labels if label):
            return False
    return True


def listing(place: Place, *, everything: bool = False, cwd: str | None = None, agent: str | None = None) -> Listing:
    """The sessions ``sessions list`` shows: every named one and the latest
    :data:`RECENT_UNNAMED` unnamed ones (``everything``: all), narrowed by
    the filters. Without a filter only the sessions shown are read; the
    latest unnamed runs are known by their names (they hold the time)."""
    names = every_name(place)
    named = [n for n in names if generated_stamp(n) is None]
    unnamed = sorted((n for n in names if generated_stamp(n) is not None), key=_newest_first, reverse=True)
    narrowing = cwd is not None or agent is not None
    looked_at = unnamed if everything or narrowing else unnamed[:RECENT_UNNAMED]
    infos = [i for n in named + looked_at if (i := lookup(place, n)) is not None and matches(i, cwd, agent)]
    hidden = len(unnamed) - len(looked_at)
    if not everything:
        runs = sorted((i for i in infos if not i.named), key=lambda i: _newest_first(i.name), reverse=True)
        left_out = {i.name for i in runs[RECENT_UNNAMED:]}
        hidden += len(left_out)
        infos = [i for i in infos if i.name not in left_out]
    return Listing(sessions=sorted(infos, key=lambda i: (i.last_used, i.name)), hidden=hidden)


def _newest_first(name: str) -> tuple[str, str]:
    """An unnamed run's order: the time in its name (to the second), then the
    name. A filtered and an unfiltered listing pick the same latest runs
    (two runs started in one second were picked apart: one by the file
    order, the other by the time of last use)."""
    return generated_stamp(name) or "", name


def where_to(cwd: str | os.PathLike[str] | None) -> str | None:
    """``--cwd``'s directory as the store records one (absolute, resolved)."""
    return None if cwd is None else str(Path(os.path.expanduser(cwd)).resolve())


def turn_running(place: Place, info: SessionInfo) -> str | None:
    """Who runs a turn on one of the session's conversations now (the turn
    lock's holder, :mod:`agy_host.runtime.turn_lock`), or ``None``. Such a
    turn writes its binding and transcript back when it ends, so removing
    the session under it would not remove it."""
    from agy_host.runtime.turn_lock import holder_now, lock_path

    for key in info.bindings:
        holder = holder_now(lock_path(place.state_dir, key))
        if holder is not None:
            return holder
    return None


def remove(place: Place, name: str, *, keys: list[str] | None = None) -> tuple[int, bool]:
    """Remove session ``name``: every binding and its transcript; with
    ``keys``, those bindings only (the transcript stays). How many bindings
    went, and whether a transcript did."""
    from agy_host.builtins.transcripts import delete_transcript

    if keys is not None:
        return sum(place.store.delete(key) for key in keys), False
    return place.store.remove_session(name), delete_transcript(name, place.env)


def adopt_fork(place: Place, source: str, target: str, *, key: str, binding: SessionBinding, forked_from: str) -> None:
    """Make ``target`` the session of a conversation the agent forked from
    ``forked_from`` (``source``'s, on store key ``key``'s engine): its binding,
    and ``source``'s transcript, whose turns in ``forked_from`` now read as
    the fork's (the agent copied them into it, so the context digest must
    not send them again); turns on other engines stay as they were."""
    from agy_host.builtins.transcripts import append_entries, read_transcript

    lines = read_transcript(source, place.env, warn=place.warn)
    if lines:
        copied = [
            msgspec.structs.replace(line, conversation_id=binding.conversation_id)
            if line.conversation_id == forked_from
            else line
            for line in lines
        ]
        append_entries(target, copied, place.env)
    place.store.set(key, binding)


__all__ = [
    "RECENT_UNNAMED",
    "Listing",
    "Place",
    "adopt_fork",
    "conversation",
    "detail",
    "entries_of",
    "every_name",
    "listing",
    "lookup",
    "matches",
    "remove",
    "transcript_of",
    "turn_running",
    "where_to",
]
