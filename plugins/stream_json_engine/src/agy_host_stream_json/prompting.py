"""What agy's stdin can take, and the typed failure of a turn that cannot start.

agy's stream-json input is one text message per turn: text blocks are sent
as they are, embedded resources (a file, the host's context digest) are
inlined under their URI, and images are refused with a clear error rather
than dropped.
"""

from __future__ import annotations

from agy_host.contract.prompt import ImageBlock, PromptBlock, ResourceBlock, TextBlock
from agy_host.engine.turn import TurnFailed


def prompt_to_text(blocks: list[PromptBlock]) -> str:
    """agy's stdin takes text only: resources are inlined, images refused."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceBlock):
            parts.append(f"[{block.uri}]\n{block.text}")
        elif isinstance(block, ImageBlock):
            raise TurnFailed(
                "the stream-json engine cannot send images: agy's stream-json input takes text only "
                "(use `--engine acp` for images)",
                "usage",
            )
    text = "\n\n".join(p for p in parts if p)
    if not text.strip():
        raise TurnFailed("the prompt is empty", "usage")
    return text


__all__ = ["TurnFailed", "prompt_to_text"]
