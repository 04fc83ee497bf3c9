"""Built-in renderers: ``text`` (plain, streamed), ``json`` (JSON lines) and
``quiet`` (the final answer only).

The rich terminal renderer arrives with the user's-side work; the plain one
is what scripts and non-TTY output get.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO

import msgspec

from agy_host import hookimpl
from agy_host.events import (
    EVENT_SCHEMA_VERSION,
    HostEvent,
    Notice,
    PermissionAnswered,
    TextDelta,
    ThoughtDelta,
    ToolCard,
    ToolUseRequested,
    TurnEnded,
    TurnStarted,
    UsageCounts,
)
from agy_host.rendering import Renderer, RendererFactory, RenderOptions


def _usage_line(usage: UsageCounts | None) -> str:
    if usage is None:
        return "usage not reported by this agent"
    parts = []
    if usage.input_tokens is not None:
        parts.append(f"in {usage.input_tokens}")
    if usage.output_tokens is not None:
        parts.append(f"out {usage.output_tokens}")
    if usage.thinking_tokens:
        parts.append(f"thinking {usage.thinking_tokens}")
    if usage.cache_read_tokens:
        parts.append(f"cache {usage.cache_read_tokens}")
    if usage.context_used is not None and usage.context_size:
        parts.append(f"context {usage.context_used}/{usage.context_size}")
    if usage.cost_amount is not None:
        parts.append(f"cost {usage.cost_amount:.4f} {usage.cost_currency or ''}".rstrip())
    return ", ".join(parts) if parts else "usage not reported by this agent"


class TextRenderer:
    """Plain text: the answer on stdout as it streams; everything else
    (tool lines, notices, the closing line) on stderr so a pipe gets only text."""

    def __init__(self, opts: RenderOptions, err: IO[str] | None = None) -> None:
        import sys

        self.out = opts.stream
        self.err = err or sys.stderr
        self.verbose = opts.verbose
        self._at_line_start = True
        self._thinking = False
        self._session = ""
        #: Last status printed per tool call: agents resend the same call, and a
        #: plain-text card is "updated in place" by not printing it again.
        self._cards: dict[str, str] = {}

    def _text(self, s: str) -> None:
        if not s:
            return
        self.out.write(s)
        self.out.flush()
        self._at_line_start = s.endswith("\n")

    def _side(self, line: str) -> None:
        if not self._at_line_start:
            self.out.write("\n")
            self.out.flush()
            self._at_line_start = True
        self.err.write(line + "\n")
        self.err.flush()

    def handle(self, event: HostEvent) -> None:
        match event:
            case TextDelta(delta=d):
                self._text(d)
            case ThoughtDelta(delta=d):
                if self.verbose:
                    self._side(f"[thinking] {d.strip()}")
            case ToolCard():
                if self._cards.get(event.call_id) == event.status:
                    return
                self._cards[event.call_id] = event.status
                label = event.title or event.name
                took = f", {event.duration_s:.1f}s" if event.duration_s is not None else ""
                extra = f": {event.error}" if event.error else ""
                self._side(f"[tool] {label} ({event.status}{took}){extra}")
            case PermissionAnswered():
                what = "question" if event.is_question else "permission"
                answer = event.selected if event.selected is not None else "cancelled"
                self._side(
                    f"[{what}] {event.title} -> {answer} ({event.policy}{': ' + event.reason if event.reason else ''})"
                )
            case Notice():
                self._side(f"[{event.level}] {event.message}")
            case TurnStarted():
                self._session = event.session
                if event.sandbox:
                    self._side(
                        "[info] no ACP agent is installed: this turn runs on agy-host's bundled sandbox agent, "
                        "which only echoes. Install Antigravity's ACP server or pass --agent CMD."
                    )
            case ToolUseRequested():
                self._side(f"[host tool] {event.name} (parked)")
            case TurnEnded():
                if event.error:
                    self._side(f"[error] {event.error}")
                session = f"; session: {self._session}" if self._session else ""
                self._side(
                    f"[done] {event.stop_reason} in {event.duration_s:.1f}s; {_usage_line(event.usage)}{session}"
                )
            case _:
                pass

    def close(self) -> None:
        if not self._at_line_start:
            self.out.write("\n")
            self.out.flush()


class JsonRenderer:
    """One JSON object per line, each with the schema ``version``."""

    def __init__(self, opts: RenderOptions) -> None:
        self.out = opts.stream
        self._enc = msgspec.json.Encoder()
        self._prefix = b'{"version":%d,' % EVENT_SCHEMA_VERSION

    def handle(self, event: HostEvent) -> None:
        body = self._enc.encode(event)
        self.out.write((self._prefix + body[1:]).decode())
        self.out.write("\n")
        self.out.flush()

    def close(self) -> None:
        return None


class QuietRenderer:
    """The final answer text only (errors still go to stderr)."""

    def __init__(self, opts: RenderOptions) -> None:
        import sys

        self.out = opts.stream
        self.err = sys.stderr

    def handle(self, event: HostEvent) -> None:
        if isinstance(event, TurnEnded):
            if event.response:
                self.out.write(event.response if event.response.endswith("\n") else event.response + "\n")
                self.out.flush()
            if event.error:
                self.err.write(f"error: {event.error}\n")

    def close(self) -> None:
        return None


@hookimpl
def agy_host_register_renderers(register: Callable[[str, RendererFactory], None]) -> None:
    register("text", TextRenderer)
    register("json", JsonRenderer)
    register("quiet", QuietRenderer)


__all__ = ["JsonRenderer", "QuietRenderer", "Renderer", "TextRenderer"]
