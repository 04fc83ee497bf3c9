"""Host sessions from code: list, read, delete and fork the sessions that
``open_session``, ``run`` and ``agy-host run`` leave.

This is the store ``agy-host sessions list|show|rm`` works on, through
the same code (:mod:`agy_host.runtime.sessions_view`): a session listed
here is listed there, one deleted here is gone there.

``list_sessions``, ``get_session`` and ``delete_session`` are plain
functions, not coroutines, on purpose: each reads a small file per session
and its transcript, without a lock (a store file is replaced whole, a
transcript appended a turn at a time), and a deletion holds the store's
lock only for the milliseconds one file's rewrite takes. So they return at
once from a script, a notebook, or a trio or asyncio task alike, and an
``await`` would only add ceremony. ``fork_session`` asks the agent (it
starts one), so it is a coroutine, under trio or asyncio.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agy_host.api.errors import AgyHostError, EngineUnavailable, NotSupported, SessionNotFound, UsageError

if TYPE_CHECKING:
    from agy_host.contract.sessions import SessionDetail, SessionInfo
    from agy_host.runtime.store import SessionStore

log = logging.getLogger("agy_host")

#: How long the agent may take to start and answer ``session/fork``.
FORK_TIMEOUT_S = 60.0


class _Place:
    """Where sessions live for ``env`` (the store and the transcripts),
    without the config, plugins or engine a full host would load."""

    def __init__(self, env: Mapping[str, str] | None) -> None:
        from agy_host.config import state_dir

        self.env: Mapping[str, str] = os.environ if env is None else env
        self.state_dir = state_dir(self.env)
        self._store: SessionStore | None = None

    @property
    def store(self) -> SessionStore:
        if self._store is None:
            from agy_host.runtime.store import SessionStore

            self._store = SessionStore.in_state_dir(self.state_dir, warn=self.warn)
        return self._store

    def warn(self, message: str) -> None:
        log.warning(message)


def list_sessions(
    *,
    cwd: str | Path | None = None,
    agent: str | None = None,
    all: bool = False,  # the CLI's --all, by its name
    env: Mapping[str, str] | None = None,
) -> list[SessionInfo]:
    """The host sessions, oldest first, as ``agy-host sessions list`` shows
    them: every named session and the 5 latest unnamed runs (``all=True``:
    every one). ``cwd`` keeps the sessions run in that directory or below
    it, ``agent`` those whose agent or engine contains the text (any case).
    Each :class:`~agy_host.contract.sessions.SessionInfo` has the name, the
    ``engines`` and ``conversation_ids`` (per store key, in ``bindings``),
    ``cwd``, ``last_used``, ``turns`` and ``usage``. ``env`` replaces
    ``os.environ`` (where the state lives), as in :func:`open_session`."""
    from agy_host.runtime.sessions_view import listing, where_to

    return listing(_Place(env), everything=all, cwd=where_to(cwd), agent=agent).sessions


def get_session(name: str, *, env: Mapping[str, str] | None = None) -> SessionDetail:
    """Session ``name`` with its transcript: ``entries``, one per turn
    (prompt, response, usage, time, stop reason, host tools called), oldest
    first. :class:`SessionNotFound` when there is no such session."""
    from agy_host.runtime.sessions_view import detail

    found = detail(_Place(env), name)
    if found is None:
        raise SessionNotFound(f"no such session {name!r}")
    return found


def delete_session(name: str, *, engine: str | None = None, env: Mapping[str, str] | None = None) -> None:
    """Remove session ``name``: its conversation bindings and its transcript,
    as ``agy-host sessions rm`` does (``engine``: only that engine's
    bindings; the transcript stays). The agents' own copies of the
    conversations are theirs and stay. :class:`SessionNotFound` when there
    is no such session (or no binding on ``engine``); an
    :class:`AgyHostError` with exit code 7 while a turn runs on the session
    (it would write the session back when it ends)."""
    from agy_host.exit_codes import ExitCode
    from agy_host.runtime.sessions_view import lookup, remove, turn_running

    place = _Place(env)
    info = lookup(place, name)
    if info is None:
        raise SessionNotFound(f"no such session {name!r}")
    keys = None if engine is None else [k for k, b in info.bindings.items() if b.engine == engine]
    if keys == []:
        raise SessionNotFound(f"session {name!r} has no conversation on engine {engine!r}")
    holder = turn_running(place, info)
    if holder is not None:
        raise AgyHostError(
            f"session {name!r} is running a turn ({holder}); delete it once that ends",
            exit_code=ExitCode.SESSION_BUSY,
        )
    remove(place, name, keys=keys)


async def fork_session(
    name: str,
    new_name: str | None = None,
    *,
    engine: str | None = None,
    agent: str | None = None,
    env: Mapping[str, str] | None = None,
) -> SessionInfo:
    """A new session, ``new_name`` (default: a generated ``fork-…`` name),
    whose conversation is a copy the agent made of session ``name``'s: both
    go on from the same history, apart. Its transcript starts as a copy of
    ``name``'s. ``engine`` and ``agent`` pick the conversation as
    :func:`open_session` does (the one ``open_session(session=name, ...)``
    would continue).

    Only an agent that offers ``session/fork`` can (ACP, unstable; the
    agent says so in its ``initialize`` answer): elsewhere
    :class:`NotSupported`, naming the engine or agent. The agent is started
    for the question and ends after it. :class:`SessionNotFound` when
    ``name`` has no conversation there; :class:`UsageError` when
    ``new_name`` exists already."""
    from agy_host.api._loops import in_trio

    return await in_trio(lambda: _fork(name, new_name, engine, agent, env), "fork_session()")


async def _fork(
    name: str, new_name: str | None, engine_name: str | None, agent: str | None, env: Mapping[str, str] | None
) -> SessionInfo:
    import msgspec
    import trio

    from agy_host.engine.base import EngineError, NotOffered
    from agy_host.runtime.host import Host
    from agy_host.runtime.naming import generate_session_name, session_name_problem
    from agy_host.runtime.sessions_view import adopt_fork, lookup
    from agy_host.runtime.store import utc_now

    target = new_name or generate_session_name("fork")
    problem = session_name_problem(target)
    if problem:
        raise UsageError(problem)
    try:
        host = Host(env=env, engine=engine_name, agent=agent, warn=log.warning)
        engine = host.load_engine()
    except EngineError as exc:
        raise EngineUnavailable(str(exc)) from exc
    try:
        source = host.store.get(engine.store_key(name))
        if source is None:
            known = lookup(host, name)
            where = f"it has {', '.join(known.bindings) or 'no conversation'}" if known else "no such session"
            raise SessionNotFound(
                f"session {name!r} has no conversation on engine {engine.ENGINE_NAME!r} ({where}); "
                "pass the engine= and agent= it ran with"
            )
        if lookup(host, target) is not None:
            raise UsageError(f"session {target!r} exists already; fork into a new name")
        try:
            with trio.fail_after(FORK_TIMEOUT_S):
                forked = await engine.fork_conversation(source.conversation_id, source.cwd or os.getcwd())
        except NotOffered as exc:
            raise NotSupported(str(exc)) from exc
        except trio.TooSlowError:
            raise AgyHostError(f"the agent did not answer session/fork within {FORK_TIMEOUT_S:g}s") from None
        except EngineError as exc:  # the agent could not be started, or failed the request
            raise EngineUnavailable(str(exc)) from exc
        binding = msgspec.structs.replace(source, conversation_id=forked, updated_at=utc_now())
        adopt_fork(
            host, name, target, key=engine.store_key(target), binding=binding, forked_from=source.conversation_id
        )
        info = lookup(host, target)
        assert info is not None  # just bound
        return info
    finally:
        host.close()


__all__ = ["FORK_TIMEOUT_S", "delete_session", "fork_session", "get_session", "list_sessions"]
