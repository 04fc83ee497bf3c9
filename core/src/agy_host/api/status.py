"""What a program can read of its open session: :class:`SessionStatus`
(``s.info``) and the usage its turns added up to (``s.usage``).

A program that switches models mid-session or runs a long loop needs to
know where the session stands without keeping its own books: which model
the next turn uses, which conversation it continues, whether its agent is
warm, and what the turns so far cost.
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


__all__ = ["SessionStatus", "add_usage"]
