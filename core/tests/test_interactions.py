"""The interaction broker: answer rules, answers files, and the terminal (a
real pseudo-terminal through ``AGY_HOST_TTY``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agy_host.config import AnswerRule
from agy_host.contract.interactions import Answer, FormField, Question
from agy_host.service.interactions import AnswersFileError, InteractionBroker, answer_from_rules, load_answers
from agy_host.testing.terminal import Pty

FORM = Question(
    kind="form",
    session="s",
    message="Deploy where?",
    tool="deploy",
    fields=[
        FormField(name="region", required=True, choices=["eu", "us"]),
        FormField(name="replicas", type="integer", required=True),
        FormField(name="dry_run", type="boolean", default=True),
        FormField(name="note"),
    ],
)


def rule(**kw: object) -> AnswerRule:
    return AnswerRule(**kw)  # type: ignore[arg-type]


def test_a_form_needs_every_required_field_and_takes_defaults() -> None:
    rules = [rule(field="region", value="eu"), rule(field="replicas", value="3")]
    assert answer_from_rules(rules, FORM) == Answer(
        action="accept", values={"region": "eu", "replicas": 3, "dry_run": True}, by="answers rule 1, rule 2"
    )
    assert answer_from_rules(rules[:1], FORM) is None, "a required field without a rule: not answered"
    assert answer_from_rules([rule(field="other", value="x")], FORM) is None


def test_match_fields_narrow_a_rule_and_globs_ignore_case() -> None:
    wrong_tool = [rule(field="*", tool="build", value="x")]
    assert answer_from_rules(wrong_tool, FORM) is None
    by_title = [rule(title="DEPLOY*", field="region", value="us"), rule(field="replicas", value=1)]
    found = answer_from_rules(by_title, FORM)
    assert found is not None and found.values["region"] == "us"
    assert answer_from_rules([rule(kind="url", field="region", value="us")], FORM) is None


def test_a_choice_is_answered_only_with_an_offered_answer() -> None:
    question = Question(kind="choice", session="s", message="Which branch?", choices=["main", "Dev"])
    assert answer_from_rules([rule(value="dev")], question) == Answer(
        action="accept", values={"answer": "Dev"}, by="answers rule 1"
    )
    assert answer_from_rules([rule(value="release")], question) is None
    assert answer_from_rules([rule(value="x", action="decline")], question) == Answer(
        action="decline", by="answers rule 1"
    )


def test_answers_files_in_toml_and_json_and_their_mistakes(tmp_path: Path) -> None:
    toml = tmp_path / "a.toml"
    toml.write_text('[[answer]]\nfield = "branch"\nvalue = "main"\n[[answer]]\nkind = "url"\naction = "decline"\n')
    assert load_answers(toml) == [rule(field="branch", value="main"), rule(kind="url", action="decline")]
    plain = tmp_path / "answers"
    plain.write_text('{"answer": [{"title": "*?", "value": "yes"}]}')
    assert load_answers(plain) == [rule(title="*?", value="yes")]
    cases = {
        '[[answer]]\nfeild = "x"\nvalue = 1\n': "rule 1",
        '[[answer]]\nfield = "x"\n': "gives no value",
        "[[answer": "not valid TOML",
        'title = "x"\n': "no [[answer]] rules",
    }
    for text, message in cases.items():
        bad = tmp_path / "bad.toml"
        bad.write_text(text)
        with pytest.raises(AnswersFileError, match=message.replace("[", r"\[")):
            load_answers(bad)
    with pytest.raises(AnswersFileError, match="cannot read"):
        load_answers(tmp_path / "missing.toml")


async def test_nobody_to_ask_fails_closed_with_the_reason() -> None:
    broker = InteractionBroker(rules=list, env={"AGY_HOST_TTY": "none"})
    answer = await broker.ask(FORM)
    assert answer.action == "cancel" and answer.unanswered and answer.values == {}
    assert "no answer rule matched" in answer.reason and "AGY_HOST_TTY=none" in answer.reason


async def test_the_callback_comes_after_the_rules_and_a_broken_one_fails_closed() -> None:
    async def callback(question: Question) -> Answer:
        return Answer(action="accept", values={"region": "us", "replicas": 2})

    broker = InteractionBroker(
        rules=lambda: [rule(field="region", value="eu"), rule(field="replicas", value=1)], env={}, callback=callback
    )
    assert (await broker.ask(FORM)).by == "answers rule 1, rule 2"
    found = await InteractionBroker(rules=list, env={}, callback=callback).ask(FORM)
    assert found.by == "callback" and found.values["region"] == "us"

    async def broken(question: Question) -> Answer:
        raise RuntimeError("boom")

    failed = await InteractionBroker(rules=list, env={}, callback=broken).ask(FORM)
    assert failed.unanswered and "boom" in failed.reason


async def test_a_question_too_long_to_match_is_answered_by_no_rule() -> None:
    """Issue 28 item 4, retest: matching costs the text's length times the
    glob's, and the agent writes the text. A question longer than rules are
    matched against is answered by no rule (a decline it might match must not
    be slipped past by padding): the program or the person answers it, else
    it is unanswered, the reason naming the cap."""
    long = Question(kind="choice", session="s", message="Which branch? " + "x" * 5000, choices=["main", "dev"])
    broker = InteractionBroker(rules=lambda: [rule(value="dev")], env={"AGY_HOST_TTY": "none"})
    answer = await broker.ask(long)
    assert answer.unanswered and answer.action == "cancel"
    assert "its text has 5,014 characters, more than rules are matched against (at most 4,096)" in answer.reason
    named = Question(kind="form", session="s", message="Deploy?", fields=[FormField(name="r" * 5000)])
    assert "its field name has 5,000 characters" in (await broker.ask(named)).reason

    async def callback(question: Question) -> Answer:
        return Answer(action="accept", values={"answer": "main"})

    ruled = InteractionBroker(rules=lambda: [rule(value="dev")], env={}, callback=callback)
    assert (await ruled.ask(long)).values == {"answer": "main"}


@pytest.fixture
def tty() -> Iterator[Pty]:
    with Pty() as term:
        yield term


async def test_the_terminal_asks_a_form_field_by_field(tty: Pty) -> None:
    tty.type("2\nmany\n4\n\nshipping it\n")  # region: us; replicas: a bad one, then 4; dry_run: default
    asked = Question(**{**{f: getattr(FORM, f) for f in FORM.__struct_fields__}, "origin": "deployer"})
    broker = InteractionBroker(rules=list, env={"AGY_HOST_TTY": tty.path}, bound_s=lambda: 90.0)
    answer = await broker.ask(asked)
    assert answer == Answer(
        action="accept", values={"region": "us", "replicas": 4, "dry_run": True, "note": "shipping it"}, by="terminal"
    )
    screen = tty.screen()
    assert "session 's', deployer asks (tool deploy):" in screen and "Deploy where?" in screen
    assert "(the agent waits up to 1.5m for this answer, then it is cancelled)" in screen
    assert "please type a whole number" in screen and "(boolean; default True)" in screen


async def test_q_at_the_terminal_is_a_cancel_not_an_answer(tty: Pty) -> None:
    tty.type("q\n")
    url = Question(kind="url", session="s", message="Sign in", url="https://example.com/x")
    answer = await InteractionBroker(rules=list, env={"AGY_HOST_TTY": tty.path}).ask(url)
    assert answer.action == "cancel" and not answer.unanswered
    assert "open: https://example.com/x" in tty.screen()


async def test_without_the_terminal_only_rules_and_the_program_answer(tty: Pty) -> None:
    """The ``ask`` policy asks the person its own way: the broker must not ask first."""
    broker = InteractionBroker(rules=list, env={"AGY_HOST_TTY": tty.path})
    question = Question(kind="choice", session="s", message="Which branch?", choices=["main", "dev"])
    answer = await broker.ask(question, terminal=False)
    assert answer.unanswered and answer.action == "cancel"
    assert tty.screen() == "", "the terminal was asked"
    ruled = InteractionBroker(rules=lambda: [rule(value="dev")], env={"AGY_HOST_TTY": tty.path})
    assert (await ruled.ask(question, terminal=False)).values == {"answer": "dev"}
