"""A form's answer checked against the schema the agent asked with.

An agent asks for a form with a typed schema (ACP ``elicitation/create``:
string, number, integer, boolean, multi-select arrays, with bounds and
formats). Whatever answers it (an answer rule, the program's
``on_question``, the person), the agent must get values of that schema or
nothing: it acts on them. An answer rule with ``value = "maybe"`` for a
boolean used to reach the agent as ``false``, accepted (issue 28 item 10).

So every accepted form answer passes :func:`checked` in the broker. Values
are normalised where JSON means the same (``3.0`` for an integer is ``3``;
``None`` for an optional field is no value); anything else that breaks the
schema makes the whole answer a ``cancel``, **unanswered**, whose reason
names the field and what it wanted: the turn exits 5 and says so, never
sends half a form. ``pattern`` is not checked: it is the agent's regular
expression, which could make the check itself run for minutes; the agent
checks its own.
"""

from __future__ import annotations

import datetime
import math
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from agy_host.contract.interactions import Answer, FormField, Question

_EMAIL = re.compile(r"[^@\s]+@[^@\s]+")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2})?")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _format_problem(fmt: str, value: str) -> str | None:
    if fmt == "email" and not _EMAIL.fullmatch(value):
        return "an email address"
    if fmt == "uri":
        parts = urllib.parse.urlsplit(value)
        if not _SCHEME.fullmatch(parts.scheme) or not (parts.netloc or parts.path):
            return "a URI"
    if fmt == "date":
        try:
            ok = bool(_DATE.fullmatch(value)) and datetime.date.fromisoformat(value) is not None
        except ValueError:
            ok = False
        if not ok:
            return "a date (YYYY-MM-DD)"
    if fmt == "date-time":
        try:
            ok = bool(_DATE_TIME.fullmatch(value)) and datetime.datetime.fromisoformat(value.upper()) is not None
        except ValueError:
            ok = False
        if not ok:
            return "a date and time (ISO 8601)"
    return None


def _bounds(field: FormField, value: float) -> str | None:
    if field.minimum is not None and value < field.minimum:
        return f"at least {field.minimum:g}"
    if field.maximum is not None and value > field.maximum:
        return f"at most {field.maximum:g}"
    return None


def _string_problem(field: FormField, value: Any) -> str | None:
    if not isinstance(value, str):
        return "a string"
    if field.choices and value not in field.choices:
        return "one of " + ", ".join(repr(c) for c in field.choices)
    if field.min_length is not None and len(value) < field.min_length:
        return f"a string of at least {field.min_length} characters"
    if field.max_length is not None and len(value) > field.max_length:
        return f"a string of at most {field.max_length} characters"
    return _format_problem(field.format, value) if field.format else None


def _array_problem(field: FormField, value: Any) -> str | None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return "a list of strings"
    wrong = [item for item in value if field.choices and item not in field.choices]
    if wrong:
        return "items among " + ", ".join(repr(c) for c in field.choices)
    if field.min_items is not None and len(value) < field.min_items:
        return f"at least {field.min_items} items"
    if field.max_items is not None and len(value) > field.max_items:
        return f"at most {field.max_items} items"
    return None


def field_value(field: FormField, value: Any) -> tuple[Any, str | None]:
    """``value`` as the field's type wants it (``3.0`` for an integer: ``3``),
    or why it does not fit: ``(value, "field 'force' wants true or false, not 'maybe'")``."""
    wanted: str | None
    if field.type == "boolean":
        wanted = None if isinstance(value, bool) else "true or false"
    elif field.type == "integer":
        if isinstance(value, float) and _number(value) and value.is_integer():
            value = int(value)
        wanted = "a whole number" if not (_number(value) and isinstance(value, int)) else _bounds(field, value)
    elif field.type == "number":
        wanted = "a number" if not _number(value) else _bounds(field, value)
    elif field.type == "array":
        wanted = _array_problem(field, value)
    elif field.type == "string":
        wanted = _string_problem(field, value)
    else:  # a type agy-host does not know: any value the wire can carry
        scalar = isinstance(value, (str, bool)) or _number(value)
        listed = isinstance(value, list) and all(isinstance(item, str) for item in value)
        wanted = None if scalar or listed else "a string, number, boolean or list of strings"
    if wanted is None:
        return value, None
    return value, f"field {field.name!r} wants {wanted}, not {_show(value)}"


def check_form(fields: Sequence[FormField], values: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The values to send, and every way they break the form (empty: they fit)."""
    by_name = {f.name: f for f in fields}
    out: dict[str, Any] = {}
    problems = [f"the form has no field {name!r}" for name in values if name not in by_name]
    for field in fields:
        value = values.get(field.name)
        if value is None:
            if field.required:
                problems.append(f"required field {field.name!r} has no value")
            continue
        value, problem = field_value(field, value)
        if problem is not None:
            problems.append(problem)
        out[field.name] = value
    return out, problems


def checked(question: Question, answer: Answer) -> Answer:
    """``answer`` when it fits ``question``'s schema (normalised); else a
    ``cancel``, unanswered, saying what did not fit (by the same answerer)."""
    if question.kind != "form" or answer.action != "accept":
        return answer
    values, problems = check_form(question.fields, answer.values)
    if problems:
        why = "its answer does not fit the form: " + "; ".join(problems)
        return Answer(action="cancel", by=answer.by, reason=why, unanswered=True)
    return Answer(action="accept", values=values, by=answer.by, reason=answer.reason)


__all__ = ["check_form", "checked", "field_value"]
