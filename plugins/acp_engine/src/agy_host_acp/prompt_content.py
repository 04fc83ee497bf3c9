"""agy-host's prompt blocks as ACP content, within what the agent advertised.

ACP lets an agent refuse images and embedded resources
(``promptCapabilities``); sending one anyway gets a vague ``-32602`` or, on
some agents, silence. Refusing here names the capability, before the turn
starts and before anything is sent.
"""

from __future__ import annotations

from typing import Any

from agy_host.contract.prompt import ImageBlock, PromptBlock, ResourceBlock, TextBlock
from agy_host_acp import schema as s


class UnsupportedContent(Exception):
    """A prompt block the agent did not advertise (``promptCapabilities``)."""


def acp_content(blocks: list[PromptBlock], caps: s.PromptCapabilities, label: str) -> list[dict[str, Any]]:
    """The ``session/prompt`` content for ``blocks``; ``label`` names the agent in the refusal."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            out.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageBlock):
            if not caps.image:
                raise UnsupportedContent(f"{label} does not accept images (promptCapabilities.image)")
            out.append({"type": "image", "data": block.data, "mimeType": block.mime_type})
        elif isinstance(block, ResourceBlock):
            if not caps.embedded_context:
                raise UnsupportedContent(
                    f"{label} does not accept embedded resources (promptCapabilities.embeddedContext)"
                )
            out.append(
                {
                    "type": "resource",
                    "resource": {"uri": block.uri, "mimeType": block.mime_type, "text": block.text},
                }
            )
    return out


__all__ = ["UnsupportedContent", "acp_content"]
