"""Which of an agent's tool calls are agy-host's own host tools.

An agent names a tool it reached through the MCP bridge in its own way,
and that is the only name the host sees in the agent's permission requests
and tool cards: the Gemini CLI says ``mcp_agy-host-bridge_add`` or ``add
(agy-host-bridge MCP Server)``, fast-agent ``agy-host-bridge/add``, Claude
Code ``mcp__agy-host-bridge__add``. :func:`names_tool` reads them all, so the
host can tell

* a permission request for the bridge's question tool, which is a question
  for the user and not a tool permission: it is allowed without the
  permission policy, and the question goes to the question broker
  (:func:`question_tool_decision`);
* a permission request for one of the program's own tools (``tools=``),
  which the program consented to by offering it
  (:func:`program_tool_decision`);
* a host tool the agent reports as failed after the host answered it (the
  agent's MCP client refused the result): the turn says so.

A name matches when it is the whole text, or when the text carries agy-host's
mark (its bridge is ``agy-host-bridge``) and the name stands in it on its own
(not inside a longer name).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agy_host.contract.permissions import PermissionDecision, PermissionRequest, choose_allow
from agy_host.contract.tools import HostTool

#: agy-host's own MCP servers carry it (``agy-host-bridge``, ``agy-host-bridge-<pid>``).
AGY_HOST_MARK = re.compile(r"agy[-_]host", re.IGNORECASE)
#: The policy name a question tool's permission request is answered under.
QUESTION_POLICY = "question"
#: The policy name a request to call one of the program's own tools is answered under.
PROGRAM_POLICY = "program"


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


def question_tool_decision(request: PermissionRequest, tools: Iterable[HostTool]) -> PermissionDecision | None:
    """An agent asks permission to call a host tool that only asks the user
    (:attr:`HostTool.asks_user`: the bridge's question tool): allowed once,
    without the policy, since the question itself goes to the question
    broker (answer rules, ``on_question``, the terminal). ``None`` for any
    other request, and when the agent offers no way to allow."""
    name = _requested(request, [t.name for t in tools if t.asks_user])
    if name is None:
        return None
    why = f"{name} asks the user a question (answered by the question broker), not for a tool permission"
    return _allowed(request, QUESTION_POLICY, why)


def program_tool_decision(request: PermissionRequest, tools: Iterable[HostTool]) -> PermissionDecision | None:
    """An agent asks permission to call one of the program's own tools
    (:attr:`HostTool.offered_by_program`: a Python function passed as
    ``tools=``): allowed once, without the policy, because the program
    offering the function is its consent (the Gemini CLI asks before every
    MCP tool, so under the fail-closed default a program's own ``add`` was
    refused). ``None`` for any other request, and when nothing allows."""
    name = _requested(request, [t.name for t in tools if t.offered_by_program])
    if name is None:
        return None
    return _allowed(
        request,
        PROGRAM_POLICY,
        f"{name} is one of the program's own tools (tools=): offering it is the program's consent",
    )


def _requested(request: PermissionRequest, names: list[str]) -> str | None:
    """Which of ``names`` (host tools) the request is for, by the agent's title or tool name."""
    return named_tool((request.title, request.tool_name), names) if names else None


def _allowed(request: PermissionRequest, policy: str, reason: str) -> PermissionDecision | None:
    """Allow once under ``policy``; ``None`` when the agent offers no way to allow."""
    option = choose_allow(request.options)
    return PermissionDecision(option_id=option.option_id, policy=policy, reason=reason) if option else None


__all__ = [
    "AGY_HOST_MARK",
    "PROGRAM_POLICY",
    "QUESTION_POLICY",
    "named_tool",
    "names_tool",
    "program_tool_decision",
    "question_tool_decision",
]
