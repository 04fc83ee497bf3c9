"""The interaction broker: every question an agent asks, answered in one place.

Engines hand their questions (:class:`~agy_host.contract.interactions.Question`:
ACP elicitation forms and URLs, Antigravity's ``interaction_`` questions) to
:meth:`InteractionBroker.ask`. It answers, in this order:

1. the **answer rules**: ``--answers FILE`` first, then ``[[answer]]`` in the
   config (:class:`~agy_host.config.AnswerRule`, loaded and matched by
   :mod:`agy_host.service.answer_rules`); a form needs every required
   field answered by a rule or a default;
2. the **program's callback** (the Python API's ``on_question``);
3. the **person at the terminal**, one question at a time (the terminal's
   lock), told which session and which sub-agent asks;
4. nobody: the question **fails closed**, ``cancel`` with ``unanswered``
   set and the reason. The turn exits 5. A question is never answered empty
   or invented (peers' hosts that do so make agents act on answers nobody
   gave).

A form's answer, whoever gave it, must fit the form's schema, or it is not
sent: the question is unanswered, with the reason
(:mod:`agy_host.service.form_check`).

A question whose text, kind, tool or a field's name is longer than rules are
matched against (:data:`~agy_host.service.globs.MAX_MATCHED_CHARS`) is
answered by no rule: the program or the person answers it, else it is
unanswered, the reason naming the cap.

The bound (``turn.permission_timeout_seconds``) and the cancel on abort are
the engine's, as for permissions (:meth:`agy_host.engine.turn.EngineTurn.ask`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from agy_host.config import AnswerRule
from agy_host.contract.interactions import Answer, Question, QuestionAsker
from agy_host.contract.permissions import PermissionDecision, PermissionPolicy, PermissionRequest
from agy_host.service.answer_rules import AnswersFileError, answer_from_rules, answer_steps, load_answers
from agy_host.service.form_check import checked
from agy_host.service.globs import GlobError, glob_match, globs, paced, unmatchable
from agy_host.service.remembered import RememberedAnswers

if TYPE_CHECKING:
    import trio


class InteractionBroker:
    """One host's questions and permission requests: one place that answers.

    Questions: rules, then the program, then the terminal (:meth:`ask`).
    Permission requests: an "always" answered earlier in the session, then
    the permission policy, bounded and checked (:meth:`decide`). Both kinds
    reach the person through the same terminal queue, one at a time."""

    def __init__(
        self,
        *,
        rules: Callable[[], Sequence[AnswerRule]],
        env: Mapping[str, str],
        callback: QuestionAsker | None = None,
        policy: Callable[[], PermissionPolicy] | None = None,
        bound_s: Callable[[], float] = lambda: math.inf,
    ) -> None:
        self._rules = rules
        self.env = env
        self.callback = callback
        self._policy = policy
        self._bound_s = bound_s
        self.remembered = RememberedAnswers()
        #: Permission requests in the policy's hands, by what "always" would cover.
        self._waiting: dict[tuple[str, str], set[trio.CancelScope]] = {}

    async def ask(self, question: Question, *, terminal: bool = True) -> Answer:
        """Always an answer; ``cancel`` with ``unanswered`` when nobody gave one,
        or when what was given breaks the form's schema (the reason says how:
        :func:`~agy_host.service.form_check.checked`). Without ``terminal``
        only the rules and the program answer (a caller with its own way to
        ask the person: the ``ask`` permission policy)."""
        return checked(question, await self._answer(question, terminal=terminal))

    async def _answer(self, question: Question, *, terminal: bool) -> Answer:
        from agy_host.service.terminal import NoTerminal

        unmatched = "no answer rule matched (see --answers)"
        longest_field = max((f.name for f in question.fields), key=len, default="")
        too_long = unmatchable(
            {"text": question.message, "kind": question.kind, "tool": question.tool, "field name": longest_field}
        )
        if too_long is not None:
            unmatched = f"no answer rule answers it: {too_long}"
        else:
            try:
                found = await paced(answer_steps(self._rules(), question))
            except GlobError as exc:  # a list changed after it was checked (a program's)
                return _nobody(f"the answer rules cannot be used: {exc}")
            if found is not None:
                return found
        if self.callback is not None:
            try:
                given: object = await self.callback(question)
            except Exception as exc:
                return _nobody(f"the question callback failed ({type(exc).__name__}: {exc})")
            if isinstance(given, Answer):
                return Answer(
                    action=given.action,
                    values=given.values,
                    by=given.by or "callback",
                    reason=given.reason,
                    unanswered=given.unanswered,
                )
            return _nobody(f"the question callback returned {type(given).__name__}, not an Answer")
        if not terminal:
            return _nobody(unmatched)
        try:
            from agy_host.service.ask_terminal import ask_on_terminal

            return await ask_on_terminal(self.env, question, self._bound_s())
        except NoTerminal as exc:
            return _nobody(f"{unmatched} and {exc}")

    async def decide(self, request: PermissionRequest) -> PermissionDecision:
        """Answer one permission request; never raises (except trio's own
        cancellation of the caller) and never waits past the bound.

        Antigravity's questions (``interaction_`` requests) keep the order of
        every other question: the answer rules, the program, then the person.
        A policy that asks the person itself (``ask``, ``rules``: they show
        the agent's own options) asks; under any other policy (``auto``,
        ``deny``, a program's) the broker asks at the terminal, as it does
        for ACP forms, and without one the question is cancelled,
        unanswered: a policy never picks an answer for a person."""
        if request.is_question:
            asks = self._policy is not None and bool(getattr(self._policy(), "asks_person", False))
            answered = await self._question(request, terminal=not asks)
            if answered is not None:
                return answered
            if not asks:
                return PermissionDecision(option_id=None, policy="host", reason="a question needs a person; cancelled")
        import trio

        key = self.remembered.key(request)
        while True:
            remembered = self.remembered.recall(request)
            if remembered is not None:
                return remembered
            # A request still waiting (its prompt queued behind another's) when
            # "always" is chosen for its tool is answered by that choice at once.
            waiting = trio.CancelScope()
            if key is not None:
                self._waiting.setdefault(key, set()).add(waiting)
            try:
                with waiting:
                    decision = await self._from_policy(request)
            finally:
                if key is not None:
                    self._waiting[key].discard(waiting)
            if not waiting.cancelled_caught:
                break
        if self.remembered.note(request, decision) and key is not None:
            for pending in self._waiting.get(key, set()):
                pending.cancel()
        return decision

    async def _from_policy(self, request: PermissionRequest) -> PermissionDecision:
        import trio

        from agy_host.engine.timers import minutes

        if self._policy is None:
            return PermissionDecision(option_id=None, policy="host", reason="no permission policy; cancelled")
        policy = self._policy()
        name = getattr(policy, "name", type(policy).__name__)
        bound = self._bound_s()
        try:
            with trio.move_on_after(bound) as scope:
                # typed as object: a third-party policy may return anything
                decision: object = await policy.decide(request)
        except Exception as exc:
            return PermissionDecision(
                option_id=None, policy=name, reason=f"policy {name!r} failed ({type(exc).__name__}: {exc}); cancelled"
            )
        if scope.cancelled_caught:
            return PermissionDecision(
                option_id=None, policy=name, reason=f"no answer within {minutes(bound)}; cancelled"
            )
        if not isinstance(decision, PermissionDecision):
            return PermissionDecision(
                option_id=None, policy=name, reason=f"policy {name!r} returned {type(decision).__name__}; cancelled"
            )
        offered = {opt.option_id for opt in request.options}
        if decision.option_id is not None and decision.option_id not in offered:
            return PermissionDecision(
                option_id=None,
                policy=name,
                reason=f"policy {name!r} chose {decision.option_id!r}, which the agent did not offer; cancelled",
            )
        return decision

    async def _question(self, request: PermissionRequest, *, terminal: bool) -> PermissionDecision | None:
        """The question as a choice through :meth:`ask`; ``None`` when nobody
        answered (a reason is then in the cancel the caller sends)."""
        names = [opt.name or opt.option_id for opt in request.options]
        question = Question(
            kind="choice",
            session=request.session,
            message=request.title,
            call_id=request.call_id,
            tool=request.tool_name,
            choices=names,
        )
        answer = await self.ask(question, terminal=terminal)
        if answer.unanswered:
            if terminal:
                return PermissionDecision(option_id=None, policy=answer.by or "host", reason=answer.reason)
            return None  # the policy asks the person (``ask``, ``rules``)
        if answer.action != "accept":
            return PermissionDecision(option_id=None, policy=answer.by, reason=answer.reason or answer.action)
        wanted = str(answer.values.get("answer", "")).strip().lower()
        for opt, label in zip(request.options, names, strict=True):
            if label.strip().lower() == wanted:
                return PermissionDecision(option_id=opt.option_id, policy=answer.by or "answers", reason="answered")
        return None


def _nobody(why: str) -> Answer:
    return Answer(action="cancel", by="host", reason=why, unanswered=True)


__all__ = ["AnswersFileError", "InteractionBroker", "answer_from_rules", "glob_match", "globs", "load_answers"]
