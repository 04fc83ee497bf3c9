"""The turn's pure parts: how prompt parts are assembled around the user's
blocks, and which exit code a finished turn gets."""

from __future__ import annotations

from typing import Any

import pytest

from agy_host.contract.prompt import ResourceBlock, TextBlock
from agy_host.contract.prompt_parts import PromptPart
from agy_host.contract.turn_result import exit_code_for
from agy_host.runtime.turn_prompt import assemble_prompt


def test_assemble_prompt_without_parts_keeps_the_prompt() -> None:
    blocks = [TextBlock(text="a"), ResourceBlock(uri="file:///x", text="x")]
    assert assemble_prompt([], blocks, new_conversation=True, resources=True) == blocks


def test_assemble_prompt_drops_system_parts_on_a_bound_conversation() -> None:
    parts = [PromptPart(text="SYS", where="system"), PromptPart(text="ctx", where="context", uri="urn:x")]
    out = assemble_prompt(parts, [TextBlock(text="hi")], new_conversation=False, resources=True)
    assert out == [ResourceBlock(uri="urn:x", text="ctx"), TextBlock(text="hi")]


@pytest.mark.parametrize(
    ("stop", "kind", "asked", "refused", "code"),
    [
        ("stop", None, 0, 0, 0),
        ("aborted", None, 1, 1, 130),
        ("error", "timeout", 0, 0, 3),
        ("error", "inactivity", 2, 2, 3),
        ("error", "agent", 0, 0, 1),
        ("error", "agent", 2, 2, 5),
        ("stop", None, 2, 2, 5),
        ("stop", None, 2, 1, 0),
    ],
)
def test_exit_codes(stop: Any, kind: Any, asked: int, refused: int, code: int) -> None:
    assert exit_code_for(stop, kind, asked, refused) == code
