"""``ask_user``: the agent asks the human at the terminal, through the bridge.

A host tool like any other: the call parks the agent's turn (so a slow
answer cannot trip the inactivity timer or eat the turn's deadline), the
host asks on the terminal (``/dev/tty``, see
:mod:`agy_host.service.terminal`), and the answer resumes the turn.
Agents that run inside agy-host cannot reach a person with their own
question tools, so this is the way they ask.

Without a terminal (CI, a script, ``AGY_HOST_TTY=none``) the answer is an
error result that says so plainly, so the agent goes on without asking
instead of waiting for nobody.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from agy_host.contract.tools import HostTool, ToolResult
from agy_host.service.terminal import NoTerminal, choose, open_terminal

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
    "ask_user: there is no terminal attached to agy-host, so the user cannot be asked ({why}). "
    "Continue without the answer, or end your turn and say what you need from the user."
)


async def ask_user(args: dict[str, Any], env: Mapping[str, str] | None = None) -> ToolResult:
    question = str(args.get("question") or "").strip()
    if not question:
        return ToolResult(text="ask_user: the 'question' argument is required", is_error=True)
    raw = args.get("choices")
    choices = [str(c) for c in raw if str(c).strip()] if isinstance(raw, list) else []
    try:
        async with open_terminal(os.environ if env is None else env) as term:
            await term.write(f"\nagy-host: the agent asks you\n  {question}\n")
            if choices:
                await term.write("".join(f"    {i}) {c}\n" for i, c in enumerate(choices, 1)))
                index = await choose(term, choices, prompt=f"  answer [1-{len(choices)}, 0 for none]: ")
                if index is None:
                    return ToolResult(text="The user declined to answer.")
                return ToolResult(text=f"The user chose: {choices[index]}")
            await term.write("  answer: ")
            answer = (await term.read_line()).strip()
    except NoTerminal as exc:
        return ToolResult(text=NO_TERMINAL.format(why=exc), is_error=True)
    return ToolResult(text=f"The user answered: {answer}" if answer else "The user gave an empty answer.")


def tool(env: Mapping[str, str] | None = None) -> HostTool:
    async def call(args: dict[str, Any]) -> ToolResult:
        return await ask_user(args, env)

    return HostTool(name=NAME, description=DESCRIPTION, input_schema=SCHEMA, call=call)


__all__ = ["DESCRIPTION", "NAME", "SCHEMA", "ask_user", "tool"]
