"""The plugin's hooks.

agy-host imports this module on every start (``agy-host --help`` included),
so keep its imports light: import heavy things inside the functions.

Every hook, with its exact signature: ``docs/plugins/reference/`` in the
agy-host repository.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agy_host import PromptPart, hookimpl

if TYPE_CHECKING:
    from agy_host import PromptContext

#: What this example adds after the user's text on every turn.
REMINDER = "(Reply in plain text; no Markdown tables.)"


@hookimpl
def agy_host_prompt_parts(turn: PromptContext) -> list[PromptPart] | None:
    """Add a reminder after the user's text on every turn."""
    return [PromptPart(text=REMINDER, where="after")]
