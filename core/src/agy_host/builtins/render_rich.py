"""The rich terminal renderer: what a person at a colour terminal sees.

* the answer streams as it arrives, written straight to the terminal (rich's
  live displays buffer until a newline, which would stall streaming);
* thinking is dimmed, previewed on one self-updating line while it streams
  and collapsed to one line ("thought for 2.1s · 45 words") when it ends;
  ``--verbose`` keeps it whole, and :attr:`RichRenderer.last_thinking` lets
  ``chat``'s ``/thinking`` show it afterwards;
* tool cards show status, kind and duration, and a card that is still the
  last line is updated in place instead of printed again;
* the agent's plan is a checklist (☐ pending, ◐ in progress, ☑ done),
  redrawn in place while nothing was printed after it, else drawn anew;
* finished edits show a coloured unified diff (from ``agy_host_render_diff``,
  the diff plugin) or the ``[edit: PATH]`` label without it;
* a spinner runs while the agent is silent (between events, from a ticker
  thread; all drawing happens under one lock);
* while a permission prompt or question holds the terminal, nothing is drawn:
  the spinner gives way to one line saying who waits for the person's
  answer, and events that arrive meanwhile are drawn once the prompt is done
  (a status redrawn under a prompt erased what the person typed);
* each turn closes with stop reason, duration and usage, per turn and
  cumulative, saying so when the agent reports none.

Everything is drawn into one stream (the terminal); rich is imported only
when this renderer is built, never on the ``--help`` path.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agy_host.builtins.render_common import (
    SANDBOX_NOTICE,
    UsageTally,
    args_preview,
    card_face,
    command_names,
    edit_label,
    fmt_duration,
    is_edit,
    one_line,
    plan_progress,
    plan_step,
    question_how,
    stop_word,
    tool_label,
    usage_text,
    words,
)
from agy_host.builtins.render_exit import Refusals, decided_by, is_refused
from agy_host.builtins.render_spinner import FRAMES, Ticker
from agy_host.contract.events import (
    CommandsUpdated,
    HostEvent,
    Notice,
    PermissionAnswered,
    PlanEntry,
    PlanUpdated,
    QuestionAnswered,
    TextDelta,
    ThoughtDelta,
    ToolCard,
    ToolUseRequested,
    TurnEnded,
    TurnStarted,
)
from agy_host.contract.rendering import SHOWN_LONG_CHARS, RenderOptions, clip
from agy_host.service.terminal_queue import QUEUE

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

#: Seconds without output before the spinner shows.
SILENCE_S = 0.3
#: Thinking previews are redrawn at most this often (agents stream tokens).
PREVIEW_EVERY_S = 0.05
CLEAR_LINE = "\r\x1b[2K"
CARD_UP = "\x1b[1A" + CLEAR_LINE

_ICONS = {"started": ("○", "cyan"), "done": ("✓", "green"), "failed": ("✗", "red"), "denied": ("⊘", "yellow")}
_KIND_STYLES = {
    "read": "blue",
    "edit": "magenta",
    "delete": "red",
    "move": "magenta",
    "search": "cyan",
    "execute": "yellow",
    "fetch": "cyan",
    "think": "dim",
}
_STOP_STYLES = {"stop": "green", "aborted": "yellow", "error": "red", "tool_use": "cyan"}
_NOTICE = {"info": ("ℹ", "dim"), "warning": ("!", "yellow"), "error": ("✗", "red")}
#: A plan step's box and its colour, and the style of its text, by status.
_PLAN = {"pending": ("☐", "dim", ""), "in_progress": ("◐", "yellow", "bold"), "completed": ("☑", "green", "dim")}


def diff_style(line: str) -> str:
    """The colour of one line of the diff plugin's output."""
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("@@"):
        return "cyan"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    return "dim"


class RichRenderer:
    """Colour, cards, diffs and a spinner for a terminal."""

    #: Draws the answer from ``text`` events, never from ``TurnEnded.response``.
    AGY_HOST_RESPONSE_OPTIONAL = True

    def __init__(
        self,
        opts: RenderOptions,
        *,
        console: Console | None = None,
        spinner: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        from rich.console import Console

        self.console = console or Console(file=opts.stream, highlight=False, emoji=False)
        self.diffs = opts.diffs
        if self.diffs is not None:
            self.diffs.want()
        self.out = self.console.file
        self.verbose = opts.verbose
        self._clock = clock
        self._lock = threading.RLock()
        self._ticker = Ticker(self._tick) if spinner else None
        self._col0 = True
        #: What is drawn on the current line that the next output erases.
        self._transient: str | None = None  # "line" (own line) or "glyph" (after text)
        self._busy = False
        self._turn_started = 0.0
        self._last_output = 0.0
        self._last_preview = 0.0
        #: The card whose line is the last one printed (can be redrawn in place).
        self._last_card: str | None = None
        #: Status and label drawn per tool call (:func:`card_face`).
        self._cards: dict[str, tuple[str, str]] = {}
        self._thought: list[str] = []
        self._thought_started = 0.0
        #: The whole text of the last finished thinking block.
        self.last_thinking = ""
        self._tally = UsageTally()
        self._refusals = Refusals()
        self._session = ""
        #: The plan as last drawn, and how many lines it takes when it is the
        #: last thing on screen (0 otherwise: it is drawn anew, not redrawn).
        self._plan: list[PlanEntry] | None = None
        self._plan_tail = 0
        #: Who holds the terminal for a prompt now (``None``: nobody), and the
        #: events that came meanwhile, drawn once the prompt is done.
        self._prompt_by: str | None = None
        self._held: list[HostEvent] = []
        self._unwatch = QUEUE.watch(self._prompting)

    # -- low-level drawing (callers hold the lock) ------------------------------------

    def _raw(self, s: str) -> None:
        self.out.write(s)
        self.out.flush()

    def _clear_transient(self) -> None:
        if self._transient == "line":
            self._raw(CLEAR_LINE)
        elif self._transient == "glyph":
            self._raw("\x1b[K")
        self._transient = None

    def _text(self, s: str) -> None:
        self._clear_transient()
        self._raw(s)
        self._col0 = s.endswith("\n")
        self._last_card = None
        self._plan_tail = 0
        self._last_output = self._clock()

    def _line(self, text: Text, *, wrap: bool = False) -> None:
        """One full line, on a line of its own."""
        self._clear_transient()
        if not self._col0:
            self._raw("\n")
        if wrap:
            self.console.print(text, soft_wrap=False)
        else:
            self.console.print(text, no_wrap=True, overflow="ellipsis", crop=True)
        self._col0 = True
        self._last_card = None
        self._plan_tail = 0
        self._last_output = self._clock()

    def _styled(self, *parts: tuple[str, str]) -> Text:
        from rich.text import Text

        text = Text()
        for content, style in parts:
            text.append(content, style=style or None)
        return text

    def _tick(self, n: int) -> None:
        with self._lock:
            if not self._busy or self._thought or self._clock() - self._last_output < SILENCE_S:
                return
            if self._prompt_by is not None or QUEUE.held:  # a prompt is on the terminal: never draw over it
                return
            frame = FRAMES[n % len(FRAMES)]
            if self._col0:
                elapsed = fmt_duration(self._clock() - self._turn_started)
                self._clear_transient()
                self._raw(f"{CLEAR_LINE}\x1b[2m{frame} waiting for the agent · {elapsed}\x1b[0m")
                self._transient = "line"
            else:
                self._clear_transient()
                self._raw(f" \x1b[2m{frame}\x1b[0m\x1b[2D")
                self._transient = "glyph"

    def _prompting(self, asker: str | None) -> None:
        """A prompt takes the terminal (``asker`` asks) or is done (``None``).

        Called by the terminal queue before the prompt draws, so after this
        returns nothing of ours lands on the prompt's lines: the spinner (or
        thinking preview) is erased and one still line says who waits for
        whom. Once the prompt is done the cursor is on a fresh line below it
        (nothing drawn before it can be redrawn in place) and what arrived
        meanwhile is drawn."""
        with self._lock:
            if asker is not None:
                self._prompt_by = asker
                if self._busy:
                    self._line(self._styled((f"‖ paused: {asker} waits for your answer", "yellow")))
                return
            self._prompt_by = None
            self._transient = None
            self._col0 = True
            self._last_card = None
            self._plan_tail = 0
            self._last_preview = 0.0
            self._last_output = self._clock()
            held, self._held = self._held, []
            for event in held:
                self._handle(event)

    # -- thinking --------------------------------------------------------------------------

    def _think(self, delta: str) -> None:
        now = self._clock()
        if not self._thought:
            self._thought_started = now
            self._last_preview = 0.0
        self._thought.append(delta)
        if now - self._last_preview < PREVIEW_EVERY_S:
            return
        self._last_preview = now
        if not self._col0:
            self._clear_transient()
            self._raw("\n")
            self._col0 = True
        width = max(20, self.console.width - 16)
        preview = one_line("".join(self._thought), width)
        self._raw(f"{CLEAR_LINE}\x1b[2m✻ thinking · {preview}\x1b[0m")
        self._transient = "line"
        self._last_card = None
        self._plan_tail = 0

    def _end_thinking(self) -> None:
        if not self._thought:
            return
        text = "".join(self._thought).strip()
        took = self._clock() - self._thought_started
        self._thought = []
        self._clear_transient()
        if not text:
            return
        self.last_thinking = text
        hint = "" if self.verbose else " (/thinking or --verbose shows it)"
        self._line(self._styled((f"✻ thought for {fmt_duration(took)} · {words(text)} words{hint}", "dim")))
        if self.verbose:
            for line in text.split("\n"):
                self._line(self._styled(("│ " + line, "dim italic")), wrap=True)

    # -- cards ---------------------------------------------------------------------------------

    def _card(self, card: ToolCard) -> None:
        face = card_face(card)
        if self._cards.get(card.call_id) == face:
            return
        first = card.call_id not in self._cards
        self._cards[card.call_id] = face
        icon, colour = _ICONS.get(card.status, ("•", ""))
        parts: list[tuple[str, str]] = [
            ("  ", ""),
            (icon, colour),
            (" ", ""),
            (f"{card.kind:<8}", _KIND_STYLES.get(card.kind, "dim")),
            (tool_label(card), "bold" if card.status == "started" else ""),
        ]
        if card.duration_s is not None:
            parts.append((f"  {fmt_duration(card.duration_s)}", "dim"))
        if card.status in ("failed", "denied"):
            parts.append((f"  {card.status}", colour))
        if card.error:
            parts.append((f": {one_line(card.error, 200)}", colour))
        redraw = not first and self._last_card == card.call_id and self._col0
        if redraw:
            self._clear_transient()
            self._raw(CARD_UP)
        self._line(self._styled(*parts))
        self._last_card = card.call_id
        if card.status == "done" and is_edit(card):
            self._diff(card)

    # -- the plan ----------------------------------------------------------------------------

    def _show_plan(self, entries: list[PlanEntry]) -> None:
        """The checklist, one line per step (cropped, never wrapped, so the
        lines to go back over are known), redrawn in place while it is the
        last thing on screen."""
        if entries == self._plan:
            return
        self._plan = entries
        tail = self._plan_tail if self._col0 else 0
        if tail:
            self._clear_transient()
            self._raw(CARD_UP * tail)
        self._line(self._styled(("  ▤ ", "cyan"), ("plan", "bold"), (f" · {plan_progress(entries)}", "dim")))
        for entry in entries:
            box, colour, style = _PLAN.get(entry.status, _PLAN["pending"])
            self._line(self._styled(("    ", ""), (box, colour), (" ", ""), (plan_step(entry), style)))
        self._plan_tail = 1 + len(entries)

    def _diff(self, card: ToolCard) -> None:
        diff = self.diffs.render(card) if self.diffs is not None else None
        if diff is None:
            self._line(
                self._styled(
                    ("    " + edit_label(card, self.diffs.cwd if self.diffs is not None else os.getcwd()), "dim")
                )
            )
        else:
            for line in diff.rstrip("\n").split("\n") if diff else []:
                self._line(self._styled(("    ", ""), (line, diff_style(line))))
        self._last_card = None

    # -- events ------------------------------------------------------------------------------------

    def handle(self, event: HostEvent) -> None:
        with self._lock:
            if self._prompt_by is not None:
                self._held.append(event)
                return
            self._handle(event)

    def _handle(self, event: HostEvent) -> None:
        if not isinstance(event, ThoughtDelta):
            self._end_thinking()
        match event:
            case TextDelta(delta=d):
                if d:
                    self._text(d)
            case ThoughtDelta(delta=d):
                self._think(d)
            case ToolCard():
                self._card(event)
            case PermissionAnswered():
                self._permission(event)
            case QuestionAnswered():
                ok = event.action == "accept"
                style = "green" if ok else ("red" if event.unanswered else "yellow")
                self._line(
                    self._styled(
                        ("  ? ", "yellow"),
                        ("question: ", "yellow"),
                        (f"{clip(event.origin)}: " if event.origin else "", "dim"),
                        (clip(event.message), ""),
                        (" → ", "dim"),
                        (("unanswered, " if event.unanswered else "") + event.action, style),
                        (f" · {question_how(event)}", "dim"),
                    ),
                    wrap=True,
                )
            case Notice():
                icon, style = _NOTICE.get(event.level, ("•", ""))
                self._line(self._styled((f"{icon} {clip(event.message, SHOWN_LONG_CHARS)}", style)), wrap=True)
            case PlanUpdated():
                self._show_plan(event.entries)
            case CommandsUpdated():
                if self.verbose:
                    names = command_names(event.commands) or "none"
                    self._line(self._styled((f"  ⌘ agent commands: {names}", "dim")), wrap=True)
            case TurnStarted():
                self._started(event)
            case ToolUseRequested():
                preview = args_preview(event.args)
                self._line(
                    self._styled(
                        ("  ⇄ ", "cyan"), ("host    ", "cyan"), (clip(event.name), "bold"), (f" {preview}", "dim")
                    )
                )
            case TurnEnded():
                self._ended(event)
            case _:
                pass

    def _permission(self, event: PermissionAnswered) -> None:
        what = "question" if event.is_question else "permission"
        answer = event.selected if event.selected is not None else "cancelled"
        for option in event.options:
            if option.option_id == event.selected and option.name:
                answer = option.name
        refused = is_refused(event)
        self._refusals.note(event)
        reason = f" · {decided_by(event.policy, event.reason)}"
        self._line(
            self._styled(
                ("  ? ", "yellow"),
                (f"{what}: ", "yellow"),
                (clip(event.title), ""),
                (" → ", "dim"),
                (clip(answer), "red" if refused else "green"),
                (reason, "dim"),
            ),
            wrap=True,
        )

    def _started(self, event: TurnStarted) -> None:
        self._session = event.session
        self._cards = {}
        self._refusals.start()
        self._busy = True
        self._turn_started = self._last_output = self._clock()
        if event.sandbox:
            self._line(self._styled((f"! {SANDBOX_NOTICE}", "yellow")), wrap=True)
        if self._ticker is not None:
            self._ticker.start()

    def _ended(self, event: TurnEnded) -> None:
        self._busy = False
        self._clear_transient()
        why = self._refusals.why_exit(event)
        if why:
            self._line(self._styled((f"✗ exit {event.exit_code}: {why}", "red")), wrap=True)
        elif event.error:
            self._line(self._styled((f"✗ {clip(event.error, SHOWN_LONG_CHARS)}", "red")), wrap=True)
        cumulative = self._tally.add(event)
        word, style = stop_word(event.stop_reason), _STOP_STYLES.get(event.stop_reason, "")
        if why:
            word, style = f"exit {event.exit_code}", "yellow"
        parts: list[tuple[str, str]] = [
            ("── ", "dim"),
            (word, style),
            (f" · {fmt_duration(event.duration_s)} · {usage_text(event.usage)}", "dim"),
        ]
        if cumulative is not None:
            parts.append((f" · cumulative: {usage_text(cumulative)}", "dim"))
        if self._session:
            parts.append((f" · session {self._session}", "dim"))
        self._line(self._styled(*parts), wrap=True)

    def close(self) -> None:
        self._unwatch()
        if self._ticker is not None:
            self._ticker.stop()
        with self._lock:
            if self._prompt_by is not None:  # a prompt outlived the command's events: draw them now
                self._prompting(None)
            self._end_thinking()
            self._clear_transient()
            if not self._col0:
                self._raw("\n")
                self._col0 = True

    def state(self) -> dict[str, Any]:
        """What the renderer shows right now (for tests and ``/doctor``)."""
        with self._lock:
            cards = {call_id: face[0] for call_id, face in self._cards.items()}
            return {"busy": self._busy, "cards": cards, "transient": self._transient}


__all__ = ["CARD_UP", "CLEAR_LINE", "SILENCE_S", "RichRenderer", "diff_style"]
