"""The context digest: what the host session did that this agent did not see.

An agent remembers its own turns; it knows nothing of the turns the same
host session ran on another engine, of host tool calls made there, or of
user messages it never received. The digest summarises exactly those, from
the session's transcript, into the next prompt (a resource block on ACP,
inline on stream-json). It is off by default (``[prompt] digest``): it
changes every turn, which defeats the agent's prompt cache.

The window starts after the last plain turn of the agent conversation the
turn continues (a new conversation has seen nothing): a slash command went
to the agent alone, without a digest, so what came before it is still
unseen; the conversation's own entries are left out of the window. The
truncation rules are the original's: the newest items are kept whole while
they fit the cap; when not even the newest fits, its tail is kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from agy_host.builtins.transcripts import TranscriptEntry
from agy_host.contract.prompt_parts import is_slash_command

DIGEST_MAX_CHARS = 8000
TRUNCATED = "[truncated]"
#: Between digest items.
ITEM_SEPARATOR = "\n\n"
DIGEST_PREAMBLE = (
    "[Context from the broader agy-host session that this agent conversation has not seen: "
    "turns that ran on other engines or agents, the host tools called there, and earlier user "
    "messages. Your own turns are already in your history. Use this for continuity only; "
    "the user's request follows.]"
)


def unseen_start(entries: Sequence[TranscriptEntry], conversation_id: str | None) -> int:
    """Index of the first entry the conversation has not seen: the one after
    its last plain turn (a turn's entries start with its user entry)."""
    start = 0
    if conversation_id is None:
        return start
    command = False
    for i, entry in enumerate(entries):
        if entry.role == "user":
            command = is_slash_command(entry.text)
        if entry.conversation_id == conversation_id and not command:
            start = i + 1
    return start


def _item(entry: TranscriptEntry) -> str | None:
    text = entry.text.strip()
    if entry.role == "assistant":
        if not text:
            return None
        source = entry.engine + (f" ({entry.agent})" if entry.agent and entry.agent != entry.engine else "")
        return f"[assistant turn from {source or 'another engine'}]\n{text}"
    if entry.role == "user":
        return f"[earlier user message]\n{text}" if text else None
    else:  # tool
        head = f"[tool result: {entry.tool or '?'}]" + (" (error)" if entry.is_error else "")
        return f"{head}\n{text or '(no text output)'}"


def digest_items(entries: Sequence[TranscriptEntry]) -> list[str]:
    return [item for item in map(_item, entries) if item is not None]


def truncate(items: Sequence[str], max_chars: int = DIGEST_MAX_CHARS) -> str:
    """Join ``items``; over ``max_chars`` keep the newest whole items that fit
    (``[truncated]`` first), else the tail of the newest. 0 disables the cap."""
    joined = ITEM_SEPARATOR.join(items)
    if max_chars <= 0 or len(joined) <= max_chars or not items:
        return joined
    kept: list[str] = []
    used = 0
    for item in reversed(items):
        cost = len(item) + (len(ITEM_SEPARATOR) if kept else 0)
        if used + cost > max_chars:
            break
        kept.append(item)
        used += cost
    if kept:
        return f"{TRUNCATED}\n" + ITEM_SEPARATOR.join(reversed(kept))
    room = max_chars - len(TRUNCATED) - 1
    if room <= 0:
        return ""
    return f"{TRUNCATED}\n" + items[-1][-room:]


def build_digest(
    entries: Sequence[TranscriptEntry], conversation_id: str | None, max_chars: int = DIGEST_MAX_CHARS
) -> str:
    """The digest body for a turn continuing ``conversation_id`` (``None``:
    a new conversation); ``""`` when there is nothing it has not seen."""
    start = unseen_start(entries, conversation_id)
    window = [e for e in entries[start:] if conversation_id is None or e.conversation_id != conversation_id]
    return truncate(digest_items(window), max_chars)


def digest_text(body: str) -> str:
    """The text that reaches the agent: preamble, blank line, body."""
    return f"{DIGEST_PREAMBLE}\n\n{body}"


__all__ = [
    "DIGEST_MAX_CHARS",
    "DIGEST_PREAMBLE",
    "TRUNCATED",
    "build_digest",
    "digest_items",
    "digest_text",
    "truncate",
    "unseen_start",
]
