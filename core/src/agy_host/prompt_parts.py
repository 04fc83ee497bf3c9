"""Prompt assembly inputs: the context a prompt-parts hook sees, and the
fragments it returns."""

from __future__ import annotations

from typing import Literal

import msgspec


class PromptContext(msgspec.Struct, kw_only=True):
    session: str
    engine: str
    cwd: str
    #: True when no agent conversation is bound yet (system parts are sent).
    new_conversation: bool
    user_text: str


class PromptPart(msgspec.Struct, kw_only=True, omit_defaults=True):
    text: str
    #: ``system``: once per agent conversation, before everything;
    #: ``context``: host context (digest), a resource block on ACP;
    #: ``before`` / ``after``: inline around the user's text.
    where: Literal["system", "context", "before", "after"] = "before"
    order: int = 0
    #: For ``context`` parts: the resource URI.
    uri: str = ""


__all__ = ["PromptContext", "PromptPart"]
