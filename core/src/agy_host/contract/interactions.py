"""Questions an agent asks the user, and their answers, in one shape.

Agents ask in several wire shapes: ACP ``elicitation/create`` (a form of
typed fields, or a URL to visit), Antigravity's ``interaction_`` questions
(a permission request whose options are answers), MCP tools that need a
person. Each engine turns what it got into a :class:`Question` and hands it
to the host's ``ask_question`` (:attr:`~agy_host.engine.base.EngineContext.ask_question`);
the host's broker answers it from the user's answer rules (``--answers``),
the program's callback (Python API), or the person at the terminal, one
question at a time, and otherwise **fails closed**: the answer is
``cancel`` with ``unanswered`` set, never an empty or invented one, and the
turn exits 5. Permission requests keep their own policies
(:mod:`agy_host.contract.permissions`); a question is never answered by
``auto``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

import msgspec

QuestionKind = Literal["form", "url", "choice", "text"]
AnswerAction = Literal["accept", "decline", "cancel"]


class FormField(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One field of a form question (ACP's primitive JSON Schema properties)."""

    name: str
    #: ``string``, ``number``, ``integer``, ``boolean`` or ``array`` (a multi-select).
    type: str = "string"
    title: str = ""
    description: str = ""
    required: bool = False
    #: The allowed values of a single-select string or a multi-select array.
    choices: list[str] = msgspec.field(default_factory=list)
    default: Any = None
    #: A string's bounds in characters and its ``format`` (``email``, ``uri``,
    #: ``date``, ``date-time``); a number's inclusive bounds; how many items
    #: an array takes. An answer outside them is not sent
    #: (:mod:`agy_host.service.form_check`).
    min_length: int | None = None
    max_length: int | None = None
    format: str = ""
    minimum: float | None = None
    maximum: float | None = None
    min_items: int | None = None
    max_items: int | None = None


class Question(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What an agent asks. ``session`` is the host session; ``origin`` names
    who asks within it (a sub-agent, an MCP server) when the agent says."""

    kind: QuestionKind
    session: str
    message: str
    origin: str = ""
    #: The tool call the question belongs to, when it belongs to one.
    call_id: str = ""
    tool: str = ""
    #: ``form``: the fields to fill.
    fields: list[FormField] = msgspec.field(default_factory=list)
    #: ``url``: where to send the user.
    url: str = ""
    #: ``choice``: the possible answers, by their text.
    choices: list[str] = msgspec.field(default_factory=list)


class Answer(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The answer. ``values`` holds a form's fields by name; a choice or a
    free-text answer is ``values["answer"]``. ``by`` says who answered
    (``answers rule 2``, ``terminal``, ``callback``, ``host``)."""

    action: AnswerAction
    values: dict[str, Any] = msgspec.field(default_factory=dict)
    by: str = ""
    reason: str = ""
    #: Nobody could answer: no rule matched and there was no one to ask.
    unanswered: bool = False


QuestionAsker = Callable[[Question], Awaitable[Answer]]


async def nobody_answers(question: Question) -> Answer:
    """The asker of a context built without a host (tests, tools): fail closed."""
    return Answer(action="cancel", by="host", reason="no one to ask in this context", unanswered=True)


__all__ = [
    "Answer",
    "AnswerAction",
    "FormField",
    "Question",
    "QuestionAsker",
    "QuestionKind",
    "nobody_answers",
]
