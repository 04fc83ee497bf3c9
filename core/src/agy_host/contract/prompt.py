"""Prompt content blocks: what a turn sends to an agent.

The blocks mirror ACP's ``ContentBlock`` (text, image, embedded resource) because
ACP is the richer dialect; the stream-json engine flattens them to text. An
engine refuses a block its agent did not advertise (``promptCapabilities``)
with a clear error rather than dropping it.
"""

from __future__ import annotations

import msgspec


class TextBlock(msgspec.Struct, tag_field="type", tag="text", kw_only=True):
    """Text of a prompt."""

    text: str


class ImageBlock(msgspec.Struct, tag_field="type", tag="image", kw_only=True):
    """An image of a prompt, sent only to agents that advertise images."""

    #: base64-encoded image bytes
    data: str
    mime_type: str


class ResourceBlock(msgspec.Struct, tag_field="type", tag="resource", kw_only=True, omit_defaults=True):
    """An embedded text resource (a file, or the host's context digest)."""

    uri: str
    text: str
    mime_type: str = "text/plain"


PromptBlock = TextBlock | ImageBlock | ResourceBlock


def prompt_text(blocks: list[PromptBlock]) -> str:
    """The text blocks joined, for engines and logs that only take text."""
    return "\n".join(b.text for b in blocks if isinstance(b, TextBlock))


__all__ = ["ImageBlock", "PromptBlock", "ResourceBlock", "TextBlock", "prompt_text"]
