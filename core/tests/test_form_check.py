"""A form's answer checked against the requested schema (issue 28 item 10):
whoever answers, a value that breaks the schema is never sent; the question
is unanswered with the reason."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agy_host.config import AnswerRule
from agy_host.contract.interactions import Answer, FormField, Question
from agy_host.service.form_check import check_form, checked, field_value
from agy_host.service.interactions import InteractionBroker
from agy_host.testing.terminal import Pty

FORM = Question(
    kind="form",
    session="s",
    message="Deploy?",
    fields=[
        FormField(name="force", type="boolean", required=True),
        FormField(name="replicas", type="integer", minimum=1, maximum=5),
        FormField(name="ratio", type="number", minimum=0, maximum=1),
        FormField(name="region", choices=["eu", "us"]),
        FormField(name="name", min_length=2, max_length=4),
        FormField(name="when", format="date"),
        FormField(name="mail", format="email"),
        FormField(name="site", format="uri"),
        FormField(name="at", format="date-time"),
        FormField(name="tags", type="array", choices=["a", "b", "c"], min_items=1, max_items=2),
    ],
)
FIELDS = {f.name: f for f in FORM.fields}


@pytest.mark.parametrize(
    ("name", "value", "wanted"),
    [
        ("force", "maybe", "true or false"),
        ("force", 0, "true or false"),
        ("replicas", "3", "a whole number"),
        ("replicas", 2.5, "a whole number"),
        ("replicas", True, "a whole number"),
        ("replicas", 9, "at most 5"),
        ("replicas", 0, "at least 1"),
        ("ratio", float("nan"), "a number"),
        ("ratio", 1.5, "at most 1"),
        ("region", "mars", "one of 'eu', 'us'"),
        ("region", 1, "a string"),
        ("name", "x", "a string of at least 2 characters"),
        ("name", "xxxxx", "a string of at most 4 characters"),
        ("when", "2026-02-30", "a date (YYYY-MM-DD)"),
        ("when", "20260101", "a date (YYYY-MM-DD)"),
        ("mail", "nobody", "an email address"),
        ("site", "not a uri", "a URI"),
        ("at", "yesterday", "a date and time (ISO 8601)"),
        ("tags", "a", "a list of strings"),
        ("tags", ["a", "z"], "items among 'a', 'b', 'c'"),
        ("tags", [], "at least 1 items"),
        ("tags", ["a", "b", "c"], "at most 2 items"),
    ],
)
def test_a_value_that_breaks_its_field_says_what_the_field_wants(name: str, value: Any, wanted: str) -> None:
    _, problem = field_value(FIELDS[name], value)
    assert problem == f"field {name!r} wants {wanted}, not {value!r}"


@pytest.mark.parametrize(
    ("name", "value", "sent"),
    [
        ("force", False, False),
        ("replicas", 3.0, 3),  # JSON's 3.0 is an integer
        ("ratio", 1, 1),
        ("region", "eu", "eu"),
        ("when", "2026-02-28", "2026-02-28"),
        ("mail", "me@localhost", "me@localhost"),
        ("site", "https://example.com/x", "https://example.com/x"),
        ("at", "2026-02-28T10:00:00Z", "2026-02-28T10:00:00Z"),
        ("tags", ["a", "c"], ["a", "c"]),
    ],
)
def test_a_value_that_fits_is_sent_as_json_means_it(name: str, value: Any, sent: Any) -> None:
    assert field_value(FIELDS[name], value) == (sent, None)


def test_the_form_as_a_whole_required_fields_unknown_names_and_none() -> None:
    values, problems = check_form(FORM.fields, {"replicas": None, "typo": 1})
    assert values == {}
    assert problems == ["the form has no field 'typo'", "required field 'force' has no value"]
    assert check_form(FORM.fields, {"force": True, "replicas": None}) == ({"force": True}, [])


def test_checked_turns_a_bad_answer_into_an_unanswered_cancel_by_the_same_answerer() -> None:
    bad = checked(FORM, Answer(action="accept", values={"force": "maybe"}, by="callback"))
    assert bad == Answer(
        action="cancel",
        by="callback",
        reason="its answer does not fit the form: field 'force' wants true or false, not 'maybe'",
        unanswered=True,
    )
    declined = Answer(action="decline", by="terminal")
    assert checked(FORM, declined) is declined, "only an accepted form carries values"
    text = Question(kind="text", session="s", message="why?")
    free = Answer(action="accept", values={"answer": 3}, by="callback")
    assert checked(text, free) is free


async def test_the_broker_checks_every_answerer() -> None:
    rules = [AnswerRule(field="force", value="maybe")]
    by_rule = await InteractionBroker(rules=lambda: rules, env={}).ask(FORM)
    assert by_rule.unanswered and by_rule.by == "answers rule 1" and "'maybe'" in by_rule.reason
    yes = [AnswerRule(field="force", value="Yes"), AnswerRule(field="replicas", value="4")]
    assert (await InteractionBroker(rules=lambda: yes, env={}).ask(FORM)).values == {"force": True, "replicas": 4}

    async def program(question: Question) -> Answer:
        return Answer(action="accept", values={"force": True, "region": "mars"})

    by_program = await InteractionBroker(rules=list, env={}, callback=program).ask(FORM)
    assert by_program.unanswered and by_program.by == "callback"
    assert by_program.reason.endswith("field 'region' wants one of 'eu', 'us', not 'mars'")


@pytest.fixture
def tty() -> Iterator[Pty]:
    with Pty() as term:
        yield term


async def test_the_terminal_asks_again_for_a_value_outside_the_bounds(tty: Pty) -> None:
    question = Question(
        kind="form",
        session="s",
        message="How many?",
        fields=[FormField(name="replicas", type="integer", required=True, minimum=1, maximum=5)],
    )
    tty.type("9\n3\n")
    answer = await InteractionBroker(rules=list, env={"AGY_HOST_TTY": tty.path}).ask(question)
    assert answer == Answer(action="accept", values={"replicas": 3}, by="terminal")
    assert "field 'replicas' wants at most 5, not 9" in tty.screen()
