"""Per-turn state and the Activity -> HostEvent mapping of the turn layer.

Kept apart from :mod:`agy_host.runtime.turn_layer` (which sequences turns, parks and
bindings) because this is the part renderers depend on: a tool call sent
twice stays one card updated in place, its duration runs from its first
start, permission answers are counted for exit code 5, usage is kept for
``TurnEnded``, a plan the agent sends again unchanged is not shown again, and
the agent's commands are kept for the layer (``chat`` completes them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import msgspec

from agy_host.contract.events import (
    Activity,
    AgentCommand,
    CommandsActivity,
    CommandsUpdated,
    FileDiff,
    HostEvent,
    Notice,
    NoticeActivity,
    PermissionActivity,
    PermissionAnswered,
    PlanActivity,
    PlanEntry,
    PlanUpdated,
    QuestionActivity,
    QuestionAnswered,
    TextActivity,
    TextDelta,
    ThoughtActivity,
    ThoughtDelta,
    ToolCard,
    ToolDoneActivity,
    ToolErrorActivity,
    ToolStartActivity,
    ToolUseRequested,
    UsageActivity,
    UsageCounts,
    UsageReport,
)
from agy_host.contract.rendering import clip_quoted
from agy_host.engine.driver import TurnHandle
from agy_host.runtime.answer_spool import AnswerText
from agy_host.runtime.budget import Budget
from agy_host.runtime.store import SessionBinding
from agy_host.service.tool_names import named_tool
from agy_host.service.unattended import NOBODY, is_unattended

Emit = Callable[[HostEvent], None]


class ToolCardState(msgspec.Struct, kw_only=True):
    started_at: float
    card: ToolCard


class TurnState:
    """What the layer remembers about the turn it is running, across parks."""

    def __init__(self, *, session: str, key: str, cwd: str, binding: SessionBinding | None, started_at: float) -> None:
        self.session = session
        self.key = key
        self.cwd = cwd
        self.binding = binding
        self.started_at = started_at
        self.handle: TurnHandle | None = None
        #: The conversation a write of the binding could not save (said once).
        self.unsaved: str | None = None
        #: The answer's text deltas (spilled to a file where the command asked for no answer).
        self.answer = AnswerText()
        self.usage: UsageCounts | None = None
        self.cumulative: UsageCounts | None = None
        self.cards: dict[str, ToolCardState] = {}
        self.permission_requests = 0
        self.permissions_refused = 0
        #: Questions nobody answered (exit 5), with what they asked.
        self.unanswered: list[str] = []
        #: Who left such a question unanswered and why, by what it asked (for the turn's error).
        self.unanswered_why: dict[str, tuple[str, str]] = {}
        #: Permission requests cancelled with a reason (a policy or callback that
        #: raised, timed out, or answered what it may not): what was asked, and why.
        self.permissions_cancelled: list[tuple[str, str]] = []
        #: Permission requests refused because nobody could be asked (the default
        #: policy without a person): what was asked, and why, with how to allow.
        self.unattended: list[tuple[str, str]] = []
        #: ``--max-tokens`` / ``--max-cost``, and why the turn crossed them.
        self.budget = Budget()
        self.budget_hit: str | None = None
        self.leftover: list[Activity] = []
        self.parked = False
        #: The host tool call the turn is parked on.
        self.handle_request: ToolUseRequested | None = None
        self.message_count: int | None = None
        #: The turn sent a slash command alone while the conversation's
        #: system block was due: the binding keeps it owed.
        self.system_pending = False
        #: ... and this turn opened the conversation with system parts to hold back.
        self.system_held_back = False
        #: The agent's plan as last shown this turn (a resend that changes nothing is not shown).
        self.plan: list[PlanEntry] | None = None
        #: The agent's slash commands, when it advertised them this turn.
        self.commands: list[AgentCommand] | None = None
        #: Host tools the agent called this turn (by the host's names).
        self.host_calls: list[str] = []
        #: Tool calls the agent reported as failed, ``title: error`` (``TurnResult.tool_errors``).
        self.tool_errors: list[str] = []


def map_activity(turn: TurnState, activity: Activity, emit: Emit, now: float) -> None:
    """Turn one Activity into HostEvents (``emit``) and update ``turn``."""
    match activity:
        case TextActivity(delta=delta):
            if delta:
                turn.answer.append(delta)
                emit(TextDelta(delta=delta))
        case ThoughtActivity(delta=delta):
            if delta:
                emit(ThoughtDelta(delta=delta))
        case ToolStartActivity():
            _tool_start(turn, activity, now, emit)
        case ToolDoneActivity():
            _tool_end(
                turn,
                emit,
                activity.call_id,
                activity.name,
                now,
                status="denied" if activity.denied else "done",
                output=activity.output,
                args=activity.args,
                kind=activity.kind,
                title=activity.title,
                diff=activity.diff,
            )
        case ToolErrorActivity():
            _tool_end(
                turn,
                emit,
                activity.call_id,
                activity.name,
                now,
                status="denied" if activity.denied else "failed",
                error=activity.message,
                title=activity.title,
            )
            if not activity.denied:
                _tool_failed(turn, activity, emit)
        case UsageActivity():
            turn.usage = merge_usage(turn.usage, activity.turn)
            if activity.cumulative is not None:  # a report of the turn alone keeps the running totals
                turn.cumulative = merge_usage(turn.cumulative, activity.cumulative)
            emit(UsageReport(turn=activity.turn, cumulative=activity.cumulative))
        case PermissionActivity():
            turn.permission_requests += 1
            if refused(activity):
                turn.permissions_refused += 1
            title = clip_quoted(activity.title)  # the turn's error quotes it: the agent chose its length
            asked = title if activity.is_question else f"permission for {title}"
            if activity.selected is None and activity.reason:
                turn.permissions_cancelled.append((asked, activity.reason))
            if refused(activity) and is_unattended(activity.reason):
                turn.unattended.append((asked, activity.reason[activity.reason.index(NOBODY) :]))
            emit(
                PermissionAnswered(
                    call_id=activity.call_id,
                    title=activity.title,
                    options=activity.options,
                    selected=activity.selected,
                    policy=activity.policy,
                    reason=activity.reason,
                    is_question=activity.is_question,
                )
            )
        case QuestionActivity():
            if activity.unanswered:
                turn.unanswered.append(activity.message)
                if activity.reason:
                    turn.unanswered_why[activity.message] = (activity.by, activity.reason)
            emit(
                QuestionAnswered(
                    kind=activity.kind,
                    message=activity.message,
                    action=activity.action,
                    by=activity.by,
                    origin=activity.origin,
                    reason=activity.reason,
                    fields=activity.fields,
                    unanswered=activity.unanswered,
                )
            )
        case NoticeActivity():
            emit(Notice(level=activity.level, message=activity.message, code=activity.code))
        case PlanActivity(entries=entries):
            if entries != turn.plan:
                turn.plan = entries
                emit(PlanUpdated(entries=entries))
        case CommandsActivity(commands=commands):
            turn.commands = commands
            emit(CommandsUpdated(commands=commands))
        case _:
            pass  # future activity types: nothing to show


def _tool_start(turn: TurnState, activity: ToolStartActivity, now: float, emit: Emit) -> None:
    known = turn.cards.get(activity.call_id)
    if known is not None:
        # Agents resend a call: update the one card in place, keep its clock.
        card = msgspec.structs.replace(
            known.card,
            name=activity.name or known.card.name,
            kind=activity.kind if activity.kind != "other" else known.card.kind,
            title=activity.title or known.card.title,
            args=activity.args or known.card.args,
            diff=activity.diff or known.card.diff,
        )
        if card == known.card:
            return
        known.card = card
        emit(card)
        return
    card = ToolCard(
        call_id=activity.call_id,
        name=activity.name,
        status="started",
        kind=activity.kind,
        title=activity.title,
        args=activity.args,
        diff=activity.diff,
    )
    turn.cards[activity.call_id] = ToolCardState(started_at=now, card=card)
    emit(card)


def _tool_end(
    turn: TurnState,
    emit: Emit,
    call_id: str,
    name: str,
    now: float,
    *,
    status: Literal["done", "failed", "denied"],
    output: str = "",
    error: str = "",
    args: dict[str, Any] | None = None,
    kind: str = "other",
    title: str = "",
    diff: FileDiff | None = None,
) -> None:
    known = turn.cards.get(call_id)
    base = known.card if known is not None else ToolCard(call_id=call_id, name=name, status="started", kind=kind)
    card = msgspec.structs.replace(
        base,
        name=name or base.name,
        status=status,
        kind=kind if kind != "other" else base.kind,
        title=title or base.title,
        args=args or base.args,
        output=output,
        error=error,
        diff=diff or base.diff,
        duration_s=(now - known.started_at) if known is not None else None,
    )
    if known is not None:
        known.card = card
    else:
        turn.cards[call_id] = ToolCardState(started_at=now, card=card)
    emit(card)


#: How much of an agent's error text a tool failure keeps.
TOOL_ERROR_CHARS = 500


def _tool_failed(turn: TurnState, activity: ToolErrorActivity, emit: Emit) -> None:
    """A failed tool call goes into the turn's result (``tool_errors``). When
    it is a host tool the host answered, the agent's side refused the answer
    (its MCP client, say): said at once, for the tool's author to see."""
    card = turn.cards.get(activity.call_id)
    title = activity.title or (card.card.title if card is not None else "") or activity.name
    error = activity.message[:TOOL_ERROR_CHARS]
    turn.tool_errors.append(f"{title}: {error}" if error else title)
    host_tool = named_tool((title, activity.name), turn.host_calls)
    if host_tool is not None:
        message = f"the agent reports host tool {host_tool!r} as failed after agy-host answered it: {error}"
        emit(Notice(level="warning", message=message, code="host-tool-failed"))


def refused(activity: PermissionActivity) -> bool:
    """A permission request counts as refused when it was cancelled or the
    chosen option is a reject."""
    if activity.selected is None:
        return True
    for option in activity.options:
        if option.option_id == activity.selected:
            return option.kind.startswith("reject")
    return False


def closed_error(turn: TurnState) -> str:
    """Why a turn failed closed (exit 5), in the words of what did not answer.

    A question left unanswered says why: nobody could answer (no rule, no
    terminal, no answer in time), or what answered failed (the program's
    ``on_question`` raised, or returned what it may not). Permission requests
    all refused, some because nobody could be asked, say so and how to allow
    (:mod:`agy_host.service.unattended`: nobody chose that refusal); some of
    them cancelled, say the cancels' reasons (a policy or permission callback
    that raised, timed out, or answered wrongly). A turn whose refusals were
    all deliberate has no error. What the agent asked is quoted clipped
    (:func:`~agy_host.contract.rendering.clip_quoted`): a 400 KB title made
    a 400 KB error."""
    if turn.unanswered:
        questions = turn.unanswered[:3]
        said = [turn.unanswered_why[m] for m in questions if m in turn.unanswered_why]
        quoted = "; ".join(clip_quoted(m) for m in questions)
        if not said:
            return f"the agent asked {quoted} and nobody answered (give an --answers rule, or run where you can answer)"
        verb = "nobody answered" if all(by in ("", "host") for by, _ in said) else "got no answer"
        return f"the agent asked {quoted} and {verb}: {'; '.join(dict.fromkeys(why for _, why in said))}"
    everything_refused = turn.permission_requests > 0 and turn.permissions_refused == turn.permission_requests
    if everything_refused and turn.unattended:
        asked = "; ".join(dict.fromkeys(what for what, _ in turn.unattended[:3]))
        return f"the agent asked {asked} and it was refused: {turn.unattended[0][1]}"
    if everything_refused and turn.permissions_cancelled:
        cancelled = turn.permissions_cancelled[:3]
        asked = "; ".join(what for what, _ in cancelled)
        return f"the agent asked {asked} and it was cancelled: " + "; ".join(
            dict.fromkeys(why.removesuffix("; cancelled") for _, why in cancelled)
        )
    return ""


__all__ = ["TOOL_ERROR_CHARS", "Emit", "ToolCardState", "TurnState", "closed_error", "map_activity", "refused"]


def merge_usage(old: UsageCounts | None, new: UsageCounts) -> UsageCounts:
    """Agents report usage in pieces (ACP ``usage_update`` has context and cost,
    the prompt response has tokens): keep every field some report gave, the
    newest value winning."""
    if old is None:
        return new
    values = {f: getattr(new, f) if getattr(new, f) is not None else getattr(old, f) for f in new.__struct_fields__}
    return UsageCounts(**values)
