"""The per-turn choices a command or a program makes (``--model``, ``--mode``,
budgets, ``--no-wait``...): a :class:`TurnSettings` goes with each turn
through the runtime, the keeper's wire and the unstarted-turn paths."""

from __future__ import annotations

import msgspec


class TurnSettings(msgspec.Struct, kw_only=True):
    """Per-turn choices; ``None`` means the config decides."""

    model: str | None = None
    effort: str | None = None
    mode: str | None = None
    skip_permissions: bool | None = None
    timeout_s: float | None = None
    inactivity_s: float | None = None
    #: More workspace roots for the agent (absolute paths; ``--add-dir``).
    additional_directories: list[str] = msgspec.field(default_factory=list)
    #: Per-turn budgets (``--max-tokens``, ``--max-cost``); ``None``: the config's.
    max_tokens: int | None = None
    max_cost: float | None = None
    #: ``--resume``: the session's conversation must be continued, or the turn fails (exit 4).
    resume: bool = False
    #: Wait while another command runs a turn on the session; ``False``
    #: (``--no-wait``): fail at once with error kind ``busy`` (exit 7).
    wait: bool = True


__all__ = ["TurnSettings"]
