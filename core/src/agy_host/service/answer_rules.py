"""Answer rules: ``--answers FILE`` (or ``answers=``) and ``[[answer]]``, loaded and matched.

A rules file is read only when it is a regular file of at most
:data:`MAX_ANSWERS_BYTES` (``--answers /dev/zero`` used to read without end,
deaf to Ctrl-C: issue 28 item 9), parsed as TOML or JSON, every rule
validated (a typo is an error, never a rule silently ignored: an unattended
run must not guess) and its globs compiled within their bounds
(:mod:`agy_host.service.globs`). Any of it failing is an
:class:`AnswersFileError` saying why, which the commands turn into exit 2
before an agent starts.

Matching (:func:`answer_steps`) is a generator the broker runs paced
(:func:`agy_host.service.globs.paced`), so a long list never holds the
event loop.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from agy_host.config import AnswerRule
from agy_host.contract.interactions import Answer, FormField, Question
from agy_host.fsutil import RefusedFile, read_capped
from agy_host.service.globs import ANSWER_FIELDS, GlobError, Steps, check_rules, finish, glob_match, globs

#: The largest answers file read, in bytes (1,000 rules of a few lines each fit many times over).
MAX_ANSWERS_BYTES = 1024 * 1024

_TRUE = {"1", "true", "yes", "y", "on"}
_FALSE = {"0", "false", "no", "n", "off"}


class AnswersFileError(ValueError):
    """An ``--answers`` file that cannot be used (the message says why)."""


def _text(path: Path) -> str:
    try:
        return read_capped(path, MAX_ANSWERS_BYTES).decode("utf-8")
    except RefusedFile as exc:
        raise AnswersFileError(
            f"the answers file {exc}: refused, --answers reads a regular file of at most {MAX_ANSWERS_BYTES:,} bytes"
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise AnswersFileError(f"cannot read the answers file {path}: {exc}") from exc


def load_answers(path: Path) -> list[AnswerRule]:
    """The rules of an answers file: TOML (``[[answer]]`` tables) or JSON (a
    list of rules, or ``{"answer": [...]}``), checked and compiled."""
    text = _text(path)
    raw: Any
    as_json = path.suffix.lower() == ".json"
    try:
        raw = json.loads(text) if as_json else tomllib.loads(text)
    except (ValueError, RecursionError) as exc:
        if as_json or path.suffix.lower() == ".toml":
            language = "JSON" if as_json else "TOML"
            raise AnswersFileError(f"the answers file {path} is not valid {language}: {exc}") from exc
        try:  # neither suffix: TOML first (the config's language), then JSON
            raw = json.loads(text)
        except (ValueError, RecursionError):
            raise AnswersFileError(f"the answers file {path} is neither TOML nor JSON: {exc}") from exc
    items = raw.get("answer", raw.get("answers")) if isinstance(raw, dict) else raw
    if not isinstance(items, list):
        raise AnswersFileError(f"the answers file {path} holds no [[answer]] rules")
    rules: list[AnswerRule] = []
    for index, item in enumerate(items, 1):
        try:
            rule = msgspec.convert(item, AnswerRule)
        except msgspec.ValidationError as exc:
            raise AnswersFileError(f"the answers file {path}: rule {index}: {exc}") from exc
        if rule.value is None and rule.action == "accept" and globs(rule.kind) != ["url"]:
            raise AnswersFileError(f"the answers file {path}: rule {index} gives no value")
        rules.append(rule)
    try:
        check_rules(rules, ANSWER_FIELDS, f"the answers file {path}")
    except GlobError as exc:
        raise AnswersFileError(str(exc)) from exc
    return rules


def _applies(rule: AnswerRule, question: Question) -> bool:
    return (
        glob_match(rule.kind, question.kind)
        and glob_match(rule.title, question.message)
        and glob_match(rule.tool, question.tool)
    )


def _form_value(field: FormField, value: Any) -> Any:
    """A rule's value as the field's type, where TOML or JSON wrote it another
    way (``"yes"``, ``"3"``, ``8080`` for a string). What has no such reading
    (``"maybe"`` for a boolean) stays as it is: the broker's check refuses it."""
    if isinstance(value, str):
        word = value.strip().lower()
        if field.type == "boolean" and word in _TRUE | _FALSE:
            return word in _TRUE
        if field.type == "integer" and word.lstrip("-").isdigit():
            return int(word)
        if field.type == "number":
            try:
                return float(word)
            except ValueError:
                return value
    if field.type == "string" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if field.type == "array" and not isinstance(value, list):
        return [value]
    return value


def answer_steps(rules: Sequence[AnswerRule], question: Question) -> Steps[Answer | None]:
    """The rules' answer, or ``None`` when they do not answer this question;
    it pauses (yields) after every rule it looks at."""
    numbered: list[tuple[int, AnswerRule]] = []
    for i, r in enumerate(rules, 1):
        yield
        if _applies(r, question):
            numbered.append((i, r))
    if question.kind == "form":
        values: dict[str, Any] = {}
        used: list[int] = []
        for field in question.fields:
            for index, rule in numbered:
                yield
                if rule.field and glob_match(rule.field, field.name) and rule.action == "accept":
                    values[field.name] = _form_value(field, rule.value)
                    used.append(index)
                    break
            else:
                if field.default is not None:
                    values[field.name] = field.default
        missing = [f.name for f in question.fields if f.required and f.name not in values]
        declined = [i for i, r in numbered if r.action == "decline" and not r.field]
        if declined and not used:
            return Answer(action="decline", by=f"answers rule {declined[0]}")
        if missing or not used:
            return None
        return Answer(action="accept", values=values, by="answers " + ", ".join(f"rule {i}" for i in used))
    for index, rule in numbered:
        if rule.field:
            continue  # a form field's rule
        by = f"answers rule {index}"
        if rule.action == "decline":
            return Answer(action="decline", by=by)
        if question.kind == "choice":
            wanted = str(rule.value).strip().lower()
            if any(c.strip().lower() == wanted for c in question.choices):
                chosen = next(c for c in question.choices if c.strip().lower() == wanted)
                return Answer(action="accept", values={"answer": chosen}, by=by)
            continue  # not one of the offered answers: another rule, or nobody
        if question.kind == "url":
            return Answer(action="accept", by=by)
        return Answer(action="accept", values={"answer": rule.value}, by=by)
    return None


def answer_from_rules(rules: Sequence[AnswerRule], question: Question) -> Answer | None:
    """:func:`answer_steps` run at once (no event loop to pause for)."""
    return finish(answer_steps(rules, question))


__all__ = [
    "MAX_ANSWERS_BYTES",
    "AnswersFileError",
    "answer_from_rules",
    "answer_steps",
    "load_answers",
]
