"""Which of an agent's tool calls are agy-host's own host tools.

An agent names a tool it reached through the MCP bridge in its own way,
and that is the only name the host sees in the agent's permission requests
and tool cards: the Gemini CLI says ``mcp_agy-host-bridge_add`` or ``add
(agy-host-bridge MCP Server)``, fast-agent ``agy-host-bridge/add``, Claude
Code ``mcp__agy-host-bridge__add``. :func:`names_tool` reads them all, so the
host can tell a host tool the agent reports as failed after the host
answered it (the agent's MCP client refused the result): the turn says so.

A name matches when it is the whole text, or when the text carries agy-host's
mark (its bridge is ``agy-host-bridge``) and the name stands in it on its own
(not inside a longer name).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: agy-host's own MCP servers carry it (``agy-host-bridge``, ``agy-host-bridge-<pid>``).
AGY_HOST_MARK = re.compile(r"agy[-_]host", re.IGNORECASE)


def names_tool(text: str, name: str) -> bool:
    """``text`` (an agent's title or tool name for a call) names host tool ``name``."""
    text = text.strip()
    if not text or not name:
        return False
    if text == name:
        return True
    if not AGY_HOST_MARK.search(text):
        return False
    return re.search(rf"(?:^|[^A-Za-z0-9]){re.escape(name)}(?:$|[^A-Za-z0-9_])", text) is not None


def named_tool(texts: Iterable[str], names: Iterable[str]) -> str | None:
    """The first of ``names`` one of ``texts`` names, or ``None``."""
    wanted = [n for n in names if n]
    for text in texts:
        for name in wanted:
            if names_tool(text, name):
                return name
    return None


__all__ = ["AGY_HOST_MARK", "named_tool", "names_tool"]
