"""Snapshot tests of the plain and the rich renderer, for every HostEvent kind.

Each script of events is rendered by both renderers; the output is compared
with ``test_render_snapshots/<renderer>-<script>.txt``. The rich output is
stored with its escape codes made visible (``␛`` for ESC, ``␍`` for CR) so
a change of colour or cursor movement shows up in review. Regenerate after
an intended change with ``AGY_HOST_UPDATE_SNAPSHOTS=1`` and read the diff.
"""

from __future__ import annotations

import io
import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agy_host import hookimpl
from agy_host.builtins.render_rich import RichRenderer
from agy_host.builtins.renderers import TextRenderer
from agy_host.contract.events import (
    AgentCommand,
    CommandsUpdated,
    FileDiff,
    HostEvent,
    Notice,
    PermissionAnswered,
    PermissionOption,
    PlanEntry,
    PlanUpdated,
    QuestionAnswered,
    TextDelta,
    ThoughtDelta,
    ToolCard,
    ToolUseRequested,
    TurnEnded,
    TurnStarted,
    UsageCounts,
    UsageReport,
)
from agy_host.contract.rendering import DiffSource, RenderOptions
from agy_host.plugins import Plugins

SNAPSHOTS = Path(__file__).parent / "test_render_snapshots"
UPDATE = os.environ.get("AGY_HOST_UPDATE_SNAPSHOTS", "") not in {"", "0"}

ALLOW = PermissionOption(option_id="yes", name="Allow", kind="allow_once")
REJECT = PermissionOption(option_id="no", name="Reject", kind="reject_once")
RED = PermissionOption(option_id="1", name="Red", kind="allow_once")
USAGE = UsageCounts(input_tokens=1000, output_tokens=234, cache_read_tokens=500, context_used=1234, context_size=200000)
DIFF = (
    "--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n 1 1 │ def main():\n-2   │     print('hi')\n+  2 │     print('hello')"
)


def _edit(call_id: str, path: str, status: str = "done") -> ToolCard:
    return ToolCard(
        call_id=call_id,
        name="replace_file_content",
        status=status,  # type: ignore[arg-type]
        kind="edit",
        title=f"Edit {path}",
        args={"TargetFile": path},
        duration_s=0.4 if status == "done" else None,
    )


def _plan(*statuses: str) -> PlanUpdated:
    steps = ["Read the failing test", "Fix the parser\n(the date format)", "Run the test suite"]
    return PlanUpdated(
        entries=[
            PlanEntry(content=c, status=st, priority="high")  # type: ignore[arg-type]
            for c, st in zip(steps, statuses, strict=False)
        ]
    )


COMMANDS = CommandsUpdated(
    commands=[
        AgentCommand(name="compact", description="Summarise the conversation", input_hint="instructions"),
        AgentCommand(name="review"),
    ]
)

SCRIPTS: dict[str, list[HostEvent]] = {
    "turn": [
        TurnStarted(session="s1", engine="acp", agent="agy", model="gemini-3-flash"),
        ThoughtDelta(delta="Let me look at "),
        ThoughtDelta(delta="the failing test first."),
        TextDelta(delta="I will read the test"),
        TextDelta(delta=" and fix it.\n"),
        ToolCard(call_id="t1", name="view_file", status="started", kind="read", title="Read tests/test_app.py"),
        ToolCard(call_id="t1", name="view_file", status="started", kind="read", title="Read tests/test_app.py"),
        ToolCard(
            call_id="t1", name="view_file", status="done", kind="read", title="Read tests/test_app.py", duration_s=0.3
        ),
        ToolCard(call_id="t2", name="run_command", status="started", kind="execute", title="pytest -q"),
        TextDelta(delta="Running the tests."),
        ToolCard(
            call_id="t2",
            name="run_command",
            status="failed",
            kind="execute",
            title="pytest -q",
            error="exit status 1",
            duration_s=2.5,
        ),
        ToolCard(call_id="t3", name="run_command", status="denied", kind="execute", title="rm -rf build"),
        PermissionAnswered(call_id="p1", title="Run pytest?", options=[ALLOW, REJECT], selected="yes", policy="auto"),
        PermissionAnswered(
            call_id="p2",
            title="Delete build/?",
            options=[ALLOW, REJECT],
            selected="no",
            policy="rules",
            reason="rule 2 denies delete",
        ),
        PermissionAnswered(
            call_id="interaction_1",
            title="Red or blue?",
            options=[RED],
            selected="1",
            policy="ask",
            is_question=True,
        ),
        PermissionAnswered(
            call_id="p3", title="Fetch URL?", options=[ALLOW], selected=None, policy="ask", reason="no answer within 5m"
        ),
        QuestionAnswered(kind="form", message="Which branch?", action="accept", by="answers rule 1", fields=["branch"]),
        QuestionAnswered(
            kind="url",
            message="Sign in to deploy",
            action="cancel",
            by="host",
            origin="deployer",
            reason="no answer rule matched",
            unanswered=True,
        ),
        Notice(level="info", message="signed in"),
        Notice(level="warning", message="session/load failed; started a new conversation"),
        Notice(level="error", message="could not save session"),
        UsageReport(turn=USAGE),
        ToolUseRequested(call_id="b1", name="read", args={"path": "README.md"}),
        TextDelta(delta="Done: the test passes now."),
        TurnEnded(stop_reason="stop", duration_s=12.34, conversation_id="c-1", response="...", usage=USAGE),
    ],
    "edits": [
        TurnStarted(session="s2", engine="stream-json"),
        _edit("e1", "/work/app.py", "started"),
        _edit("e1", "/work/app.py"),
        _edit("e2", "/work/empty.py"),
        ToolCard(
            call_id="e3",
            name="create_file",
            status="done",
            kind="edit",
            diff=FileDiff(path="/work/new.txt", new_text="hello\n"),
        ),
        TurnEnded(stop_reason="stop", duration_s=1.0),
    ],
    "plan": [
        TurnStarted(session="s4", engine="acp", agent="claude"),
        COMMANDS,
        _plan("in_progress", "pending", "pending"),
        _plan("completed", "in_progress", "pending"),  # still the last lines: redrawn in place
        _plan("completed", "in_progress", "pending"),  # the same again: nothing drawn
        TextDelta(delta="Fixed the parser.\n"),
        _plan("completed", "completed", "in_progress"),  # text came between: drawn anew
        ToolCard(call_id="t1", name="run_command", status="started", kind="execute", title="pytest -q"),
        _plan("completed", "completed", "done-ish"),  # an unknown status reads as not started
        _plan(),  # the agent dropped its plan
        TurnEnded(stop_reason="stop", duration_s=3.0),
    ],
    # A call retitled while it runs (claude-agent-acp: "Edit", then the file)
    # is drawn again; one resent unchanged is not.
    "retitled": [
        TurnStarted(session="s5", engine="acp"),
        ToolCard(call_id="r1", name="edit", status="started", kind="edit", title="Edit"),
        ToolCard(call_id="r1", name="edit", status="started", kind="edit", title="Edit src/app.ts"),
        ToolCard(call_id="r2", name="execute", status="started", kind="execute", title="Preparing command…"),
        ToolCard(call_id="r1", name="edit", status="started", kind="edit", title="Edit src/app.ts"),
        ToolCard(call_id="r2", name="execute", status="started", kind="execute", title="make build"),
        ToolCard(call_id="r2", name="execute", status="failed", kind="execute", title="make build", error="exit 2"),
        ToolCard(call_id="r1", name="edit", status="done", kind="edit", title="Edit src/app.ts", duration_s=0.4),
        TurnEnded(stop_reason="stop", duration_s=1.0),
    ],
    "endings": [
        TurnStarted(session="s3", engine="acp", sandbox=True),
        TextDelta(delta="partial"),
        TurnEnded(stop_reason="error", duration_s=0.5, error="agent: quota reached", error_kind="agent"),
        TurnStarted(session="s3", engine="acp"),
        TurnEnded(stop_reason="aborted", duration_s=75.0, usage=UsageCounts(input_tokens=10, output_tokens=2)),
        TurnStarted(session="s3", engine="acp"),
        TextDelta(delta="again\n"),
        TurnEnded(stop_reason="stop", duration_s=1.0, usage=UsageCounts(input_tokens=5, output_tokens=1)),
        TurnStarted(session="s3", engine="acp"),
        TurnEnded(
            stop_reason="stop",
            duration_s=1.0,
            usage=UsageCounts(total_tokens=40, cost_amount=0.0123, cost_currency="USD"),
            cumulative_usage=UsageCounts(input_tokens=900, output_tokens=100),
        ),
    ],
    # Exit 5 (issue 26 item 2): the closing line names what was refused or
    # left unanswered; a reason that repeats its policy is said once.
    "refused": [
        TurnStarted(session="s6", engine="acp"),
        PermissionAnswered(
            call_id="p1",
            title="Run rm -rf build?",
            options=[ALLOW, REJECT],
            selected="no",
            policy="deny",
            reason="deny: reject_once",
        ),
        TurnEnded(stop_reason="stop", duration_s=1.0, exit_code=5),
        TurnStarted(session="s6", engine="acp"),
        PermissionAnswered(
            call_id="p2",
            title="Run make?",
            options=[ALLOW, REJECT],
            selected="no",
            policy="ask",
            reason="the user chose 'Reject'",
        ),
        PermissionAnswered(
            call_id="p3", title="Fetch URL?", options=[ALLOW], selected=None, policy="ask", reason="no answer within 5m"
        ),
        TurnEnded(stop_reason="stop", duration_s=2.0, exit_code=5),
        TurnStarted(session="s6", engine="acp"),
        TurnEnded(
            stop_reason="stop",
            duration_s=1.0,
            error="the agent asked 'Which branch?' and nobody answered (give an --answers rule)",
            exit_code=5,
        ),
        TurnStarted(session="s6", engine="acp"),
        PermissionAnswered(
            call_id="p4", title="Run ls?", options=[ALLOW, REJECT], selected="yes", policy="auto", reason="allow_once"
        ),
        TurnEnded(stop_reason="stop", duration_s=1.0, exit_code=0),
    ],
}


class FakeDiffs:
    """Stands in for the diff plugin: a diff for app.py, nothing for empty.py."""

    name = "fake-diffs"

    @hookimpl
    def agy_host_render_diff(self, card: ToolCard, cwd: str) -> str | None:
        path = card.args.get("TargetFile", "")
        if path.endswith("app.py"):
            return DIFF
        if path.endswith("empty.py"):
            return ""
        return None


@pytest.fixture
def bound() -> Iterator[Callable[[bool], None]]:
    """Bind a plugin manager with (or without) the fake diff plugin."""

    def bind(with_diffs: bool) -> None:
        global _DIFFS
        plugins = Plugins({}, load_entry_points=False)
        if with_diffs:
            plugins.register(FakeDiffs(), name="fake-diffs")
        _DIFFS = DiffSource(plugins.render_diff, "/work")

    yield bind
    _set_diffs(None)


#: What the command under test hands its renderers (set by ``bound``).
_DIFFS: DiffSource | None = None


def _set_diffs(value: DiffSource | None) -> None:
    global _DIFFS
    _DIFFS = value


def _clock() -> Callable[[], float]:
    ticks = itertools.count()
    return lambda: next(ticks) * 0.1


def render_plain(events: list[HostEvent], verbose: bool = False) -> str:
    buf = io.StringIO()
    renderer = TextRenderer(RenderOptions(stream=buf, verbose=verbose, diffs=_DIFFS), err=buf)
    for event in events:
        renderer.handle(event)
    renderer.close()
    return buf.getvalue()


def render_rich(events: list[HostEvent], verbose: bool = False) -> str:
    from rich.console import Console

    buf = io.StringIO()
    console = Console(
        file=buf,
        force_terminal=True,
        width=80,
        color_system="standard",
        highlight=False,
        emoji=False,
        legacy_windows=False,
    )
    renderer = RichRenderer(
        RenderOptions(stream=buf, verbose=verbose, diffs=_DIFFS), console=console, spinner=False, clock=_clock()
    )
    for event in events:
        renderer.handle(event)
    renderer.close()
    return buf.getvalue().replace("\x1b", "␛").replace("\r", "␍")


def check(name: str, text: str) -> None:
    path = SNAPSHOTS / f"{name}.txt"
    if UPDATE:
        path.write_text(text, "utf-8")
        return
    assert path.exists(), f"no snapshot {path}; run with AGY_HOST_UPDATE_SNAPSHOTS=1 and review it"
    assert text == path.read_text("utf-8"), f"{name} differs from {path} (AGY_HOST_UPDATE_SNAPSHOTS=1 to regenerate)"


RENDERERS: dict[str, Callable[..., str]] = {"plain": render_plain, "rich": render_rich}


@pytest.mark.parametrize("renderer", sorted(RENDERERS))
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_snapshot(renderer: str, script: str, bound: Callable[[bool], None]) -> None:
    bound(True)
    check(f"{renderer}-{script}", RENDERERS[renderer](SCRIPTS[script]))


@pytest.mark.parametrize("renderer", sorted(RENDERERS))
def test_snapshot_verbose_thinking(renderer: str, bound: Callable[[bool], None]) -> None:
    bound(False)
    events: list[HostEvent] = [
        TurnStarted(session="v", engine="acp"),
        ThoughtDelta(delta="First, the config.\n"),
        ThoughtDelta(delta="Then the tests."),
        TextDelta(delta="ok"),
        TurnEnded(stop_reason="stop", duration_s=0.1),
    ]
    check(f"{renderer}-verbose", RENDERERS[renderer](events, verbose=True))


@pytest.mark.parametrize("renderer", sorted(RENDERERS))
def test_snapshot_verbose_commands(renderer: str, bound: Callable[[bool], None]) -> None:
    """The agent's commands are listed with --verbose only (agents list dozens)."""
    bound(False)
    events: list[HostEvent] = [
        TurnStarted(session="v", engine="acp"),
        COMMANDS,
        TurnEnded(stop_reason="stop", duration_s=0.1),
    ]
    out = RENDERERS[renderer](events, verbose=True)
    assert "/compact <instructions>, /review" in out
    assert "/compact" not in RENDERERS[renderer](events)
    check(f"{renderer}-verbose-commands", out)


@pytest.mark.parametrize("renderer", sorted(RENDERERS))
def test_edits_without_the_diff_plugin_show_labels(renderer: str, bound: Callable[[bool], None]) -> None:
    bound(False)
    out = RENDERERS[renderer](SCRIPTS["edits"])
    assert "[edit: app.py]" in out
    assert "[edit: empty.py]" in out
    assert "[edit: new.txt]" in out
    assert "print('hello')" not in out
    check(f"{renderer}-edits-labels", out)


def test_every_host_event_kind_is_in_a_script() -> None:
    import typing

    from agy_host.contract import events

    kinds = set(typing.get_args(events.HostEvent))
    seen = {type(e) for script in SCRIPTS.values() for e in script}
    assert kinds <= seen, f"not rendered by any snapshot script: {sorted(k.__name__ for k in kinds - seen)}"


@pytest.mark.parametrize("renderer", sorted(RENDERERS))
def test_unknown_events_are_ignored(renderer: str) -> None:
    class Future:
        type = "future"

    out = RENDERERS[renderer]([TurnStarted(session="u", engine="acp"), Future()])
    assert "future" not in out


def _turn(*events: Any) -> list[HostEvent]:
    return [TurnStarted(session="x", engine="acp"), *events]


class Broken:
    name = "broken-diffs"

    @hookimpl
    def agy_host_render_diff(self, card: ToolCard, cwd: str) -> str | None:
        raise RuntimeError("boom")


def test_render_diff_is_firstresult_and_survives_a_broken_plugin() -> None:
    calls: list[str] = []

    class Second:
        name = "second"

        @hookimpl
        def agy_host_render_diff(self, card: ToolCard, cwd: str) -> str | None:
            calls.append("second")
            return "from second"

    class First:
        name = "first"

        @hookimpl
        def agy_host_render_diff(self, card: ToolCard, cwd: str) -> str | None:
            calls.append("first")
            return "from first"

    plugins = Plugins({}, load_entry_points=False)
    plugins.register(Second(), name="second")
    plugins.register(Broken(), name="broken")
    card = _edit("x", "/a.py")
    assert plugins.render_diff(card, "/") == "from second"
    assert any(e.name == "broken" and "boom" in e.error for e in plugins.errors)
    plugins.register(First(), name="first")
    calls.clear()
    assert plugins.render_diff(card, "/") == "from first"
    assert calls == ["first"], "the others are not asked"


@pytest.mark.parametrize("renderer", ["plain", "rich", "json", "quiet"])
def test_only_renderers_that_draw_diffs_ask_for_a_baseline(renderer: str) -> None:
    """A diff plugin takes its per-turn baseline only when ``diffs_wanted()``:
    the plain and rich renderers draw diffs, json and quiet do not."""
    from agy_host.builtins.renderers import agy_host_register_renderers

    factories: dict[str, Any] = {}
    agy_host_register_renderers(factories.__setitem__)
    diffs = DiffSource(Plugins({}, load_entry_points=False).render_diff, "/work")
    assert not diffs.wanted
    factories[renderer](RenderOptions(stream=io.StringIO(), diffs=diffs))
    assert diffs.wanted is (renderer in ("plain", "rich"))
    # a renderer given no diff source (a program, a test) draws labels and asks nothing
    factories[renderer](RenderOptions(stream=io.StringIO()))
