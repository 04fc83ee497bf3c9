"""Host sessions as a program reads them: what ``agy_host.list_sessions()``
and ``get_session()`` return, and what ``agy-host sessions list|show
--format json`` print (one shape for both, so a script may switch between
them).

A host session is a name. It owns, per engine (and per agent on ACP), a
binding to an agent conversation, and one transcript of the turns it ran.
These are plain values read from the store's files, no I/O here: the
reading is :mod:`agy_host.runtime.sessions_view`'s.
"""

from __future__ import annotations

import msgspec

from agy_host.contract.events import UsageCounts

_SUMMED = (
    "input_tokens",
    "output_tokens",
    "thinking_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "total_tokens",
)


class BoundConversation(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The agent conversation a session continues on one engine (its
    binding in the session store): ``run --session NAME`` on that engine
    resumes ``conversation_id``."""

    conversation_id: str
    #: The engine (``acp``, ``stream-json``, ``harness``) and, on ACP, the
    #: agent command or profile: a conversation id means nothing to another agent.
    engine: str = ""
    agent: str = ""
    cwd: str = ""
    #: ISO 8601 UTC time of the last turn that touched it.
    updated_at: str = ""


class SessionInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One host session, as ``agy_host.list_sessions()`` and ``agy-host
    sessions list`` report it."""

    name: str
    #: False for an unnamed run (a generated name such as ``py-20261202-152400-a1b2``).
    named: bool
    #: Store key (``NAME@acp``, ``NAME@acp:<agent>``, ``NAME`` for stream-json) -> its conversation.
    bindings: dict[str, BoundConversation] = msgspec.field(default_factory=dict)
    #: ISO 8601 UTC time of the last turn, whichever engine ran it.
    last_used: str = ""
    #: The working directory and agent of the latest conversation.
    cwd: str = ""
    agent: str = ""
    #: Turns in the transcript.
    turns: int = 0
    #: What the transcript's turns add up to (:func:`add_usage`); ``None``
    #: when no agent reported usage (turns before agy-host recorded it count as none).
    usage: UsageCounts | None = None
    #: The transcript file, when there is one.
    transcript: str = ""

    @property
    def engines(self) -> list[str]:
        """The engines the session has a conversation on, sorted."""
        return sorted({b.engine for b in self.bindings.values() if b.engine})

    @property
    def conversation_ids(self) -> dict[str, str]:
        """Store key -> the agent's conversation id."""
        return {key: b.conversation_id for key, b in self.bindings.items()}


class HostToolUse(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A host tool the agent called during a turn (its result went to that agent)."""

    name: str
    args: dict[str, object] = msgspec.field(default_factory=dict)


class SessionEntry(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One turn of a session's transcript: the prompt, the answer, what it cost."""

    #: ISO 8601 UTC time the turn ended.
    time: str
    prompt: str = ""
    response: str = ""
    #: How the turn ended (``end_turn``, ``aborted``, ``error``...) and the error, if any.
    stop_reason: str = ""
    error: str = ""
    #: The turn's usage as the agent reported it (``None``: not reported, or
    #: a turn recorded before agy-host kept usage in transcripts).
    usage: UsageCounts | None = None
    duration_s: float | None = None
    engine: str = ""
    agent: str = ""
    conversation_id: str | None = None
    cwd: str = ""
    tools: list[HostToolUse] = msgspec.field(default_factory=list)


class SessionDetail(SessionInfo, kw_only=True, omit_defaults=True):
    """A session with its transcript (``agy_host.get_session(name)``)."""

    #: Every turn, oldest first.
    entries: list[SessionEntry] = msgspec.field(default_factory=list)


def add_usage(total: UsageCounts | None, turn: UsageCounts | None) -> UsageCounts | None:
    """``total`` plus one turn's usage: token counts and costs (in one
    currency) add up; the context window is the latest turn's."""
    if turn is None:
        return total
    if total is None:
        return msgspec.structs.replace(turn)
    summed = {f: _plus(getattr(total, f), getattr(turn, f)) for f in _SUMMED}
    cost, currency = total.cost_amount, total.cost_currency
    if turn.cost_amount is not None and (currency is None or turn.cost_currency in (None, currency)):
        cost, currency = (cost or 0.0) + turn.cost_amount, currency or turn.cost_currency
    return UsageCounts(
        **summed,
        context_used=turn.context_used if turn.context_used is not None else total.context_used,
        context_size=turn.context_size if turn.context_size is not None else total.context_size,
        cost_amount=cost,
        cost_currency=currency,
    )


def _plus(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else a + b


__all__ = ["BoundConversation", "HostToolUse", "SessionDetail", "SessionEntry", "SessionInfo", "add_usage"]
