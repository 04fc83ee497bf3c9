"""A host prompt as the harness's ``userInput`` parts, and the host's system
block taken out of it.

The turn layer opens a new conversation's prompt with the host's system
block (the system prompt and AGENTS.md, byte-identical on every engine).
The harness takes instructions in its config instead, so this engine moves
the block there (appended to Antigravity's own, or replacing them) and sends
the rest as the user's input. Text goes as text, a file inline under its
URI, the host's own context (the digest) as its text alone, exactly as the
stream-json engine inlines it, and images as media.
"""

from __future__ import annotations

from typing import Any

from agy_host.contract.prompt import ImageBlock, PromptBlock, ResourceBlock, TextBlock
from agy_host.contract.prompt_parts import HOST_URI_PREFIX, PROMPT_SEPARATOR, SYSTEM_END, SYSTEM_PREAMBLE
from agy_host.engine.turn import TurnFailed


def split_system(blocks: list[PromptBlock]) -> tuple[str, list[PromptBlock]]:
    """(the system block or "", the other blocks). The block opens the
    prompt's text, which follows the host's context resources (the digest)."""
    texts = [(i, b) for i, b in enumerate(blocks) if isinstance(b, TextBlock)]
    if texts:
        i, first = texts[0]
        text = first.text
        if text.startswith(SYSTEM_PREAMBLE):
            end = text.find(SYSTEM_END)
            if end >= 0:
                cut = end + len(SYSTEM_END)
                block, rest = text[:cut], text[cut:]
                # the separator that joined the block to the rest goes with the block
                rest = rest[len(PROMPT_SEPARATOR) :] if rest.startswith(PROMPT_SEPARATOR) else rest.lstrip("\n")
                tail: list[PromptBlock] = [TextBlock(text=rest)] if rest.strip() else []
                return block, [*blocks[:i], *tail, *blocks[i + 1 :]]
    return "", list(blocks)


def user_parts(blocks: list[PromptBlock]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            if block.text:
                parts.append({"text": block.text})
        elif isinstance(block, ResourceBlock):
            host_context = block.uri.startswith(HOST_URI_PREFIX)
            parts.append({"text": block.text if host_context else f"[{block.uri}]\n{block.text}"})
        elif isinstance(block, ImageBlock):
            parts.append({"media": {"mimeType": block.mime_type, "data": block.data}})
    if not any(p.get("text", "").strip() or "media" in p for p in parts):
        raise TurnFailed("the prompt is empty", "usage")
    return parts


__all__ = ["split_system", "user_parts"]
