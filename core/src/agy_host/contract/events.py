"""The wire-independent event model.

Two families of events flow through a turn:

* **Activities** go from an engine to the turn layer. They are what an engine
  observed on its wire, already translated out of the dialect (ACP updates,
  stream-json steps) but not yet shaped for a person.
* **HostEvents** go from the turn layer to renderers. They carry what a user
  sees: streamed text, tool cards, usage, notices and the end of the turn.

Both are ``msgspec.Struct`` tagged unions (``tag_field="type"``) so a JSON
renderer can encode them as they are, and so a third-party renderer can
``match`` on them. New variants may be added in minor versions: renderers must
ignore types they do not know.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

#: Why a turn ended, as the host reports it to renderers and scripts.
#: ``tool_use`` means the turn is parked on a host tool call and will be
#: re-entered with the tool's result.
StopReason = Literal["stop", "tool_use", "error", "aborted"]

#: The status of a turn as an engine settles it.
OutcomeStatus = Literal["ok", "error"]

#: The typed cause of a failed turn, so renderers and exit codes can tell a
#: timeout from an auth problem without parsing prose.
ErrorKind = Literal[
    "timeout",  # overall deadline
    "inactivity",  # no output for the inactivity budget
    "auth",  # the agent needs a sign-in; message carries its remediation text
    "spawn",  # the agent command could not be started
    "protocol",  # the agent spoke something we could not use
    "agent",  # the agent reported a failure (refusal, quota, crash, ...)
    "exited",  # the agent process died mid-turn
    "usage",  # the request itself was wrong (bad model, unsupported content)
    "internal",  # a bug in agy-host or a plugin
    "budget",  # the turn crossed --max-tokens or --max-cost and was stopped
    "no_session",  # --resume: the bound conversation could not be continued (exit 4)
    "busy",  # --no-wait: another command was running a turn on the session (exit 7)
]


class _Event(msgspec.Struct, tag_field="type", omit_defaults=True, kw_only=True):
    """Base for every event; subclasses set ``tag=``."""


# ---------------------------------------------------------------------------
# Shared value types
# ---------------------------------------------------------------------------


class FileDiff(msgspec.Struct, omit_defaults=True, kw_only=True):
    """An edit as the agent described it: whole old and new text of one file.

    ``old_text`` is ``None`` for a created file (ACP sends no ``oldText``).
    """

    path: str
    new_text: str
    old_text: str | None = None


class UsageCounts(msgspec.Struct, omit_defaults=True, kw_only=True):
    """Token counts for one turn; ``None`` means the agent did not say."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    thinking_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    total_tokens: int | None = None
    #: Context window occupancy (ACP ``usage_update.used`` / ``size``).
    context_used: int | None = None
    context_size: int | None = None
    cost_amount: float | None = None
    cost_currency: str | None = None


#: Where one step of the agent's plan stands (ACP ``PlanEntryStatus``).
PlanStatus = Literal["pending", "in_progress", "completed"]
#: How much one step of the plan matters to the agent (ACP ``PlanEntryPriority``).
PlanPriority = Literal["high", "medium", "low"]


class PlanEntry(msgspec.Struct, omit_defaults=True, kw_only=True):
    """One step of the agent's plan (its todo list): what, and how far.

    Engines map what their agent sends onto these values; a status they do
    not know reads as ``pending`` and an unknown priority is left out, so a
    newer agent degrades to a plainer checklist, never to an error.
    """

    content: str
    status: PlanStatus
    priority: PlanPriority | None = None


class AgentCommand(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A slash command the agent offers (``/compact``), named without the ``/``.

    ``input_hint`` is set when the command takes text after its name and the
    agent says what (``"instructions for the summary"``).
    """

    name: str
    description: str = ""
    input_hint: str | None = None


class PermissionOption(msgspec.Struct, omit_defaults=True, kw_only=True):
    """One answer an agent offers for a permission request.

    ``kind`` is the ACP option kind (``allow_once``, ``allow_always``,
    ``reject_once``, ``reject_always``) or whatever the agent sent.
    """

    option_id: str
    name: str
    kind: str


# ---------------------------------------------------------------------------
# Activities: engine -> turn layer
# ---------------------------------------------------------------------------


class TextActivity(_Event, tag="text", kw_only=True):
    """A piece of the agent's answer, already de-duplicated (a delta)."""

    delta: str


class ThoughtActivity(_Event, tag="thought", kw_only=True):
    """A piece of the agent's visible reasoning."""

    delta: str


class ToolStartActivity(_Event, tag="tool_start", kw_only=True):
    """The agent started (or asked to start) one of its own tools. Sent again
    for the same ``call_id`` when the call changed (a new title): the card is
    updated in place."""

    call_id: str
    name: str
    kind: str = "other"
    title: str = ""
    args: dict[str, Any] = msgspec.field(default_factory=dict)
    locations: list[str] = msgspec.field(default_factory=list)
    diff: FileDiff | None = None


class ToolDoneActivity(_Event, tag="tool_done", kw_only=True):
    """One of the agent's own tools finished; ``diff`` is set for edits.
    ``title`` is the call's latest title (``""``: keep the card's)."""

    call_id: str
    name: str
    kind: str = "other"
    title: str = ""
    args: dict[str, Any] = msgspec.field(default_factory=dict)
    output: str = ""
    diff: FileDiff | None = None
    #: True when the agent reports the tool as denied (by a policy or the user).
    denied: bool = False


class ToolErrorActivity(_Event, tag="tool_error", kw_only=True):
    """One of the agent's own tools failed; ``title`` as for :class:`ToolDoneActivity`."""

    call_id: str
    name: str
    message: str
    denied: bool = False
    title: str = ""


class UsageActivity(_Event, tag="usage", kw_only=True):
    """Token usage for this turn (``turn``) and, when known, since the start of
    the agent conversation (``cumulative``)."""

    turn: UsageCounts
    cumulative: UsageCounts | None = None


class PermissionActivity(_Event, tag="permission", kw_only=True):
    """The agent asked for permission and the policy answered it.

    Engines answer permission requests themselves through the policy (so the
    answer never waits on a renderer); this activity reports what happened.
    ``selected`` is the chosen option id, ``None`` when the request was
    cancelled.
    """

    call_id: str
    title: str
    options: list[PermissionOption]
    selected: str | None
    policy: str
    reason: str = ""
    #: Antigravity asks questions as permission requests (``interaction_`` ids).
    is_question: bool = False


class QuestionActivity(_Event, tag="question", kw_only=True):
    """The agent asked the user a question (an ACP elicitation form or URL)
    and the host's broker answered it (:mod:`agy_host.contract.interactions`).
    ``fields`` names the form fields answered; their values are the agent's
    and the user's, not the event stream's."""

    kind: str
    message: str
    action: str
    by: str = ""
    origin: str = ""
    reason: str = ""
    fields: list[str] = msgspec.field(default_factory=list)
    #: Nobody could answer (no rule, no one to ask): the turn exits 5.
    unanswered: bool = False


class BridgeCallActivity(_Event, tag="bridge_call", kw_only=True):
    """The agent called a host tool through the bridge: the turn parks."""

    call_id: str
    name: str
    args: dict[str, Any] = msgspec.field(default_factory=dict)


class NoticeActivity(_Event, tag="notice", kw_only=True):
    """Something the user must see that is not part of the answer: a sign-in
    URL the agent printed, a recovered protocol error, a warning."""

    level: Literal["info", "warning", "error"] = "info"
    message: str
    code: str = ""


class PlanActivity(_Event, tag="plan", kw_only=True):
    """The agent's plan as it stands now (ACP ``plan``): the whole list every
    time, replacing the one before; an empty list clears it."""

    entries: list[PlanEntry]


class CommandsActivity(_Event, tag="commands", kw_only=True):
    """The agent's slash commands as it now offers them (ACP
    ``available_commands_update``): the whole list, replacing the one before."""

    commands: list[AgentCommand]


class OutcomeActivity(_Event, tag="outcome", kw_only=True):
    """The last activity of every turn: how the engine settled it."""

    status: OutcomeStatus
    #: The host stop reason this outcome maps to (never ``tool_use``: parks are
    #: reported through :class:`BridgeCallActivity`).
    stop_reason: StopReason
    #: The agent's own stop reason (``end_turn``, ``SUCCESS``, ...), verbatim.
    agent_stop_reason: str = ""
    conversation_id: str | None = None
    response: str = ""
    error: str = ""
    error_kind: ErrorKind | None = None
    aborted: bool = False


Activity = (
    TextActivity
    | ThoughtActivity
    | ToolStartActivity
    | ToolDoneActivity
    | ToolErrorActivity
    | UsageActivity
    | PermissionActivity
    | QuestionActivity
    | BridgeCallActivity
    | NoticeActivity
    | PlanActivity
    | CommandsActivity
    | OutcomeActivity
)


# ---------------------------------------------------------------------------
# HostEvents: turn layer -> renderers
# ---------------------------------------------------------------------------

#: Version of the HostEvent JSON schema; bumped on incompatible changes.
EVENT_SCHEMA_VERSION = 1


class TurnStarted(_Event, tag="turn_start", kw_only=True):
    """The first event of a turn: which session, engine, agent and model run it."""

    session: str
    engine: str
    agent: str = ""
    model: str = ""
    conversation_id: str | None = None
    #: True when the engine fell back to the bundled sandbox agent.
    sandbox: bool = False


class TextDelta(_Event, tag="text", kw_only=True):
    """A piece of the agent's answer, in order; the pieces joined are the turn's ``response``."""

    delta: str


class ThoughtDelta(_Event, tag="thought", kw_only=True):
    """A piece of the agent's reasoning, when it shares it; never part of the ``response``."""

    delta: str


class ToolCard(_Event, tag="tool", kw_only=True):
    """The state of one agent tool call; sent again as its status changes.

    Renderers key cards by ``call_id`` and update in place: agents send the
    same call more than once.
    """

    call_id: str
    name: str
    status: Literal["started", "done", "failed", "denied"]
    kind: str = "other"
    title: str = ""
    args: dict[str, Any] = msgspec.field(default_factory=dict)
    output: str = ""
    error: str = ""
    diff: FileDiff | None = None
    duration_s: float | None = None


class PermissionAnswered(_Event, tag="permission", kw_only=True):
    """A permission request (or a question put as one) and how it was answered: by whom, and why."""

    call_id: str
    title: str
    options: list[PermissionOption]
    selected: str | None
    policy: str
    reason: str = ""
    is_question: bool = False


class QuestionAnswered(_Event, tag="question", kw_only=True):
    """The agent asked the user a question; how it was answered, and by whom."""

    kind: str
    message: str
    action: str
    by: str = ""
    origin: str = ""
    reason: str = ""
    fields: list[str] = msgspec.field(default_factory=list)
    unanswered: bool = False


class UsageReport(_Event, tag="usage", kw_only=True):
    """Token counts (and cost) as the agent reports them, for the turn and, when known, the conversation."""

    turn: UsageCounts
    cumulative: UsageCounts | None = None


class Notice(_Event, tag="notice", kw_only=True):
    """Something the user should know that is not the answer: a warning, a fallback, an agent's status line."""

    level: Literal["info", "warning", "error"] = "info"
    message: str
    code: str = ""


class PlanUpdated(_Event, tag="plan", kw_only=True):
    """The agent's plan changed: the whole checklist as it stands now.

    Sent when the agent sends a plan that differs from the last one of the
    turn; renderers redraw the checklist (an empty list clears it).
    """

    entries: list[PlanEntry]


class CommandsUpdated(_Event, tag="commands", kw_only=True):
    """The slash commands the agent offers now, the whole list. ``chat`` sends
    a ``/name`` the agent advertised to the agent as a prompt."""

    commands: list[AgentCommand]


class ToolUseRequested(_Event, tag="tool_use", kw_only=True):
    """The turn parked on a host tool call; the host runs it next."""

    call_id: str
    name: str
    args: dict[str, Any] = msgspec.field(default_factory=dict)


class TurnEnded(_Event, tag="turn_end", kw_only=True):
    """The last event of a turn: why it stopped, its whole response, usage and error."""

    stop_reason: StopReason
    duration_s: float
    conversation_id: str | None = None
    response: str = ""
    error: str = ""
    error_kind: ErrorKind | None = None
    agent_stop_reason: str = ""
    #: ``None`` when the agent reported no usage this turn.
    usage: UsageCounts | None = None
    cumulative_usage: UsageCounts | None = None
    #: The conversation the session was bound to, when the agent could not
    #: continue it and this turn started a new one (``conversation_id``);
    #: a notice with code ``conversation-replaced`` says why.
    replaced_conversation_id: str | None = None
    #: The exit code the turn gives the command, so the closing line can say
    #: why it is not 0 (a refused permission gives 5 with no error); ``None``
    #: when the turn layer did not finish the turn.
    exit_code: int | None = None
    #: ``True`` where the command asked for no answer in memory and every
    #: observer can do without (``agy-host run``): ``response`` is empty and
    #: the answer, streamed as ``text`` events, is read while this event is
    #: handled with :func:`agy_host.contract.answer.answer_slices`. Never
    #: ``True`` in ``--format json`` output, the Python API or a plugin that
    #: did not declare it can do without (docs/plugin-guide.md).
    response_elided: bool = False


HostEvent = (
    TurnStarted
    | TextDelta
    | ThoughtDelta
    | ToolCard
    | PermissionAnswered
    | QuestionAnswered
    | UsageReport
    | Notice
    | PlanUpdated
    | CommandsUpdated
    | ToolUseRequested
    | TurnEnded
)

__all__ = [
    "EVENT_SCHEMA_VERSION",
    "Activity",
    "AgentCommand",
    "BridgeCallActivity",
    "CommandsActivity",
    "CommandsUpdated",
    "ErrorKind",
    "FileDiff",
    "HostEvent",
    "Notice",
    "NoticeActivity",
    "OutcomeActivity",
    "OutcomeStatus",
    "PermissionActivity",
    "PermissionAnswered",
    "PermissionOption",
    "PlanActivity",
    "PlanEntry",
    "PlanPriority",
    "PlanStatus",
    "PlanUpdated",
    "QuestionActivity",
    "QuestionAnswered",
    "StopReason",
    "TextActivity",
    "TextDelta",
    "ThoughtActivity",
    "ThoughtDelta",
    "ToolCard",
    "ToolDoneActivity",
    "ToolErrorActivity",
    "ToolStartActivity",
    "ToolUseRequested",
    "TurnEnded",
    "TurnStarted",
    "UsageActivity",
    "UsageCounts",
    "UsageReport",
]
