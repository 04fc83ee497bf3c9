"""Host sessions as ``sessions list``, ``show``, ``rm`` and chat's
``/session`` see them: a session's bindings (the store) and its transcript,
found by name.

Finding one session reads that session's store file and transcript only;
nothing here reads the whole history unless the command asks for every
session (``sessions list --all``, a filter). Unnamed runs (a generated name,
:func:`agy_host.runtime.naming.generated_stamp`) pile up, so the default
listing shows the named sessions and only the latest few unnamed ones.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from agy_host.runtime.naming import generated_stamp
from agy_host.runtime.store import SessionBinding, session_name

if TYPE_CHECKING:
    from agy_host.runtime.host import Host

#: Unnamed runs ``sessions list`` shows without ``--all``: the latest ones.
RECENT_UNNAMED = 5


class SessionInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One host session as ``list`` and ``show`` report it."""

    name: str
    #: False for an unnamed run (a generated name).
    named: bool
    bindings: dict[str, SessionBinding] = msgspec.field(default_factory=dict)
    last_used: str = ""
    cwd: str = ""
    agent: str = ""
    turns: int = 0
    transcript: str = ""


class Listing(msgspec.Struct, kw_only=True):
    """What ``sessions list`` shows, oldest first, and how many unnamed runs it left out."""

    sessions: list[SessionInfo]
    hidden: int = 0


def transcript_of(host: Host, name: str) -> Path | None:
    """The session's transcript file, if it has one."""
    from agy_host.builtins.transcripts import transcript_path

    try:
        path = transcript_path(name, host.env)
    except ValueError:  # not a name a transcript can have
        return None
    return path if path.is_file() else None


def lookup(host: Host, name: str) -> SessionInfo | None:
    """Session ``name`` from its store file and its transcript; ``None`` when
    it has neither."""
    from agy_host.builtins.transcripts import read_transcript, turns_of

    bindings = host.store.bindings_of(name)
    transcript = transcript_of(host, name)
    if not bindings and transcript is None:
        return None
    info = SessionInfo(name=name, named=generated_stamp(name) is None)
    for key, binding in sorted(bindings.items()):
        info.bindings[key] = binding
        if binding.updated_at >= info.last_used:
            info.last_used = binding.updated_at
            info.cwd = binding.cwd or info.cwd
            info.agent = binding.agent or binding.engine or info.agent
    if transcript is not None:
        entries = read_transcript(name, host.env)
        info.turns = turns_of(entries)
        info.transcript = str(transcript)
        if entries and entries[-1].ts > info.last_used:
            info.last_used = entries[-1].ts
        if not info.cwd:
            info.cwd = next((e.cwd for e in reversed(entries) if e.cwd), "")
        if not info.agent:
            info.agent = next((e.agent or e.engine for e in reversed(entries) if e.agent or e.engine), "")
    return info


def every_name(host: Host) -> set[str]:
    """Every session with a binding or a transcript (file names only: no
    file is read for a generated name)."""
    from agy_host.builtins.transcripts import list_transcripts

    return set(host.store.names()) | set(list_transcripts(host.env))


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


def listing(host: Host, *, everything: bool = False, cwd: str | None = None, agent: str | None = None) -> Listing:
    """The sessions ``sessions list`` shows: every named one and the latest
    :data:`RECENT_UNNAMED` unnamed ones (``everything``: all), narrowed by
    the filters. Without a filter only the sessions shown are read; the
    latest unnamed runs are known by their names (they hold the time)."""
    names = every_name(host)
    named = [n for n in names if generated_stamp(n) is None]
    unnamed = sorted(
        (n for n in names if generated_stamp(n) is not None), key=lambda n: generated_stamp(n) or "", reverse=True
    )
    narrowing = cwd is not None or agent is not None
    looked_at = unnamed if everything or narrowing else unnamed[:RECENT_UNNAMED]
    infos = [i for n in named + looked_at if (i := lookup(host, n)) is not None and matches(i, cwd, agent)]
    hidden = len(unnamed) - len(looked_at)
    if not everything:
        runs = sorted((i for i in infos if not i.named), key=lambda i: i.last_used, reverse=True)
        left_out = {i.name for i in runs[RECENT_UNNAMED:]}
        hidden += len(left_out)
        infos = [i for i in infos if i.name not in left_out]
    return Listing(sessions=sorted(infos, key=lambda i: i.last_used), hidden=hidden)


def where_to(cwd: str | None) -> str | None:
    """``--cwd``'s directory as the store records one (absolute, resolved)."""
    return None if cwd is None else str(Path(os.path.expanduser(cwd)).resolve())


__all__ = [
    "RECENT_UNNAMED",
    "Listing",
    "SessionInfo",
    "every_name",
    "listing",
    "lookup",
    "matches",
    "session_name",
    "transcript_of",
    "where_to",
]
