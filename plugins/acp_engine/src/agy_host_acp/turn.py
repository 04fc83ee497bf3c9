"""The state of one ACP turn: its handle, timers, update mapping and the
permission requests it has open.

A :class:`Turn` is the connection's listener for its session while it runs:
updates refresh the inactivity clock and become Activities; permission
requests pause the timers (a human may take minutes) and are answered by the
host's policy, or ``cancelled`` when the turn is aborted. The handler always
answers: the policy is bounded by a deadline here too, whatever the host did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from agy_host.contract.events import NoticeActivity, PermissionActivity, PermissionOption
from agy_host.contract.permissions import PermissionDecision, PermissionRequest, is_question
from agy_host.engine.driver import TurnRequest
from agy_host.engine.turn import EngineTurn
from agy_host_acp import schema as s
from agy_host_acp.elicitation import ElicitationParams, question_for, response_for
from agy_host_acp.events import UpdateMapper, first_diff, tool_args, tool_name
from agy_host_acp.replay import ReplayGuard

if TYPE_CHECKING:
    from agy_host.contract.interactions import QuestionAsker
    from agy_host.engine.base import PermissionDecider


class Turn(EngineTurn):
    def __init__(
        self,
        request: TurnRequest,
        decide: PermissionDecider,
        permission_timeout: float,
        ask: QuestionAsker | None = None,
    ) -> None:
        from agy_host.contract.interactions import nobody_answers

        super().__init__(request)
        self.mapper = UpdateMapper()
        self._decide = decide
        self._ask: QuestionAsker = ask or nobody_answers
        self._permission_timeout = permission_timeout
        self.prompt_started = False
        self.prompt_done = trio.Event()
        self.cancel_sent = False
        self.permissions_asked = 0
        self.permissions_denied = 0
        self.replay = ReplayGuard(_prompt_text(request), self._replay_seen)

    @property
    def session_id(self) -> str | None:
        """On ACP the conversation is the session (told to the host as soon as it is known)."""
        return self.conversation_id

    @session_id.setter
    def session_id(self, value: str | None) -> None:
        self.conversation_id = value

    def response(self) -> str:
        return self.mapper.response

    # -- SessionListener ------------------------------------------------------------

    def on_update(self, update: s.Update) -> None:
        self.timers.touch()
        if not self.replay.keep(update):
            return
        activity = self.mapper.map(update)
        if activity is not None:
            self.handle.emit(activity)

    def on_updates(self, updates: list[s.Update]) -> None:
        """Every update of one pipe read, in order (the hot path: the replay
        guard looks at each update only when the read holds a user chunk or
        a replay is under way)."""
        self.timers.touch()
        kinds = set(map(type, updates))
        filtered = self.replay.replaying or s.UserMessageChunk in kinds
        if filtered:
            updates = self.replay.filter(updates)
        emit = self.handle.emit
        for activity in self.mapper.map_many(updates, None if filtered else kinds):
            emit(activity)

    def _replay_seen(self) -> None:
        self.handle.emit(
            NoticeActivity(
                level="warning",
                message="the agent sent the conversation's earlier messages inside this turn; "
                "they are history, not shown as this turn's answer",
                code="replay",
            )
        )

    def on_notice(self, level: str, message: str, code: str) -> None:
        lvl = level if level in ("info", "warning", "error") else "warning"
        self.handle.emit(NoticeActivity(level=lvl, message=message, code=code))  # type: ignore[arg-type]

    async def on_permission(self, params: s.RequestPermissionParams) -> dict[str, Any]:
        tc = params.tool_call
        options = [PermissionOption(option_id=o.option_id, name=o.name, kind=o.kind) for o in params.options]
        question = is_question(tc.tool_call_id)
        request = PermissionRequest(
            session=self.request.session,
            call_id=tc.tool_call_id,
            title=tc.title or "",
            options=options,
            tool_kind=tc.kind or ("question" if question else "other"),
            tool_name=tool_name(tc, fallback="question" if question else "tool"),
            args=tool_args(tc.raw_input),
            diff=first_diff(tc.content),
            is_question=question,
            skip_permissions=self.request.skip_permissions,
        )
        self.permissions_asked += 1
        decision = await self.decide_permission(self._decide, request, bound_s=self._permission_timeout)
        valid = {o.option_id for o in options}
        if decision.option_id is not None and decision.option_id not in valid:
            decision = PermissionDecision(
                option_id=None, policy=decision.policy, reason=f"policy chose unknown option {decision.option_id!r}"
            )
        chosen = next((o for o in options if o.option_id == decision.option_id), None)
        refused = chosen is None or chosen.kind.startswith("reject")
        if refused:
            self.permissions_denied += 1
            if not question:
                self.mapper.mark_denied(tc.tool_call_id)
        self.handle.emit(
            PermissionActivity(
                call_id=tc.tool_call_id,
                title=request.title,
                options=options,
                selected=decision.option_id,
                policy=decision.policy,
                reason=decision.reason,
                is_question=question,
            )
        )
        card = None if question else self.mapper.permission_asked(tc, allowed=not refused)
        if card is not None:
            self.handle.emit(card)
        if chosen is not None and chosen.kind == "allow_always" and not question:
            # the Gemini CLI switches its own mode on "Allow for this session" and announces it
            self.mapper.expect_mode_switch()
        self.timers.touch()
        if decision.option_id is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": decision.option_id}}

    async def on_elicitation(self, params: ElicitationParams) -> dict[str, Any]:
        """The agent asks the user (``elicitation/create``): the host's broker
        answers, bounded like a permission and cancelled by an abort."""
        question = question_for(params, self.request.session)
        if isinstance(question, str):
            message = f"the agent sent {question}; answered cancel"
            self.handle.emit(NoticeActivity(level="warning", message=message, code="elicitation"))
            return {"action": "cancel"}
        answer = await self.ask(self._ask, question, bound_s=self._permission_timeout)
        self.timers.touch()
        return response_for(answer, question)


def _prompt_text(request: TurnRequest) -> str:
    """The turn's own text, so an agent echoing it is not taken for history."""
    from agy_host.contract.prompt import TextBlock

    return "\n".join(b.text for b in request.prompt if isinstance(b, TextBlock))


__all__ = ["Turn"]
