"""Prompt assembly of a turn: the blocks the turn layer sends.

Split from :mod:`agy_host.runtime.turn_layer` (which sequences turns and parks) so
the rules that keep the agent's prompt cache warm are in one small place:
the system block first and byte-identical, host context as a resource
where the engine takes one, the user's text, then the user's other blocks.
A fresh turn that carries late tool results puts them before the user's text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agy_host.contract.prompt import PromptBlock, ResourceBlock, TextBlock, prompt_text
from agy_host.contract.prompt_parts import PROMPT_SEPARATOR, PromptPart
from agy_host.service.roundtrip_text import late_result_images, late_result_prompt

if TYPE_CHECKING:
    from agy_host.service.roundtrips import LateResult


def assemble_prompt(
    parts: Sequence[PromptPart],
    prompt: Sequence[PromptBlock],
    *,
    new_conversation: bool,
    resources: bool,
    uri_suffix: str = "0",
) -> list[PromptBlock]:
    """The blocks a turn sends: ``system`` parts (new conversations only),
    ``context`` parts as resources or inline, ``before``/``after`` around the
    user's text, then the user's non-text blocks in their order.

    The system block comes first and is never touched, so it stays
    byte-identical for the life of the agent conversation.
    """
    system = [p.text for p in parts if p.where == "system" and p.text] if new_conversation else []
    context = [p for p in parts if p.where == "context" and p.text]
    before = [p.text for p in parts if p.where == "before" and p.text]
    after = [p.text for p in parts if p.where == "after" and p.text]
    blocks: list[PromptBlock] = []
    sections: list[str] = []
    if system:
        sections.append("\n\n".join(system))
    if resources:
        for i, part in enumerate(context):
            # The suffix changes every turn so a de-duplicating agent cannot
            # serve a stale digest for a reused URI.
            blocks.append(ResourceBlock(uri=part.uri or f"urn:agy-host:context/{uri_suffix}/{i}", text=part.text))
    elif context:
        sections.append("\n\n".join(p.text for p in context))
    user_text = "\n\n".join(t for t in [*before, prompt_text(list(prompt)), *after] if t)
    if user_text:
        sections.append(user_text)
    if sections:
        blocks.append(TextBlock(text=PROMPT_SEPARATOR.join(sections)))
    blocks.extend(b for b in prompt if not isinstance(b, TextBlock))
    return blocks


def with_late_results(prompt: Sequence[PromptBlock], late: Sequence[LateResult]) -> list[PromptBlock]:
    """The user's prompt with the late-delivery text in front of its text and
    the results' images after it."""
    text = late_result_prompt(late, prompt_text(list(prompt)))
    rest = [b for b in prompt if not isinstance(b, TextBlock)]
    return [TextBlock(text=text), *late_result_images(late), *rest]


__all__ = ["PROMPT_SEPARATOR", "assemble_prompt", "with_late_results"]
