"""A question asked of the person at the terminal (the broker's third choice).

One question at a time (the terminal's lock), each headed by who asks: the
session and, when the agent says, the sub-agent or server. A form is asked
field by field (its type, whether it is required, its default; a value
outside the form's bounds or format is asked again); a URL is
shown to open, then confirmed; a choice by number. Enter leaves an
optional field unset (or takes its default), an enum field's included;
``q`` at any prompt, or ``0`` at a choice, declines to answer (a form's
fields answered so far go with it), which the agent receives as ``cancel``;
each prompt says what it offers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agy_host.contract.interactions import Answer, FormField, Question
from agy_host.contract.rendering import SHOWN_LONG_CHARS, clip
from agy_host.service.form_check import field_value
from agy_host.service.terminal import MAX_ATTEMPTS, SKIPPED, Terminal, choose, deadline_note, open_terminal
from agy_host.service.terminal_queue import asker

_QUIT = {"q", "quit", "cancel"}


async def ask_on_terminal(env: Mapping[str, str], question: Question, bound_s: float | None = None) -> Answer:
    """Ask; raises :class:`~agy_host.service.terminal.NoTerminal` when there is
    none. ``bound_s`` is how long the agent waits (said in the header)."""
    who = asker(question.session, question.origin)
    async with open_terminal(env, who) as term:
        where = f" (tool {clip(question.tool)})" if question.tool else ""
        head = f"\nagy-host: {who} asks{where}:\n{term.waiting_note()}{deadline_note(bound_s)}"
        await term.write(f"{head}  {clip(question.message, SHOWN_LONG_CHARS)}\n")
        if question.kind == "form":
            return await _form(term, question.fields)
        if question.kind == "url":
            await term.write(f"  open: {clip(question.url, SHOWN_LONG_CHARS)}\n")
            reply = await _line(term, "  press Enter when done there, or n to decline: ")
            if reply is None:
                return Answer(action="cancel", by="terminal", reason="the user did not answer")
            return Answer(action="decline" if reply.lower() in {"n", "no"} else "accept", by="terminal")
        if question.kind == "choice":
            await term.write("".join(f"    {i}) {clip(c)}\n" for i, c in enumerate(question.choices, 1)))
            index = await choose(term, question.choices, prompt=f"  answer [1-{len(question.choices)}, 0 for none]: ")
            if index is None:
                return Answer(action="cancel", by="terminal", reason="the user did not answer")
            return Answer(action="accept", values={"answer": question.choices[index]}, by="terminal")
        reply = await _line(term, "  answer (q for none): ")
        if reply is None:
            return Answer(action="cancel", by="terminal", reason="the user did not answer")
        return Answer(action="accept", values={"answer": reply}, by="terminal")


async def _line(term: Terminal, prompt: str) -> str | None:
    await term.write(prompt)
    reply = (await term.read_line()).strip()
    return None if reply.lower() in _QUIT else reply


async def _form(term: Terminal, fields: list[FormField]) -> Answer:
    values: dict[str, Any] = {}
    for field in fields:
        value = await _field(term, field)
        if value is _STOP:
            return Answer(action="cancel", by="terminal", reason="the user did not fill the form")
        if value is not None:
            values[field.name] = value
    return Answer(action="accept", values=values, by="terminal")


_STOP = object()


async def _field(term: Terminal, field: FormField) -> Any:
    label = clip(field.title or field.name)
    if field.choices and field.type != "array":
        return await _choice(term, field, label)
    hints = [field.type]
    if field.required:
        hints.append("required")
    if field.default is not None:
        hints.append(f"default {field.default}")
    if field.choices:
        hints.append(clip("comma-separated: " + ", ".join(field.choices), SHOWN_LONG_CHARS))
    for _ in range(MAX_ATTEMPTS):
        reply = await _line(term, f"  {label} ({'; '.join(hints)}): ")
        if reply is None:
            return _STOP
        if not reply:
            if field.default is not None:
                return field.default
            if not field.required:
                return None
            await term.write("  this field is required (q to stop)\n")
            continue
        value, problem = _parse(field, reply)
        if problem is None:  # the right type; now the form's bounds and format
            value, problem = field_value(field, value)
        if problem is None:
            return value
        await term.write(f"  {problem}\n")
    return _STOP


async def _choice(term: Terminal, field: FormField, label: str) -> Any:
    """One of an enum field's values, by number. Enter takes the default,
    or leaves an optional field unset; ``0`` stops the whole form, and the
    prompt says both (Enter used to be refused, and ``0`` said nothing)."""
    listed = clip(", ".join(f"{i}) {clip(c)}" for i, c in enumerate(field.choices, 1)), SHOWN_LONG_CHARS)
    enter = "" if field.required else "Enter to skip"
    if field.default is not None:
        enter = f"Enter for {field.default}"
    zero = "0 cancels the whole form"
    span = ", ".join(part for part in (f"1-{len(field.choices)}", enter, zero) if part)
    index = await choose(term, field.choices, prompt=f"  {label}: {listed} [{span}]: ", enter=enter, zero=zero)
    if index is None:
        return _STOP
    return field.default if index == SKIPPED else field.choices[index]


def _parse(field: FormField, reply: str) -> tuple[Any, str | None]:
    if field.type == "boolean":
        if reply.lower() in {"y", "yes", "true", "1"}:
            return True, None
        if reply.lower() in {"n", "no", "false", "0"}:
            return False, None
        return None, "please answer y or n"
    if field.type == "integer":
        try:
            return int(reply), None
        except ValueError:
            return None, "please type a whole number"
    if field.type == "number":
        try:
            return float(reply), None
        except ValueError:
            return None, "please type a number"
    if field.type == "array":
        items = [part.strip() for part in reply.split(",") if part.strip()]
        wrong = [item for item in items if field.choices and item not in field.choices]
        if wrong:
            return None, f"not offered: {', '.join(wrong)}"
        return items, None
    return reply, None


__all__ = ["ask_on_terminal"]
