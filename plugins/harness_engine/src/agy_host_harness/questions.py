"""The harness's ``ask_question`` tool: multiple-choice questions for the user.

With ``[harness] questions = true`` the harness offers its model the
``ask_question`` tool. When the model calls it, the harness sends a step in
state ``WAITING_FOR_USER`` carrying ``questionsRequest{questions[
{multipleChoice{question, choices, isMultiSelect}}]}`` and waits for a
``questionResponse{trajectoryId, stepIndex, response{answers[
{multipleChoiceAnswer{selectedChoiceIndices, freeformResponse}} |
{unanswered: true}]}}``. Each question goes to the host's broker as a
``choice`` question (:mod:`agy_host.contract.interactions`); an answer
that is not one of the choices goes back as the write-in (``freeformResponse``),
and a question nobody answers goes back ``unanswered`` and fails the turn
closed (exit 5), as on every engine.
"""

from __future__ import annotations

from typing import Any

from agy_host.contract.interactions import Answer, Question


def questions_of(request: dict[str, Any] | None, session: str, origin: str = "") -> list[Question]:
    """The multiple-choice questions of a ``questionsRequest`` (others are skipped: unanswered)."""
    out: list[Question] = []
    for entry in (request or {}).get("questions") or []:
        choice = entry.get("multipleChoice") if isinstance(entry, dict) else None
        if not isinstance(choice, dict):
            out.append(Question(kind="text", session=session, message="", origin=origin))
            continue
        out.append(
            Question(
                kind="choice",
                session=session,
                message=str(choice.get("question") or ""),
                origin=origin,
                tool="ask_question",
                choices=[str(c) for c in choice.get("choices") or []],
            )
        )
    return out


def answer_of(question: Question, answer: Answer) -> dict[str, Any]:
    """One ``UserQuestionAnswer`` for ``answer``."""
    if answer.action != "accept" or question.kind != "choice":
        return {"unanswered": True}
    given = answer.values.get("answer")
    picked = given if isinstance(given, list) else [given]
    indices = [question.choices.index(p) for p in picked if isinstance(p, str) and p in question.choices]
    if indices:
        return {"multipleChoiceAnswer": {"selectedChoiceIndices": indices}}
    text = ", ".join(str(p) for p in picked if p is not None)
    return {"multipleChoiceAnswer": {"freeformResponse": text}} if text else {"unanswered": True}


def response(trajectory_id: str, step_index: int, answers: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``questionResponse`` input event."""
    return {
        "questionResponse": {
            "trajectoryId": trajectory_id,
            "stepIndex": step_index,
            "response": {"answers": answers},
        }
    }


__all__ = ["answer_of", "questions_of", "response"]
