"""Formatting shared by the plain and the rich renderer.

Both renderers must say the same things (a script reading the plain output
and a person watching the rich one see the same facts), so the wording of
usage, durations, tool labels and edit labels lives here once. What the
agent chose the length of (titles, names, reasons) is clipped
(:func:`~agy_host.contract.rendering.clip`).
"""

from __future__ import annotations

import os
import re
from typing import Any

import msgspec

from agy_host.contract.events import (
    AgentCommand,
    PlanEntry,
    QuestionAnswered,
    StopReason,
    ToolCard,
    TurnEnded,
    UsageCounts,
)
from agy_host.contract.rendering import SHOWN_LONG_CHARS, clip

NO_USAGE = "usage not reported by this agent"
#: Said by both renderers when a turn ran on the sandbox agent, so nobody takes its echo for an answer.
SANDBOX_NOTICE = (
    "no ACP agent is installed: this turn runs on agy-host's bundled sandbox agent, "
    "which only echoes. Install Antigravity's ACP server or pass --agent CMD."
)
#: Arguments whose key names a file (``file_path``, ``TargetFile``, ``AbsolutePath``).
_PATH_KEY = re.compile(r"file|path", re.IGNORECASE)


def fmt_duration(seconds: float | None) -> str:
    """``0.4s``, ``12.3s``, ``2m05s``: short, and precise where it matters."""
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s"


def usage_parts(usage: UsageCounts | None) -> list[str]:
    """The counts an agent reported, each as ``name value``; empty when none."""
    if usage is None:
        return []
    parts = []
    if usage.input_tokens is not None:
        parts.append(f"in {usage.input_tokens}")
    if usage.output_tokens is not None:
        parts.append(f"out {usage.output_tokens}")
    if usage.thinking_tokens:
        parts.append(f"thinking {usage.thinking_tokens}")
    if usage.cache_read_tokens:
        parts.append(f"cache {usage.cache_read_tokens}")
    if usage.input_tokens is None and usage.output_tokens is None and usage.total_tokens is not None:
        parts.append(f"tokens {usage.total_tokens}")
    if usage.context_used is not None and usage.context_size:
        parts.append(f"context {usage.context_used}/{usage.context_size}")
    if usage.cost_amount is not None:
        parts.append(f"cost {usage.cost_amount:.4f} {usage.cost_currency or ''}".rstrip())
    return parts


def usage_text(usage: UsageCounts | None) -> str:
    """``in 1000, out 234`` or the explicit absence: a missing number must
    never read as zero."""
    return ", ".join(usage_parts(usage)) or NO_USAGE


def _add(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


class UsageTally:
    """Cumulative usage across the turns one renderer saw (a ``chat``).

    An agent that reports its own conversation totals wins: it also counts
    turns from before this process. Otherwise the per-turn counts are summed,
    and shown from the second turn that reported usage on (until then the
    total *is* the turn).
    """

    def __init__(self) -> None:
        self.turns = 0
        self.reported_turns = 0
        self.total = UsageCounts()

    def add(self, ended: TurnEnded) -> UsageCounts | None:
        """Count ``ended``; return the cumulative usage to show, if any."""
        self.turns += 1
        usage = ended.usage
        if usage is not None:
            self.reported_turns += 1
            t = self.total
            self.total = msgspec.structs.replace(
                t,
                input_tokens=_add(t.input_tokens, usage.input_tokens),
                output_tokens=_add(t.output_tokens, usage.output_tokens),
                thinking_tokens=_add(t.thinking_tokens, usage.thinking_tokens),
                cache_read_tokens=_add(t.cache_read_tokens, usage.cache_read_tokens),
                cache_write_tokens=_add(t.cache_write_tokens, usage.cache_write_tokens),
                total_tokens=_add(t.total_tokens, usage.total_tokens),
                cost_amount=(t.cost_amount or 0.0) + usage.cost_amount if usage.cost_amount is not None else None,
                cost_currency=usage.cost_currency or t.cost_currency,
            )
        if ended.cumulative_usage is not None:
            return ended.cumulative_usage
        if self.reported_turns > 1:
            return self.total
        return None


def stop_word(stop: StopReason) -> str:
    return {"stop": "done", "tool_use": "parked", "error": "error", "aborted": "aborted"}.get(stop, stop)


def tool_label(card: ToolCard) -> str:
    """The card's title (else its name or id), clipped: the agent chose its length."""
    return clip(card.title or card.name or card.call_id)


def question_how(event: QuestionAnswered) -> str:
    """Who answered a question and why, clipped (the reason may quote the agent)."""
    return clip(event.by + (f": {event.reason}" if event.reason else ""), SHOWN_LONG_CHARS)


def card_face(card: ToolCard) -> tuple[str, str]:
    """What a card's line shows that can change: its status and its label.
    A card sent again with the same face is not drawn again; a new title
    (the agent named the call better) is."""
    return card.status, tool_label(card)


def is_edit(card: ToolCard) -> bool:
    return card.diff is not None or card.kind == "edit"


def edit_path(card: ToolCard) -> str | None:
    """The file an edit card touched: the agent's diff path, else the first
    argument whose key names a file or path (agy's ``TargetFile``...)."""
    if card.diff is not None and card.diff.path:
        return card.diff.path
    for key, value in card.args.items():
        if _PATH_KEY.search(key) and isinstance(value, str) and value.strip():
            return value
    return None


def short_path(path: str, cwd: str) -> str:
    """``path`` relative to ``cwd`` when it is inside it; as given otherwise."""
    if not os.path.isabs(path):
        return path
    try:
        rel = os.path.relpath(path, cwd)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def edit_label(card: ToolCard, cwd: str) -> str:
    """``[edit: src/app.py]``, what an edit shows without a diff."""
    path = edit_path(card)
    return f"[edit: {clip(short_path(path, cwd)) if path else tool_label(card)}]"


def args_preview(args: dict[str, Any], limit: int = 80) -> str:
    """One line of a host tool call's arguments."""
    if not args:
        return ""
    text = msgspec.json.encode(args).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text: str, limit: int) -> str:
    """``text`` squeezed onto one line; the *end* is kept when it is cut,
    since the newest words are the interesting ones while it streams."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else "…" + flat[-(limit - 1) :]


def words(text: str) -> int:
    return len(text.split())


#: The plain checklist's boxes; an unknown status reads as not started.
PLAN_BOXES = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


def plan_progress(entries: list[PlanEntry]) -> str:
    """``2/5 done``; ``cleared`` for an empty plan (the agent dropped it)."""
    if not entries:
        return "cleared"
    done = sum(1 for e in entries if e.status == "completed")
    return f"{done}/{len(entries)} done"


def plan_step(entry: PlanEntry) -> str:
    """A step's text on one line: a checklist line per step, whatever the agent wrote."""
    return clip(" ".join(entry.content.split()), SHOWN_LONG_CHARS)


def plan_lines(entries: list[PlanEntry]) -> list[str]:
    """The plan as a plain checklist, ``[x] step`` per line."""
    return [f"  {PLAN_BOXES.get(e.status, '[ ]')} {plan_step(e)}" for e in entries]


def command_usage(command: AgentCommand) -> str:
    """``/compact <instructions>``: how the command is typed."""
    return clip(f"/{command.name}" + (f" <{command.input_hint}>" if command.input_hint else ""))


def command_line(command: AgentCommand) -> str:
    """``/compact <instructions>  Compact the conversation``."""
    return command_usage(command) + (f"  {clip(command.description)}" if command.description else "")


def command_names(commands: list[AgentCommand]) -> str:
    """``/compact, /init, /review``: a one-line list."""
    return ", ".join(command_usage(c) for c in commands)


__all__ = [
    "NO_USAGE",
    "PLAN_BOXES",
    "UsageTally",
    "args_preview",
    "card_face",
    "command_line",
    "command_names",
    "command_usage",
    "edit_label",
    "edit_path",
    "fmt_duration",
    "is_edit",
    "one_line",
    "plan_lines",
    "plan_progress",
    "plan_step",
    "question_how",
    "short_path",
    "stop_word",
    "tool_label",
    "usage_parts",
    "usage_text",
    "words",
]
