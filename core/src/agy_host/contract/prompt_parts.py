"""Prompt assembly inputs: the context a prompt-parts hook sees, and the
fragments it returns; and the markers around the host's system block, which
an engine that carries the system prompt out of band (the harness) looks for
to move the block out of the first message."""

from __future__ import annotations

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


class PromptContext(msgspec.Struct, kw_only=True):
    session: str
    engine: str
    cwd: str
    #: True when no agent conversation is bound yet (system parts are sent).
    new_conversation: bool
    user_text: str
    #: The effective :class:`~agy_host.config.Config` of the host running
    #: the turn (``None`` only when a test builds a context by hand).
    config: Any = None


class PromptPart(msgspec.Struct, kw_only=True, omit_defaults=True):
    text: str
    #: ``system``: once per agent conversation, before everything;
    #: ``context``: host context (digest), a resource block on ACP;
    #: ``before`` / ``after``: inline around the user's text.
    where: Literal["system", "context", "before", "after"] = "before"
    order: int = 0
    #: For ``context`` parts: the resource URI.
    uri: str = ""


__all__ = ["HOST_URI_PREFIX", "PROMPT_SEPARATOR", "SYSTEM_END", "SYSTEM_PREAMBLE", "PromptContext", "PromptPart"]
