"""The rich renderer's behaviour beyond snapshots: the spinner while the agent
is silent, in-place card updates, ``/thinking``, and which renderer
``--format text`` picks (rich on a real terminal, plain otherwise)."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator

import pytest

from agy_host.builtins.render_rich import SILENCE_S, RichRenderer
from agy_host.builtins.renderers import TextRenderer, text_renderer, wants_rich
from agy_host.contract.events import (
    Notice,
    PermissionAnswered,
    QuestionAnswered,
    TextDelta,
    ThoughtDelta,
    ToolCard,
    TurnEnded,
    TurnStarted,
)
from agy_host.contract.rendering import RenderOptions


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(clock: Clock, *, width: int = 80) -> tuple[RichRenderer, io.StringIO]:
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=width, color_system="standard", legacy_windows=False)
    return RichRenderer(RenderOptions(stream=buf), console=console, spinner=False, clock=clock), buf


def test_spinner_shows_only_while_the_agent_is_silent() -> None:
    clock = Clock()
    r, buf = make(clock)
    r._tick(1)
    assert buf.getvalue() == "", "no turn running: no spinner"
    r.handle(TurnStarted(session="s", engine="acp"))
    r._tick(1)
    assert "waiting" not in buf.getvalue(), "not silent for long enough yet"
    clock.now += SILENCE_S + 0.1
    r._tick(2)
    assert "waiting for the agent" in buf.getvalue()
    assert r.state()["transient"] == "line"
    before = len(buf.getvalue())
    r.handle(TextDelta(delta="hello"))
    tail = buf.getvalue()[before:]
    assert tail.startswith("\r\x1b[2K"), "the spinner line is erased before the text"
    assert tail.endswith("hello")
    clock.now += SILENCE_S + 0.1
    r._tick(3)
    assert r.state()["transient"] == "glyph", "mid-line the spinner is a glyph after the text"
    before = len(buf.getvalue())
    r.handle(TextDelta(delta=" world\n"))
    assert buf.getvalue()[before:].startswith("\x1b[K"), "the glyph is erased before more text"
    r.handle(TurnEnded(stop_reason="stop", duration_s=1.0))
    end = len(buf.getvalue())
    clock.now += 10
    r._tick(4)
    assert len(buf.getvalue()) == end, "no spinner after the turn ended"
    r.close()


async def test_a_prompt_on_the_terminal_stops_the_spinner_and_says_who_waits() -> None:
    """A permission prompt or question is on the terminal (it holds the
    terminal queue): the spinner line is erased and replaced by one still
    line saying who waits for the person, nothing else is drawn over the
    prompt (events wait), and once it is done the spinner comes back
    (issue 28 item 6)."""
    from agy_host.service.terminal_queue import QUEUE

    clock = Clock()
    r, buf = make(clock)
    r.handle(TurnStarted(session="s", engine="acp"))
    clock.now += SILENCE_S + 0.1
    r._tick(1)
    assert "waiting for the agent" in buf.getvalue()
    before = len(buf.getvalue())
    async with QUEUE.turn("session 's'"):
        drawn = buf.getvalue()[before:]
        assert drawn.startswith("\r\x1b[2K"), "the spinner line is erased first"
        assert "‖ paused: session 's' waits for your answer" in drawn
        assert drawn.endswith("\n"), "the prompt starts on a line of its own"
        paused = len(buf.getvalue())
        clock.now += 5
        r._tick(2)
        r.handle(TextDelta(delta="late text"))
        assert len(buf.getvalue()) == paused, "something was drawn over the prompt"
    assert buf.getvalue()[paused:] == "late text", "what came meanwhile is drawn after the prompt"
    clock.now += SILENCE_S + 0.1
    r._tick(3)
    assert buf.getvalue().endswith("\x1b[2D"), "after the prompt, the spinner is back"
    r.close()


def test_thinking_keeps_no_spinner_and_collapses_with_its_text_kept() -> None:
    clock = Clock()
    r, buf = make(clock)
    r.handle(TurnStarted(session="s", engine="acp"))
    r.handle(ThoughtDelta(delta="step one, "))
    clock.now += 2.0
    r.handle(ThoughtDelta(delta="step two"))
    r._tick(5)
    assert "waiting for the agent" not in buf.getvalue()
    r.handle(TextDelta(delta="answer"))
    assert "thought for 2.0s · 4 words" in buf.getvalue()
    assert r.last_thinking == "step one, step two"
    r.close()


def test_a_card_that_is_still_the_last_line_is_updated_in_place() -> None:
    clock = Clock()
    r, buf = make(clock)
    r.handle(TurnStarted(session="s", engine="acp"))
    r.handle(ToolCard(call_id="a", name="grep", status="started", kind="search", title="grep foo"))
    r.handle(ToolCard(call_id="a", name="grep", status="done", kind="search", title="grep foo", duration_s=0.2))
    assert buf.getvalue().count("\x1b[1A") == 1
    r.handle(ToolCard(call_id="b", name="ls", status="started", kind="read", title="ls"))
    r.handle(TextDelta(delta="text in between\n"))
    r.handle(ToolCard(call_id="b", name="ls", status="done", kind="read", title="ls", duration_s=0.1))
    assert buf.getvalue().count("\x1b[1A") == 1, "a card with output after it is printed again, not moved up to"
    r.close()


def test_long_card_lines_are_cut_to_one_row() -> None:
    r, buf = make(Clock(), width=40)
    r.handle(TurnStarted(session="s", engine="acp"))
    r.handle(ToolCard(call_id="a", name="run", status="started", kind="execute", title="x" * 200))
    line = buf.getvalue().split("\n")[0]
    assert "…" in line and "x" * 100 not in line
    r.close()


def test_what_the_agent_chose_the_length_of_is_clipped_on_both_renderers() -> None:
    """Issue 28 item 4, retest: a 400 KB title was drawn whole on the
    permission line and again on the closing line; every agent-chosen string
    (titles, questions, notices, errors) is clipped, with its full length."""
    huge = "a" * 400_000
    said = "… (400,000 characters)"
    events = [
        TurnStarted(session="s", engine="acp"),
        ToolCard(call_id="t", name="run", status="started", kind="edit", title=huge),
        PermissionAnswered(call_id="t", title=huge, options=[], selected=None, policy="rules", reason="refused"),
        QuestionAnswered(kind="form", message=huge, action="cancel", by="host", reason="b" * 10_000),
        Notice(level="warning", message=huge),
        TurnEnded(stop_reason="stop", duration_s=1.0, exit_code=5),
    ]
    r, buf = make(Clock(), width=100_000)
    plain = io.StringIO()
    text = TextRenderer(RenderOptions(stream=plain), err=plain)
    for event in events:
        r.handle(event)
        text.handle(event)
    r.close()
    text.close()
    for shown in (buf.getvalue(), plain.getvalue()):
        assert len(shown) < 30_000 and shown.count(said) >= 4, shown[:2000]
        assert "(10,006 characters)" in shown  # a question's reason: "host: bbb…"
    assert "[exit 5] permission 'aaa" in plain.getvalue() and "'… (400,000 characters) was refused" in plain.getvalue()


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def pty_stream() -> Iterator[io.TextIOWrapper]:
    """A real terminal: the slave end of a pty."""
    master, slave = os.openpty()
    stream = os.fdopen(slave, "w", encoding="utf-8")
    try:
        yield stream
    finally:
        stream.close()
        os.close(master)


def test_text_format_is_rich_on_a_terminal(pty_stream: io.TextIOWrapper, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    renderer = text_renderer(RenderOptions(stream=pty_stream, color=True))
    assert isinstance(renderer, RichRenderer)
    renderer.close()


@pytest.mark.parametrize(
    ("env", "tty", "color"),
    [
        ({"NO_COLOR": "1", "TERM": "xterm"}, True, True),
        ({"TERM": "dumb"}, True, True),
        ({"TERM": "xterm"}, False, True),
        ({"TERM": "xterm"}, True, False),
    ],
)
def test_text_format_is_plain_otherwise(env: dict[str, str], tty: bool, color: bool) -> None:
    stream = FakeTty() if tty else io.StringIO()
    opts = RenderOptions(stream=stream, color=color)
    assert not wants_rich(opts, env)


def test_an_empty_no_color_does_not_opt_out() -> None:
    assert wants_rich(RenderOptions(stream=FakeTty(), color=True), {"NO_COLOR": "", "TERM": "xterm"})


def test_plain_is_used_when_rich_cannot_be_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    from agy_host.builtins.renderers import rich_renderer

    monkeypatch.setitem(sys.modules, "agy_host.builtins.render_rich", None)
    assert isinstance(rich_renderer(RenderOptions(stream=FakeTty(), color=True)), TextRenderer)


def test_rich_is_not_imported_on_the_help_path() -> None:
    import subprocess

    code = "import sys; from agy_host.cli.main import main; main(['--help']); print('rich' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.stdout.strip().endswith("False"), proc.stdout[-300:] + proc.stderr[-300:]
