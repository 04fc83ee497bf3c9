"""What a program can read of its open session: :class:`SessionStatus`
(``s.info``) and the usage its turns added up to (``s.usage``).

A program that switches models mid-session or runs a long loop needs to
know where the session stands without keeping its own books: which model
the next turn uses, which conversation it continues, whether its agent is
warm, and what the turns so far cost (:func:`add_usage`, shared with the
usage of a stored session, :class:`~agy_host.contract.sessions.SessionInfo`).
"""

from __future__ import annotations

import msgspec

from agy_host.contract.sessions import add_usage  # its home since sessions are read from code too


class SessionStatus(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Where an open session stands (``s.info``); ``None``: not known (the
    config, or the agent's own default, decides)."""

    name: str
    engine: str
    #: The agent command or profile the session was opened with (``agent=``).
    agent: str | None = None
    #: What the next turn asks for (``set_model`` and the others change them).
    model: str | None = None
    effort: str | None = None
    mode: str | None = None
    #: The permission policy's name (``callback`` for a Python callback).
    permissions: str | None = None
    #: The conversation the session is bound to, once a turn opened one.
    conversation_id: str | None = None
    #: The last turn ran on a warm agent that was alive before it (docs/sessions.md).
    warm: bool = False
    #: Turns this program ran on the session, and whether one runs now.
    turns: int = 0
    turn_running: bool = False


__all__ = ["SessionStatus", "add_usage"]
