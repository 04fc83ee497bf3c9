"""Built-in renderers: ``text`` (rich on a terminal, plain otherwise),
``plain`` and ``rich`` (forced), ``json`` (JSON lines) and ``quiet`` (the
final answer only).

``text`` picks the rich terminal renderer only when the stream is a TTY,
``NO_COLOR`` is unset and ``TERM`` is not ``dumb``; pipes, files and CI logs
get the plain renderer, whose lines are stable enough to grep. Both say the
same things (:mod:`agy_host.builtins.render_common`); the JSON event stream
is documented in ``docs/json-events.md``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import IO

import msgspec

from agy_host import hookimpl
from agy_host.builtins.json_slices import SLICE_CHARS, write_sliced
from agy_host.builtins.json_times import ms
from agy_host.builtins.render_common import (
    SANDBOX_NOTICE,
    UsageTally,
    args_preview,
    card_face,
    command_names,
    edit_label,
    fmt_duration,
    is_edit,
    plan_lines,
    plan_progress,
    question_how,
    tool_label,
    usage_text,
    words,
)
from agy_host.builtins.render_exit import Refusals, decided_by
from agy_host.contract.answer import answer_slices
from agy_host.contract.events import (
    EVENT_SCHEMA_VERSION,
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
from agy_host.contract.rendering import SHOWN_LONG_CHARS, Renderer, RendererFactory, RenderOptions, clip


def permission_line(event: PermissionAnswered) -> str:
    what = "question" if event.is_question else "permission"
    answer = event.selected if event.selected is not None else "cancelled"
    for option in event.options:
        if option.option_id == event.selected and option.name and option.name != event.selected:
            answer = f"{event.selected} ({option.name})"
    return f"[{what}] {clip(event.title)} -> {clip(answer)} ({decided_by(event.policy, event.reason)})"


def question_line(event: QuestionAnswered) -> str:
    """``[question] MESSAGE -> accept (answers rule 1)``; unanswered ones say why."""
    who = f"{clip(event.origin)}: " if event.origin else ""
    fields = f" [{clip(', '.join(event.fields))}]" if event.fields else ""
    marker = "UNANSWERED, " if event.unanswered else ""
    return f"[question] {who}{clip(event.message)} -> {marker}{event.action}{fields} ({question_how(event)})"


def same_terminal(a: IO[str], b: IO[str]) -> bool:
    """Both streams write to one terminal device (a person reads them interleaved)."""
    import os

    if a is b:
        return True
    try:
        if not (a.isatty() and b.isatty()):
            return False
        return os.fstat(a.fileno()).st_rdev == os.fstat(b.fileno()).st_rdev
    except (AttributeError, OSError, ValueError):
        return False


class TextRenderer:
    """Plain text: the answer on stdout as it streams; everything else
    (tool lines, diffs, notices, the closing line) on stderr, so a pipe gets
    only the answer and a log gets lines it can grep."""

    #: Draws the answer from ``text`` events, never from ``TurnEnded.response``.
    AGY_HOST_RESPONSE_OPTIONAL = True

    def __init__(self, opts: RenderOptions, err: IO[str] | None = None) -> None:
        import sys

        self.out = opts.stream
        self.err = err or sys.stderr
        self.verbose = opts.verbose
        self._at_line_start = True
        self._shared: bool | None = None
        self.diffs = opts.diffs
        if self.diffs is not None:
            self.diffs.want()
        self._session = ""
        #: Last status and label printed per tool call: agents resend the same
        #: call, and a plain-text card is "updated in place" by not printing it
        #: again unless it changed.
        self._cards: dict[str, tuple[str, str]] = {}
        self._thought: list[str] = []
        self._tally = UsageTally()
        #: The plan as last printed: it is printed again only when it changed.
        self._plan: list[PlanEntry] | None = None
        self._refusals = Refusals()

    def _text(self, s: str) -> None:
        if not s:
            return
        self.out.write(s)
        self.out.flush()
        self._at_line_start = s.endswith("\n")

    def _side(self, line: str) -> None:
        if not self._at_line_start and self._one_screen():
            self._end_answer()
        self.err.write(line + "\n")
        self.err.flush()

    def _end_answer(self) -> None:
        """A turn's answer ends its line on stdout (each answer of a chat on
        lines of its own), wherever stdout goes."""
        if not self._at_line_start:
            self.out.write("\n")
            self.out.flush()
            self._at_line_start = True

    def _one_screen(self) -> bool:
        """stdout and stderr are the same terminal: a side line must start on
        its own line there. Anywhere else (a pipe, a file) stdout carries the
        answer exactly as the agent wrote it, with no line break added."""
        if self._shared is None:
            self._shared = same_terminal(self.out, self.err)
        return self._shared

    def _end_thought(self) -> None:
        """A thinking block ends at the next event of another kind: it is shown
        whole (``--verbose``) or as one line, never as a line per token."""
        if not self._thought:
            return
        text = "".join(self._thought).strip()
        self._thought = []
        if not text:
            return
        if self.verbose:
            self._side("[thinking] " + text.replace("\n", "\n  "))
        else:
            self._side(f"[thinking] {words(text)} words (--verbose shows them)")

    def _card(self, card: ToolCard) -> None:
        face = card_face(card)
        if self._cards.get(card.call_id) == face:
            return
        self._cards[card.call_id] = face
        details: list[str] = [card.status]
        if card.duration_s is not None:
            details.append(fmt_duration(card.duration_s))
        if card.status != "started" and card.kind != "other":
            details.append(card.kind)
        extra = f": {clip(card.error, SHOWN_LONG_CHARS)}" if card.error else ""
        self._side(f"[tool] {tool_label(card)} ({', '.join(details)}){extra}")
        if card.status == "done" and is_edit(card):
            diff = self.diffs.render(card) if self.diffs is not None else None
            if diff is None:
                self._side("  " + edit_label(card, self.diffs.cwd if self.diffs is not None else os.getcwd()))
            elif diff:
                self._side("\n".join("  " + line for line in diff.rstrip("\n").split("\n")))

    def _show_plan(self, entries: list[PlanEntry]) -> None:
        """The whole checklist, once per change (a log cannot redraw it)."""
        if entries == self._plan:
            return
        self._plan = entries
        self._side("\n".join([f"[plan] {plan_progress(entries)}", *plan_lines(entries)]))

    def handle(self, event: HostEvent) -> None:
        if not isinstance(event, ThoughtDelta):
            self._end_thought()
        match event:
            case TextDelta(delta=d):
                self._text(d)
            case ThoughtDelta(delta=d):
                self._thought.append(d)
            case ToolCard():
                self._card(event)
            case PermissionAnswered():
                self._refusals.note(event)
                self._side(permission_line(event))
            case QuestionAnswered():
                self._side(question_line(event))
            case Notice():
                self._side(f"[{event.level}] {clip(event.message, SHOWN_LONG_CHARS)}")
            case PlanUpdated():
                self._show_plan(event.entries)
            case CommandsUpdated():
                if self.verbose:
                    self._side(f"[commands] {command_names(event.commands) or 'none'}")
            case TurnStarted():
                self._session = event.session
                self._cards = {}
                self._refusals.start()
                if event.sandbox:
                    self._side(f"[info] {SANDBOX_NOTICE}")
            case ToolUseRequested():
                preview = args_preview(event.args)
                self._side(f"[host tool] {clip(event.name)} (parked){' ' + preview if preview else ''}")
            case TurnEnded():
                self._end_answer()
                why = self._refusals.why_exit(event)
                if why:
                    self._side(f"[exit {event.exit_code}] {why}")
                elif event.error:
                    self._side(f"[error] {clip(event.error, SHOWN_LONG_CHARS)}")
                cumulative = self._tally.add(event)
                total = f"; cumulative: {usage_text(cumulative)}" if cumulative is not None else ""
                session = f"; session: {self._session}" if self._session else ""
                self._side(
                    f"[done] {event.stop_reason} in {fmt_duration(event.duration_s)}; "
                    f"{usage_text(event.usage)}{total}{session}"
                )
            case _:
                pass

    def close(self) -> None:
        self._end_thought()
        self._end_answer()


class JsonRenderer:
    """One JSON object per line, each with the schema ``version``.

    On a UTF-8 text stream over a byte buffer (stdout) the encoded line goes
    to the buffer as it is: a flood's ``turn_end`` carries the whole answer
    (12 MB for 200,000 chunks), and decoding it to text to have it encoded
    back cost 30-40 ms; an answer that long is encoded a slice at a time
    (:mod:`agy_host.builtins.json_slices`). Any other stream gets the same
    line as text."""

    def __init__(self, opts: RenderOptions) -> None:
        self.out = opts.stream
        self._enc = msgspec.json.Encoder()
        self._prefix = b'{"version":%d,' % EVENT_SCHEMA_VERSION
        encoding = str(getattr(self.out, "encoding", "") or "").lower().replace("-", "").replace("_", "")
        self._raw: IO[bytes] | None = getattr(self.out, "buffer", None) if encoding == "utf8" else None

    def handle(self, event: HostEvent) -> None:
        if isinstance(event, (TurnEnded, ToolCard)) and event.duration_s is not None:
            event = msgspec.structs.replace(event, duration_s=ms(event.duration_s))  # docs/json-events.md
        if isinstance(event, TurnEnded) and (event.response_elided or len(event.response) > SLICE_CHARS):
            self._long_turn_end(event)
            return
        body = self._enc.encode(event)
        raw = self._raw
        if raw is None:
            self.out.write((self._prefix + body[1:]).decode())
            self.out.write("\n")
            self.out.flush()
            return
        self.out.flush()  # whatever was written as text goes first
        raw.write(self._prefix)
        raw.write(memoryview(body)[1:])
        raw.write(b"\n")
        raw.flush()

    def _long_turn_end(self, event: TurnEnded) -> None:
        """``turn_end`` with the whole answer encoded a slice at a time (from
        the spool when the turn elided it): the same line a whole encoding
        gives; ``response_elided`` is never shown."""
        raw, out = self._raw, self.out
        out.flush()
        first = True

        def write(piece: bytes | bytearray | memoryview) -> None:
            nonlocal first
            piece = piece[1:] if first else piece  # the document's "{" is in the prefix
            first = False
            if raw is not None:
                raw.write(piece)
            else:
                out.write(bytes(piece).decode())

        if raw is not None:
            raw.write(self._prefix)
        else:
            out.write(self._prefix.decode())
        write_sliced(self._enc, event, "response", write, answer_slices(event), response_elided=False)
        if raw is not None:
            raw.write(b"\n")
            raw.flush()
        else:
            out.write("\n")
            out.flush()

    def close(self) -> None:
        return None

    #: Reads an elided answer through ``answer_slices`` (``contract/answer.py``).
    AGY_HOST_RESPONSE_OPTIONAL = True


class QuietRenderer:
    """The final answer text only (errors still go to stderr)."""

    def __init__(self, opts: RenderOptions) -> None:
        import sys

        self.out = opts.stream
        self.err = sys.stderr

    #: Reads an elided answer through ``answer_slices`` (``contract/answer.py``).
    AGY_HOST_RESPONSE_OPTIONAL = True

    def handle(self, event: HostEvent) -> None:
        if isinstance(event, TurnEnded):
            last = ""
            for piece in answer_slices(event):
                self.out.write(piece)
                last = piece
            if last:
                if not last.endswith("\n"):
                    self.out.write("\n")
                self.out.flush()
            if event.error:
                self.err.write(f"error: {event.error}\n")

    def close(self) -> None:
        return None


def wants_rich(opts: RenderOptions, env: Mapping[str, str] | None = None) -> bool:
    """Rich output only for a person at a terminal that takes colour
    (https://no-color.org: ``NO_COLOR`` set to anything non-empty opts out)."""
    env = os.environ if env is None else env
    if not opts.color or env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    isatty = getattr(opts.stream, "isatty", None)
    return bool(isatty and isatty())


def rich_renderer(opts: RenderOptions) -> Renderer:
    """The rich terminal renderer; plain when ``rich`` cannot be imported (a
    broken install must still show the answer)."""
    try:
        from agy_host.builtins.render_rich import RichRenderer
    except ImportError:
        return TextRenderer(opts)
    return RichRenderer(opts)


def text_renderer(opts: RenderOptions) -> Renderer:
    """``--format text``: rich on a colour terminal, plain everywhere else."""
    return rich_renderer(opts) if wants_rich(opts) else TextRenderer(opts)


@hookimpl
def agy_host_register_renderers(register: Callable[[str, RendererFactory], None]) -> None:
    register("text", text_renderer)
    register("plain", TextRenderer)
    register("rich", rich_renderer)
    register("json", JsonRenderer)
    register("quiet", QuietRenderer)


__all__ = [
    "SANDBOX_NOTICE",
    "JsonRenderer",
    "QuietRenderer",
    "Renderer",
    "TextRenderer",
    "permission_line",
    "question_line",
    "rich_renderer",
    "text_renderer",
    "wants_rich",
]
