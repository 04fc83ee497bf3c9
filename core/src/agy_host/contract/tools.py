"""Host tools: functions the host offers to the agent (through the MCP bridge).

A plugin registers :class:`HostTool` objects with ``agy_host_register_tools``.
When the agent calls one, its turn parks, the host runs the tool in its own
loop (where host-side gating happens: a tool may refuse), and the result
resumes the same agent turn.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec


class ToolResult(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A tool's answer: text, optional images (base64 + mime type), error flag."""

    text: str = ""
    images: list[tuple[str, str]] = msgspec.field(default_factory=list)
    is_error: bool = False
    #: A question for the user that nobody could answer (its text): the tool
    #: tells the agent so in ``text``, and the turn fails closed (exit 5), as
    #: it does for every unanswered question.
    unanswered_question: str = ""
    #: The result as a JSON object, for the agent's MCP client to read as
    #: ``structuredContent`` next to the text (a Python tool's value:
    #: ``{"result": value}`` when the value is not an object). Some clients
    #: (Gemini CLI 0.61) parse the first text block into it themselves when
    #: it is absent, and refuse the call when that is not an object.
    structured: dict[str, Any] | None = None


ToolCallable = Callable[[dict[str, Any]], Awaitable[ToolResult]]


class HostTool(msgspec.Struct, kw_only=True):
    """A tool the host offers the agent (through the MCP bridge or the engine's own channel) and runs itself: a
    plugin's, or a Python function of the program."""

    name: str
    description: str
    #: JSON schema of the arguments object.
    input_schema: dict[str, Any]
    call: ToolCallable
    #: The tool only asks the user a question, through the host's question
    #: broker (the bridge's question tool): an agent's permission request to
    #: call it is allowed without the permission policy, which judges what
    #: tools do, not questions (:mod:`agy_host.service.tool_names`).
    asks_user: bool = False
    #: The program passed it itself (``tools=`` in the Python API): an
    #: agent's permission request to call it is allowed without the policy,
    #: since the program offering the function is its consent; the tool
    #: lists and ``before_tool`` can still refuse it.
    offered_by_program: bool = False


__all__ = ["HostTool", "ToolCallable", "ToolResult"]
