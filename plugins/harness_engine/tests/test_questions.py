"""The real harness's ``ask_question`` tool, answered by the host's broker
(``[harness] questions = true``), against the scripted model API."""

from __future__ import annotations

import json
from typing import Any

from .conftest import HarnessHome

ASK = {
    "call": {
        "name": "ask_question",
        "args": {
            "questions": [{"question": "Which database?", "options": ["sqlite", "postgres"]}],
            "toolSummary": "Database choice",
            "toolAction": "Asking the user",
        },
    }
}


def answer_seen(model: Any) -> str:
    """What the model got back for its ask_question call."""
    contents = model.requests()[-1]["body"]["contents"]
    [response] = [p["functionResponse"] for c in contents for p in c["parts"] if "functionResponse" in p]
    assert response["name"] == "ask_question", response
    return json.dumps(response["response"])


def test_an_answer_rule_answers_the_harness_question(hhome: HarnessHome) -> None:
    hhome.configure(harness={"questions": True})
    model = hhome.serve({"turns": [[[ASK], [{"text": "noted."}]]]})
    rules = hhome.root / "answers.toml"
    rules.write_text('[[answer]]\ntitle = "Which database*"\nvalue = "postgres"\n')
    run = hhome.turn("q1", "pick a database", "--answers", str(rules))
    assert run.returncode == 0, run
    [question] = run.of("question")
    assert (question["message"], question["action"], question["by"]) == ("Which database?", "accept", "answers rule 1")
    assert "postgres" in answer_seen(model)


def test_an_unanswered_harness_question_fails_closed(hhome: HarnessHome) -> None:
    hhome.configure(harness={"questions": True})
    model = hhome.serve({"turns": [[[ASK], [{"text": "going on without it."}]]]})
    run = hhome.turn("q2", "pick a database")
    assert run.returncode == 5, run
    [question] = run.of("question")
    assert question["unanswered"] is True
    assert "postgres" not in answer_seen(model) and "sqlite" not in answer_seen(model)
