"""``ask_user``: the agent asks the user, through the bridge.

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

NAME = "ask_user"
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
NO_TERMINAL = (
    "ask_user: there is no terminal attached to agy-host and no answer rule matched, so the user cannot "
    "be asked ({why}). "
    "Continue without the answer, or end your turn and say what you need from the user."
)


async def ask_user(
    args: dict[str, Any], env: Mapping[str, str] | None = None, ask: QuestionAsker | None = None
) -> ToolResult:
    """Ask through ``ask`` (the host's broker), or a broker of ``env``'s terminal alone."""
    from agy_host.contract.interactions import Question

    question = str(args.get("question") or "").strip()
    if not question:
        return ToolResult(text="ask_user: the 'question' argument is required", is_error=True)
    raw = args.get("choices")
    choices = [str(c) for c in raw if str(c).strip()] if isinstance(raw, list) else []
    if ask is None:
        from agy_host.service.interactions import InteractionBroker

        ask = InteractionBroker(rules=list, env=os.environ if env is None else env).ask
    asked = Question(kind="choice" if choices else "text", session="", message=question, tool=NAME, choices=choices)
    answer = await ask(asked)
    if answer.unanswered:
        return ToolResult(text=NO_TERMINAL.format(why=answer.reason), is_error=True, unanswered_question=question)
    if answer.action != "accept":
        return ToolResult(text="The user declined to answer.")
    given = str(answer.values.get("answer", "")).strip()
    if choices:
        return ToolResult(text=f"The user chose: {given}")
    return ToolResult(text=f"The user answered: {given}" if given else "The user gave an empty answer.")


def tool(env: Mapping[str, str] | None = None, ask: QuestionAsker | None = None) -> HostTool:
    async def call(args: dict[str, Any]) -> ToolResult:
        return await ask_user(args, env, ask)

    return HostTool(name=NAME, description=DESCRIPTION, input_schema=SCHEMA, call=call)


__all__ = ["DESCRIPTION", "NAME", "SCHEMA", "ask_user", "tool"]
