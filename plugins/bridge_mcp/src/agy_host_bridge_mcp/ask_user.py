"""``agy_host_ask_user``: the agent asks the user, through the bridge.

Named for agy-host so no agent's own tool can shadow it: the Gemini CLI has
a built-in ``ask_user``, leaves it out in ACP mode, and with it every tool
of that name, the bridge's included (its exclude list matches MCP tools by
their bare names too). The old name ``ask_user`` is still offered, as an
alias, for agents and answer rules that use it; agents that shadow it (the
Gemini CLI) simply do not see it.

A host tool like any other: the call parks the agent's turn (so a slow
answer cannot trip the inactivity timer or eat the turn's deadline), the
host's interaction broker answers (answer rules from ``--answers`` and
``[[answer]]``, the program's ``on_question``, the person at the terminal:
:mod:`agy_host.service.interactions`), and the answer resumes the turn.
Agents that run inside agy-host cannot reach a person with their own
question tools, so this is the way they ask.

Nobody to answer (no rule, no callback, no terminal: CI, a script,
``AGY_HOST_TTY=none``) is an error result that says so plainly, so the agent
goes on without the answer instead of waiting for nobody, or inventing one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from agy_host.contract.interactions import QuestionAsker
from agy_host.contract.tools import HostTool, ToolResult

NAME = "agy_host_ask_user"
#: The name before it (still offered, same tool).
ALIAS = "ask_user"
DESCRIPTION = (
    "Ask the human user a question at their terminal and wait for the answer. Use it when you need a "
    "decision or information only the user has. Give `choices` for a multiple-choice question (the user "
    "picks one); without them the user types a free answer."
)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "the question, in one or a few sentences"},
        "choices": {"type": "array", "items": {"type": "string"}, "description": "optional answers to pick from"},
    },
    "required": ["question"],
}
ALIAS_DESCRIPTION = f"The same tool as {NAME} (its older name; prefer {NAME}). " + DESCRIPTION
NO_TERMINAL = (
    "{name}: there is no terminal attached to agy-host and no answer rule matched, so the user cannot "
    "be asked ({why}). "
    "Continue without the answer, or end your turn and say what you need from the user."
)


async def ask_user(
    args: dict[str, Any],
    env: Mapping[str, str] | None = None,
    ask: QuestionAsker | None = None,
    *,
    name: str = NAME,
) -> ToolResult:
    """Ask through ``ask`` (the host's broker), or a broker of ``env``'s
    terminal alone; ``name`` is the tool's name as the agent called it
    (the question's ``tool``, which answer rules match)."""
    from agy_host.contract.interactions import Question

    question = str(args.get("question") or "").strip()
    if not question:
        return ToolResult(text=f"{name}: the 'question' argument is required", is_error=True)
    raw = args.get("choices")
    choices = [str(c) for c in raw if str(c).strip()] if isinstance(raw, list) else []
    if ask is None:
        from agy_host.service.interactions import InteractionBroker

        ask = InteractionBroker(rules=list, env=os.environ if env is None else env).ask
    asked = Question(kind="choice" if choices else "text", session="", message=question, tool=name, choices=choices)
    answer = await ask(asked)
    if answer.unanswered:
        text = NO_TERMINAL.format(name=name, why=answer.reason)
        return ToolResult(text=text, is_error=True, unanswered_question=question)
    if answer.action != "accept":
        return ToolResult(text="The user declined to answer.")
    given = str(answer.values.get("answer", "")).strip()
    if choices:
        return ToolResult(text=f"The user chose: {given}")
    return ToolResult(text=f"The user answered: {given}" if given else "The user gave an empty answer.")


def tool(env: Mapping[str, str] | None = None, ask: QuestionAsker | None = None, *, name: str = NAME) -> HostTool:
    """The question tool under ``name`` (:data:`NAME`, or its :data:`ALIAS`).
    It only asks (``asks_user``): an agent's permission request for it is
    not put to the permission policy."""

    async def call(args: dict[str, Any]) -> ToolResult:
        return await ask_user(args, env, ask, name=name)

    description = DESCRIPTION if name == NAME else ALIAS_DESCRIPTION
    return HostTool(name=name, description=description, input_schema=SCHEMA, call=call, asks_user=True)


def tools(env: Mapping[str, str] | None = None, ask: QuestionAsker | None = None) -> list[HostTool]:
    """The question tool under its name and its alias."""
    return [tool(env, ask), tool(env, ask, name=ALIAS)]


__all__ = ["ALIAS", "ALIAS_DESCRIPTION", "DESCRIPTION", "NAME", "SCHEMA", "ask_user", "tool", "tools"]
