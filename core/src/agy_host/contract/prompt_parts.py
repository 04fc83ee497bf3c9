"""Prompt assembly inputs: the context a prompt-parts hook sees, and the
fragments it returns; the markers around the host's system block, which
an engine that carries the system prompt out of band (the harness) looks for
to move the block out of the first message; and what counts as a slash
command, which goes to the agent alone and verbatim."""

from __future__ import annotations

import re
from typing import Any, Literal

import msgspec

SYSTEM_PREAMBLE = (
    "[System prompt from agy-host, the program that runs this conversation: the instructions "
    "below (the host's system prompt and the project's AGENTS.md notes) apply to the whole "
    "conversation. They are sent once, with its first message.]"
)
SYSTEM_END = "[END SYSTEM PROMPT]"
#: Between the system block, the host context and the user's part of a prompt.
PROMPT_SEPARATOR = "\n\n---\n\n"
#: Host resources (the context digest) have URIs under this prefix; an
#: engine that inlines them sends their text alone, as the others do.
HOST_URI_PREFIX = "urn:agy-host:"

_SLASH_COMMAND = re.compile(r"/[^\s/]+(?:\s|$)")


def is_slash_command(text: str) -> bool:
    """True when ``text`` starts with a slash command (``/context``,
    ``/compact keep the tests``): a ``/``, a name without spaces or slashes,
    then a space or the end. Agents run a prompt as a command only when its
    first text starts that way, so the host sends such a prompt alone and
    verbatim; a path (``/etc/hosts …``) is not a command."""
    return _SLASH_COMMAND.match(text) is not None


class PromptContext(msgspec.Struct, kw_only=True):
    """What a prompt-part plugin is told about the prompt it may add to (``agy_host_prompt_parts``)."""

    session: str
    engine: str
    cwd: str
    #: True when this prompt starts the agent conversation as far as prompt
    #: parts go, so ``system`` parts are sent with it: no conversation is
    #: bound yet, or only slash commands have gone to it so far.
    new_conversation: bool
    user_text: str
    #: True when ``user_text`` is a slash command (:func:`is_slash_command`):
    #: the prompt goes to the agent alone and verbatim, so no part returned
    #: for it is put into it (an engine that carries the system block out of
    #: band, the harness, still takes the ``system`` parts). The next plain
    #: prompt gets the parts, with ``new_conversation`` still true when the
    #: ``system`` parts were held back.
    slash_command: bool = False
    #: The agent conversation the prompt goes to, when one is bound.
    conversation_id: str | None = None
    #: The effective :class:`~agy_host.config.Config` of the host running
    #: the turn (``None`` only when a test builds a context by hand).
    config: Any = None


class PromptPart(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Text a plugin adds to a prompt, and where it goes."""

    text: str
    #: ``system``: once per agent conversation, before everything;
    #: ``context``: host context (digest), a resource block on ACP;
    #: ``before`` / ``after``: inline around the user's text.
    where: Literal["system", "context", "before", "after"] = "before"
    order: int = 0
    #: For ``context`` parts: the resource URI.
    uri: str = ""


__all__ = [
    "HOST_URI_PREFIX",
    "PROMPT_SEPARATOR",
    "SYSTEM_END",
    "SYSTEM_PREAMBLE",
    "PromptContext",
    "PromptPart",
    "is_slash_command",
]
