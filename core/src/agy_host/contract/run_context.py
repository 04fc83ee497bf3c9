"""What a plugin is told about the command and each turn, instead of reading
process globals.

:class:`RunContext` reaches ``agy_host_configure`` (historic: a plugin
registered later, an engine's hooks, still gets it) once a host knows its
effective config and environment. :class:`TurnContext` reaches
``agy_host_turn_started`` when a turn is about to be sent to the agent.
Both carry the environment the host was *given* (a Python program may pass
its own), so a plugin that derives paths from it agrees with the host.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from agy_host.contract.interactions import QuestionAsker, nobody_answers


def _no_warning(message: str) -> None:
    """The default for a context built without a host (tests, tools)."""


class RunContext(msgspec.Struct, kw_only=True, frozen=True):
    """What plugins' hooks get about the command: the effective config, the environment and the host's callbacks."""

    #: The effective :class:`~agy_host.config.Config` (file, environment and
    #: command-line overrides applied).
    config: Any
    env: Mapping[str, str]
    #: agy-host's state directory under that environment.
    state_dir: Path
    #: The host's interaction broker: a plugin that needs an answer from the
    #: user (a tool like ``ask_user``) asks here, so answer rules, the
    #: program's callback and the terminal all apply (:mod:`agy_host.contract.interactions`).
    ask_question: QuestionAsker = nobody_answers


class TurnContext(msgspec.Struct, kw_only=True, frozen=True):
    """What the turn-start and turn-end hooks get about one turn."""

    session: str
    engine: str
    cwd: str
    #: The user's own text (attachments and host parts not included).
    user_text: str
    #: True when no agent conversation is bound yet.
    new_conversation: bool
    config: Any
    env: Mapping[str, str]
    #: Whether anyone in this command draws diffs of edits (a terminal
    #: renderer does; ``--format json`` and programs do not): a plugin that
    #: pays for a "before" snapshot at turn start skips it otherwise.
    diffs_wanted: bool = False
    #: Show the user a warning (the terminal, the Python API's events). Call
    #: it on the host's loop (from a hook), not from a thread of your own.
    warn: Callable[[str], None] = _no_warning


__all__ = ["RunContext", "TurnContext"]
