"""ACP ``session/update`` -> host Activities, and stop-reason mapping.

One :class:`UpdateMapper` per turn holds the little state the mapping needs:

* the cumulative-resend guard for message chunks;
* the tool calls seen so far, so a repeated ``tool_call`` (Antigravity sends the
  pending call twice, verbatim) updates in place instead of starting a second
  card, and so a completion carries the name, arguments and diff of its start;
* the last started tool, adopted by a completion under an id never seen (the
  server's "supersede" quirk: an approved call reports failure while the real
  edit completes under another id);
* the calls the agent asked permission for (:meth:`UpdateMapper.permission_asked`):
  the Gemini CLI sends no ``tool_call`` for those, only the request and then
  the call's end, so the request names and titles the card.

A call's card follows its title: a ``tool_call_update`` (or a repeated
``tool_call``) with a new title updates the card while the call runs
(claude-agent-acp titles an edit "Edit" first, then "Edit src/app.ts"), and
its end carries the latest title.

Names come from ``_meta.mcp.tool`` (the clean MCP tool name), else the title
("Running edit_file" -> ``edit_file``), else the kind. Arguments are
``rawInput.arguments`` when that is an object (the MCP envelope), else
``rawInput``. A completion's output is the text of its content entries, falling
back to ``rawOutput`` (often only a display title).
"""

from __future__ import annotations

import operator
import re
from typing import Any

import msgspec

from agy_host.contract.events import (
    Activity,
    AgentCommand,
    CommandsActivity,
    FileDiff,
    NoticeActivity,
    OutcomeActivity,
    PlanActivity,
    PlanEntry,
    TextActivity,
    ThoughtActivity,
    ToolDoneActivity,
    ToolErrorActivity,
    ToolStartActivity,
    UsageActivity,
    UsageCounts,
)
from agy_host.engine.textguard import CumulativeGuard
from agy_host_acp import schema as s

_CONTENT_TEXT = operator.attrgetter("content.text")

#: The Gemini CLI (0.61) announces an approval mode change as a message chunk
#: of its own, ``[MODE_UPDATE] <mode>``, in the turn's answer. It is the
#: agent's state, not its answer: shown as a notice, never as text, when it
#: names the mode this turn asked for (:meth:`UpdateMapper.expect_mode`); the
#: same words from the model (a chunk can be anything) stay its text.
_MODE_MARK = "[MODE_UPDATE] "
#: What :meth:`UpdateMapper.expect_mode_switch` awaits: any one mode (a
#: name no mode has: it fails the announcement's pattern).
_ANY_MODE = "*"
_mode_update = re.compile(r"\[MODE_UPDATE\] ([A-Za-z0-9_.:-]{1,64})").fullmatch


def _mode_notice(mode: str) -> NoticeActivity:
    return NoticeActivity(level="info", message=f"the agent's mode is now {mode}", code="agent-mode")


_TITLE_TOOL = re.compile(r"\bRun(?:ning)?\s+([A-Za-z_][\w.]*)", re.IGNORECASE)


def tool_name(update: s.ToolCallFields | s.PermissionToolCall, fallback: str = "tool") -> str:
    meta = update.meta or {}
    mcp = meta.get("mcp")
    if isinstance(mcp, dict) and isinstance(mcp.get("tool"), str) and mcp["tool"]:
        return str(mcp["tool"])
    if update.title:
        m = _TITLE_TOOL.search(update.title)
        if m:
            return m.group(1)
    if update.kind:
        return update.kind
    return fallback


def tool_args(raw_input: Any) -> dict[str, Any]:
    if isinstance(raw_input, dict):
        inner = raw_input.get("arguments")
        if isinstance(inner, dict):
            return inner
        return raw_input
    return {}


def first_diff(content: list[s.ToolContent] | None) -> FileDiff | None:
    for entry in content or ():
        if entry.type == "diff" and entry.path is not None and entry.new_text is not None:
            return FileDiff(path=entry.path, new_text=entry.new_text, old_text=entry.old_text)
    return None


def content_text(content: list[s.ToolContent] | None) -> str:
    parts: list[str] = []
    for entry in content or ():
        if entry.type == "content" and entry.content is not None and entry.content.text:
            parts.append(entry.content.text)
        elif entry.text:
            parts.append(entry.text)
    return "\n".join(parts)


def _raw_text(raw: Any) -> str:
    if raw is None:
        return ""
    if isinstance(raw, str):
        return raw
    return msgspec.json.encode(raw).decode()


class _Tool:
    __slots__ = ("args", "diff", "ended", "kind", "locations", "name", "title")

    def __init__(
        self,
        name: str,
        kind: str,
        title: str,
        args: dict[str, Any],
        diff: FileDiff | None,
        *,
        locations: list[str] | None = None,
    ) -> None:
        self.name = name
        self.kind = kind
        self.title = title
        self.args = args
        self.diff = diff
        self.locations = locations or []
        #: The agent reported the call's end: later updates change no card.
        self.ended = False

    def start(self, call_id: str) -> ToolStartActivity:
        """The call's card as it stands (a first start, or an update in place)."""
        return ToolStartActivity(
            call_id=call_id,
            name=self.name,
            kind=self.kind,
            title=self.title,
            args=self.args,
            locations=self.locations,
            diff=self.diff,
        )

    def retitle(self, title: str | None, call_id: str) -> ToolStartActivity | None:
        """Take a new title; the card's update when it changed while the call runs."""
        if not title or title == self.title:
            return None
        self.title = title
        return None if self.ended else self.start(call_id)


_STATUSES = frozenset({"pending", "in_progress", "completed"})
_PRIORITIES = frozenset({"high", "medium", "low"})


def plan_entries(update: s.Plan) -> list[PlanEntry]:
    """The plan's entries; one without text is skipped (as the schema says
    for an invalid entry), an unknown status reads as pending and an
    unknown priority is left out."""
    out: list[PlanEntry] = []
    for raw in update.entries:
        content = raw.get("content") if isinstance(raw, dict) else None
        if not isinstance(content, str) or not content.strip():
            continue
        status = raw.get("status")
        priority = raw.get("priority")
        out.append(
            PlanEntry(
                content=content,
                status=status if status in _STATUSES else "pending",
                priority=priority if priority in _PRIORITIES else None,
            )
        )
    return out


def agent_commands(update: s.AvailableCommandsUpdate) -> list[AgentCommand]:
    """The advertised commands with their description and input hint
    (``input.hint``); a nameless one is skipped."""
    out: list[AgentCommand] = []
    for command in update.available_commands:
        name = command.name.strip().lstrip("/")
        if not name:
            continue
        hint = command.input.get("hint") if isinstance(command.input, dict) else None
        out.append(
            AgentCommand(
                name=name,
                description=command.description,
                input_hint=hint if isinstance(hint, str) and hint else None,
            )
        )
    return out


def _notice(update: s.NoticeUpdate) -> NoticeActivity:
    """An agent's ``notice``: its severity (an unknown one reads as info), title and description."""
    level = update.severity if update.severity in ("info", "warning", "error") else "info"
    text = update.title + (f": {update.description}" if update.description else "")
    return NoticeActivity(level=level, message=text or "(an empty notice)", code="agent-notice")  # type: ignore[arg-type]


class UpdateMapper:
    """Stateful mapping of one turn's updates to Activities."""

    def __init__(self) -> None:
        #: The host keeps the streamed deltas (its turn layer returns them
        #: joined), so the guard does not keep a long answer a second time.
        self.guard = CumulativeGuard(keep_text=False)
        self._tools: dict[str, _Tool] = {}
        self._last: _Tool | None = None
        self._denied: set[str] = set()
        self.ignored: dict[str, int] = {}
        #: Compaction id -> its summary so far (``compaction_summary_chunk``).
        self._summaries: dict[str, list[str]] = {}
        #: The agent's latest config options (``config_option_update``), for the driver to apply.
        self.config_options: list[s.ConfigOption] | None = None
        #: The session's title as the agent last set it (``session_info_update``).
        self.title: str | None = None
        #: The session's cost when the turn began (``None``: not known, e.g. a
        #: session loaded after a restart), and the latest total reported.
        self.cost_before: float | None = None
        self.cost_total: float | None = None
        #: Modes this turn set on the agent, each announced at most once.
        self._modes_asked: set[str] = set()

    def expect_mode(self, mode: str) -> None:
        """The driver set ``mode`` for this turn: the agent may announce it."""
        self._modes_asked.add(mode)

    def expect_mode_switch(self) -> None:
        """The host answered "always" to a permission request: an agent may
        switch its own mode for it (the Gemini CLI's "Allow for this session"
        on an edit switches it to ``autoEdit``) and announce that, once."""
        self._modes_asked.add(_ANY_MODE)

    def _announced(self, text: str) -> NoticeActivity | None:
        """The notice for a mode announcement this turn asked for, else ``None``."""
        said = _mode_update(text)
        if said is None:
            return None
        mode = said.group(1)
        if mode in self._modes_asked:
            self._modes_asked.discard(mode)
        elif _ANY_MODE in self._modes_asked:
            self._modes_asked.discard(_ANY_MODE)
        else:
            return None
        return _mode_notice(mode)

    @property
    def response(self) -> str:
        """The answer as streamed; ``""`` past the guard's window (the host
        joins the deltas it was given instead: the same text)."""
        return self.guard.text if self.guard.complete else ""

    def _usage(self, update: s.UsageUpdate) -> UsageActivity:
        """ACP's ``usage_update``: the context window now (``used``/``size``)
        and the session's *cumulative* cost. The turn's cost is the difference
        from the total when the turn began; unknown (``None``) when that total
        is (a session loaded after a restart), never the session's total."""
        total = update.cost.amount if update.cost else None
        currency = update.cost.currency if update.cost else None
        turn_cost = None
        if total is not None:
            self.cost_total = total
            if self.cost_before is not None:
                turn_cost = max(0.0, total - self.cost_before)
        context = {"context_used": update.used, "context_size": update.size}
        return UsageActivity(
            turn=UsageCounts(
                **context, cost_amount=turn_cost, cost_currency=currency if turn_cost is not None else None
            ),
            cumulative=UsageCounts(**context, cost_amount=total, cost_currency=currency),
        )

    def mark_denied(self, call_id: str) -> None:
        """The permission policy rejected this call: its end reads as denied."""
        self._denied.add(call_id)

    def map(self, update: s.Update) -> Activity | None:
        kind = type(update)
        if kind is s.AgentMessageChunk:
            text = update.content.text  # type: ignore[union-attr]
            if not text:
                return None
            if self._modes_asked and text.startswith(_MODE_MARK) and (notice := self._announced(text)) is not None:
                return notice
            delta = self.guard.feed(text)
            return TextActivity(delta=delta) if delta else None
        if kind is s.AgentThoughtChunk:
            text = update.content.text  # type: ignore[union-attr]
            return ThoughtActivity(delta=text) if text else None
        if isinstance(update, s.ToolCall):
            return self._tool_call(update)
        if isinstance(update, s.ToolCallUpdate):
            return self._tool_update(update)
        if isinstance(update, s.UsageUpdate):
            return self._usage(update)
        if isinstance(update, s.Plan):
            return PlanActivity(entries=plan_entries(update))
        if isinstance(update, s.AvailableCommandsUpdate):
            return CommandsActivity(commands=agent_commands(update))
        if isinstance(update, s.NoticeUpdate):
            return _notice(update)
        if isinstance(update, s.ConfigOptionUpdate):
            self.config_options = list(update.config_options)
            return None
        if isinstance(update, s.SessionInfoUpdate):
            if update.title and update.title != self.title:
                self.title = update.title
                return NoticeActivity(level="info", message=f"session title: {update.title}", code="session-info")
            return None
        if isinstance(update, (s.CompactionUpdate, s.CompactionSummaryChunk)):
            return self._compaction(update)
        name = update.kind if isinstance(update, s.UnknownUpdate) else type(update).__name__
        self.ignored[name] = self.ignored.get(name, 0) + 1
        return None

    def _compaction(self, update: s.CompactionUpdate | s.CompactionSummaryChunk) -> Activity | None:
        """Summary chunks are kept per compaction and shown with its end, so a
        long summary is one notice, not hundreds; nothing is dropped."""
        key = update.compaction_id
        parts = self._summaries.setdefault(key, [])
        if isinstance(update, s.CompactionSummaryChunk):
            if update.content is not None and update.content.text:
                parts.append(update.content.text)
            return None
        if update.summary is not None:  # patch semantics: a given summary replaces the chunks
            parts[:] = [c.text for c in update.summary if c.text]
        status = update.status or "in_progress"
        if status == "in_progress":
            return NoticeActivity(level="info", message="the agent is compacting its context", code="compaction")
        summary = "".join(parts).strip()
        self._summaries.pop(key, None)
        if status == "completed":
            told = f": {summary}" if summary else ""
            return NoticeActivity(level="info", message=f"the agent compacted its context{told}", code="compaction")
        why = f": {update.error}" if update.error else ""
        message = f"the agent's context compaction {status}{why}"
        return NoticeActivity(level="warning", message=message, code="compaction")

    def map_many(self, updates: list[s.Update], kinds: set[type] | None = None) -> list[Activity]:
        """:meth:`map` over a batch (one pipe read), in order, with each run of
        consecutive message chunks mapped as one text delta (and each run of
        thought chunks as one thought delta): the turn handle would merge them
        anyway, and the run costs one guard call instead of one per chunk.
        ``kinds``: the set of the updates' types, when the caller has it."""
        out: list[Activity] = []
        message = s.AgentMessageChunk
        if kinds is None:
            kinds = set(map(type, updates))
        if kinds == {message}:  # the flood: message chunks only, C-level loops
            texts = list(filter(None, map(_CONTENT_TEXT, updates)))
            joined = "".join(texts)
            # one search of the batch, not one per chunk; none while no mode is awaited
            if not self._modes_asked or _MODE_MARK not in joined:
                delta = self.guard.feed_many(texts, joined)
                if delta:
                    out.append(TextActivity(delta=delta))
                return out
        thought = s.AgentThoughtChunk
        run: list[str] = []
        run_kind: type | None = None
        for update in updates:
            kind = type(update)
            if (
                kind is message and self._modes_asked and (text := update.content.text or "").startswith(_MODE_MARK)  # type: ignore[union-attr]
            ):
                notice = self._announced(text)
                if notice is not None:
                    if run:
                        self._flush_run(run_kind, run, out)
                        run = []
                    run_kind = None
                    out.append(notice)
                    continue
            if kind is message or kind is thought:
                if kind is not run_kind:
                    if run:
                        self._flush_run(run_kind, run, out)
                        run = []
                    run_kind = kind
                text = update.content.text  # type: ignore[union-attr]
                if text:
                    run.append(text)
                continue
            if run:
                self._flush_run(run_kind, run, out)
                run = []
            run_kind = None
            activity = self.map(update)
            if activity is not None:
                out.append(activity)
        if run:
            self._flush_run(run_kind, run, out)
        return out

    def _flush_run(self, kind: type | None, texts: list[str], out: list[Activity]) -> None:
        if kind is s.AgentMessageChunk:
            delta = self.guard.feed_many(texts)
            if delta:
                out.append(TextActivity(delta=delta))
        else:
            out.append(ThoughtActivity(delta="".join(texts)))

    def _tool_call(self, update: s.ToolCall) -> Activity | None:
        call_id = update.tool_call_id
        diff = first_diff(update.content)
        known = self._tools.get(call_id)
        if known is not None:
            known.diff = diff or known.diff
            if update.raw_input:
                known.args = tool_args(update.raw_input)
            self._last = known
            return known.retitle(update.title, call_id)
        tool = _Tool(
            name=tool_name(update),
            kind=update.kind or "other",
            title=update.title or "",
            args=tool_args(update.raw_input),
            diff=diff,
            locations=[loc.path for loc in update.locations or ()],
        )
        self._tools[call_id] = tool
        self._last = tool
        return tool.start(call_id)

    def permission_asked(self, call: s.PermissionToolCall, *, allowed: bool) -> ToolStartActivity | None:
        """The agent asked permission for ``call`` (answered: ``allowed``).

        A call never seen is kept, named and titled by the request, so its
        updates find it (the Gemini CLI sends no ``tool_call`` before its
        requests, and titles only some of their ends); once allowed, its card
        starts now. A known call without a title takes the request's. Returns
        the card to show or update, if any."""
        call_id = call.tool_call_id
        known = self._tools.get(call_id)
        if known is not None:
            return None if known.title else known.retitle(call.title, call_id)
        tool = _Tool(
            name=tool_name(call),
            kind=call.kind or "other",
            title=call.title or "",
            args=tool_args(call.raw_input),
            diff=first_diff(call.content),
        )
        self._tools[call_id] = tool
        if not allowed:
            return None  # the agent may never report it: no card left "started"
        self._last = tool
        return tool.start(call_id)

    def _tool_update(self, update: s.ToolCallUpdate) -> Activity | None:
        call_id = update.tool_call_id
        tool = self._tools.get(call_id)
        diff = first_diff(update.content)
        if tool is None and update.status in {"completed", "failed"}:
            tool = self._last  # the supersede quirk: adopt the last started call
        status = update.status
        ends = status in {"completed", "failed"}
        retitled = None
        if tool is not None:
            if diff is not None:
                tool.diff = diff
            if ends:
                tool.title = update.title or tool.title
                tool.ended = True
            else:
                retitled = tool.retitle(update.title, call_id)
        title = tool.title if tool else (update.title or "")
        if status == "completed":
            output = content_text(update.content) or _raw_text(update.raw_output)
            return ToolDoneActivity(
                call_id=call_id,
                name=tool.name if tool else tool_name(update),
                kind=tool.kind if tool else (update.kind or "other"),
                title=title,
                args=tool.args if tool else tool_args(update.raw_input),
                output=output,
                diff=tool.diff if tool else diff,
                denied=call_id in self._denied,
            )
        if status == "failed":
            message = content_text(update.content) or _raw_text(update.raw_output) or "tool failed"
            return ToolErrorActivity(
                call_id=call_id,
                name=tool.name if tool else tool_name(update),
                message=message,
                denied=call_id in self._denied,
                title=title,
            )
        return retitled


def prompt_usage(result: s.PromptResult) -> UsageCounts | None:
    """Usage reported in the prompt response (``usage``) or, for Gemini CLI,
    ``_meta.quota.token_count``."""
    if result.usage is not None:
        u = result.usage
        return UsageCounts(
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            thinking_tokens=u.thought_tokens,
            cache_read_tokens=u.cached_read_tokens,
            cache_write_tokens=u.cached_write_tokens,
            total_tokens=u.total_tokens,
        )
    meta = result.meta or {}
    quota = meta.get("quota")
    if isinstance(quota, dict) and isinstance(quota.get("token_count"), dict):
        tc = quota["token_count"]
        inp, out = tc.get("input_tokens"), tc.get("output_tokens")
        if isinstance(inp, int) or isinstance(out, int):
            total = (inp or 0) + (out or 0)
            return UsageCounts(input_tokens=inp, output_tokens=out, total_tokens=total)
    return None


#: stopReason -> (status, host stop reason, error text)
_STOP: dict[str, tuple[str, str, str]] = {
    "end_turn": ("ok", "stop", ""),
    "cancelled": ("ok", "aborted", ""),
    "max_tokens": ("ok", "stop", ""),
    "refusal": ("error", "error", "the model refused the request"),
    "max_turn_requests": ("error", "error", "the turn exceeded the agent's request limit"),
}


def stop_warning(stop_reason: str) -> str:
    """A notice for stop reasons that end the turn normally but cut it short."""
    if stop_reason == "max_tokens":
        return "the response hit the agent's token cap; it may be cut short"
    return ""


def outcome_for(stop_reason: str, *, conversation_id: str | None, response: str) -> OutcomeActivity:
    status, host_reason, error = _STOP.get(stop_reason, ("ok", "stop", ""))
    if status == "error":
        return OutcomeActivity(
            status="error",
            stop_reason="error",
            agent_stop_reason=stop_reason,
            conversation_id=conversation_id,
            response=response,
            error=error,
            error_kind="agent",
        )
    return OutcomeActivity(
        status="ok",
        stop_reason="aborted" if host_reason == "aborted" else "stop",
        agent_stop_reason=stop_reason,
        conversation_id=conversation_id,
        response=response,
        error=error,
        aborted=host_reason == "aborted",
    )


__all__ = [
    "UpdateMapper",
    "agent_commands",
    "content_text",
    "first_diff",
    "outcome_for",
    "plan_entries",
    "prompt_usage",
    "stop_warning",
    "tool_args",
    "tool_name",
]
