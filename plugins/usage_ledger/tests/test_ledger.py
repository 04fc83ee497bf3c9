"""The ledger file, the observer, the doctor section and the host tool, in process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from agy_host.contract.diagnostics import DiagnosticReport
from agy_host.contract.events import (
    TextDelta,
    ToolCard,
    ToolUseRequested,
    TurnEnded,
    TurnStarted,
    UsageCounts,
    UsageReport,
)
from agy_host.contract.tools import HostTool
from agy_host.testing.pytest_plugin import AgyHostHome
from agy_host_usage_ledger import hooks, ledger
from agy_host_usage_ledger.ledger import LedgerEntry


def entry(**fields: object) -> LedgerEntry:
    base: dict[str, object] = {"ts": "2026-12-02T10:00:00Z", "session": "s", "stop_reason": "stop", "duration_s": 1.0}
    base.update(fields)
    return msgspec.convert(base, LedgerEntry)


def test_append_then_read_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "ledger.jsonl"
    one = entry(usage=UsageCounts(input_tokens=10, output_tokens=5))
    two = entry(session="t", stop_reason="error", error_kind="timeout")
    ledger.append(one, path)
    ledger.append(two, path)
    found = ledger.read(path)
    assert found.entries == [one, two] and found.skipped == []
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert ledger.read(tmp_path / "absent.jsonl").entries == []


def test_unreadable_lines_are_skipped_and_counted_and_new_fields_ignored(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    ledger.append(entry(session="a"), path)
    with open(path, "ab") as fh:
        fh.write(b'{"v": 1, "ts": "x", "stop_reason": "stop", "duration_s": 1, "from_the_future": [1]}\n')
        fh.write(b"not json\n")
        fh.write(b'{"v": 1, "ts": "torn", "stop_re')  # a torn last line
    found = ledger.read(path)
    assert [e.session for e in found.entries] == ["a", ""]
    assert len(found.skipped) == 2 and found.skipped[0].startswith("line 3:")


APPENDER = """
import sys
from pathlib import Path
from agy_host_usage_ledger import ledger
path, tag, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
pad = "x" * 20000  # far beyond PIPE_BUF: atomicity must not rely on small writes
for i in range(count):
    ledger.append(ledger.LedgerEntry(ts=pad, session=f"{tag}-{i}", stop_reason="stop", duration_s=0.0), path)
"""


def test_concurrent_appenders_never_tear_or_interleave_lines(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    procs = [
        subprocess.Popen([sys.executable, "-c", APPENDER, str(path), f"p{n}", "40"], env=os.environ.copy())
        for n in range(6)
    ]
    assert all(p.wait(timeout=60) == 0 for p in procs)
    found = ledger.read(path)
    assert found.skipped == []
    assert sorted(e.session for e in found.entries) == sorted(f"p{n}-{i}" for n in range(6) for i in range(40))


def test_select_and_summarize() -> None:
    entries = [
        entry(session="a", usage=UsageCounts(input_tokens=100, output_tokens=20, cost_amount=0.5, cost_currency="USD")),
        entry(session="b", stop_reason="error", error_kind="exited", duration_s=2.5),
        entry(session="a", usage=UsageCounts(input_tokens=1, output_tokens=2, total_tokens=4), tool_calls=3),
    ]
    assert [e.session for e in ledger.select(entries, session="a")] == ["a", "a"]
    assert ledger.select(entries, last=1) == entries[-1:]
    totals = ledger.summarize(entries)
    assert (totals.turns, totals.turns_with_usage, totals.input_tokens, totals.total_tokens) == (3, 2, 101, 124)
    assert totals.by_stop_reason == {"stop": 2, "error": 1} and totals.cost == {"USD": 0.5}
    line = ledger.summary_line(totals)
    assert line.startswith("3 turns (error 1, stop 2) in 4.5s; tool calls 3, host tool calls 0;")
    assert line.endswith("usage reported for 2: in 101, out 22, total 124; cost 0.5 USD")
    assert ledger.summary_line(ledger.summarize([entries[1]])).endswith("; no usage reported")
    table = ledger.format_table(entries).splitlines()
    assert table[0].split() == ["ended", "session", "engine", "stop", "time", "in", "out", "total"]
    assert "error (exited)" in table[2] and table[2].split()[-3:] == ["-", "-", "-"]


def test_merge_usage_keeps_what_each_report_says() -> None:
    first = UsageCounts(context_used=5, cost_amount=0.1, cost_currency="USD")
    last = UsageCounts(input_tokens=7, output_tokens=3)
    merged = ledger.merge_usage(first, last)
    assert merged == UsageCounts(input_tokens=7, output_tokens=3, context_used=5, cost_amount=0.1, cost_currency="USD")
    assert ledger.merge_usage(None, last) is last and ledger.merge_usage(first, None) is first


def test_the_observer_records_one_line_per_turn(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    observer = hooks.LedgerObserver(path=lambda: path)
    events = [
        TurnStarted(session="s1", engine="acp", agent="fake", model="m1"),
        TextDelta(delta="hi"),
        ToolCard(call_id="c1", name="read", status="started"),
        ToolCard(call_id="c1", name="read", status="done"),  # the same card again
        ToolCard(call_id="c2", name="edit", status="failed"),
        ToolUseRequested(call_id="h1", name="usage_summary"),
        UsageReport(turn=UsageCounts(cost_amount=0.2, cost_currency="USD")),
        UsageReport(turn=UsageCounts(input_tokens=9, output_tokens=1)),
        TurnEnded(
            stop_reason="stop",
            duration_s=1.23456,
            conversation_id="conv-1",
            agent_stop_reason="end_turn",
            usage=UsageCounts(input_tokens=9, output_tokens=1),
        ),
        TurnEnded(stop_reason="error", duration_s=0.5, error="x", error_kind="spawn"),  # no TurnStarted seen
    ]
    for event in events:
        observer.event(event)
    first, second = ledger.read(path).entries
    assert (first.session, first.engine, first.agent, first.model) == ("s1", "acp", "fake", "m1")
    assert (first.conversation_id, first.stop_reason, first.agent_stop_reason) == ("conv-1", "stop", "end_turn")
    assert (first.duration_s, first.tool_calls, first.host_tool_calls) == (1.235, 2, 1)
    assert first.usage == UsageCounts(input_tokens=9, output_tokens=1, cost_amount=0.2, cost_currency="USD")
    assert (second.session, second.stop_reason, second.error_kind, second.usage) == ("", "error", "spawn", None)


def test_the_ledger_path_follows_the_state_dir_and_the_override(agy_host_home: AgyHostHome) -> None:
    assert ledger.ledger_path() == agy_host_home.state_dir / "usage-ledger.jsonl"
    assert ledger.ledger_path({"AGY_HOST_USAGE_LEDGER": "~/elsewhere.jsonl"}) == Path("~/elsewhere.jsonl").expanduser()


def test_doctor_section(agy_host_home: AgyHostHome) -> None:
    report = DiagnosticReport()
    hooks.agy_host_diagnostics(report=report)
    rows = {r.label: r for r in report.section("usage ledger").rows}
    assert rows["turns"].value == "none recorded yet" and report.worst == "ok"
    path = ledger.ledger_path()
    ledger.append(entry(session="s9", stop_reason="aborted"), path)
    with open(path, "ab") as fh:
        fh.write(b"garbage\n")
    report = DiagnosticReport()
    hooks.agy_host_diagnostics(report=report)
    rows = {r.label: r for r in report.section("usage ledger").rows}
    assert (rows["turns"].value, rows["turns"].status) == ("1", "ok")
    assert rows["last turn"].value.endswith("s9 (aborted)")
    assert rows["unreadable lines"].status == "warn" and rows["unreadable lines"].detail[0].startswith("line 2:")


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_doctor_reports_a_read_only_state_dir(agy_host_home: AgyHostHome) -> None:
    state = agy_host_home.state_dir
    state.mkdir(parents=True, exist_ok=True)
    state.chmod(0o500)
    try:
        report = DiagnosticReport()
        hooks.agy_host_diagnostics(report=report)
    finally:
        state.chmod(0o700)
    assert report.worst == "error"


async def test_the_usage_summary_tool(agy_host_home: AgyHostHome) -> None:
    tools: list[HostTool] = []
    hooks.agy_host_register_tools(register=tools.append)
    [tool] = tools
    assert tool.name == "usage_summary" and tool.call is hooks.usage_summary
    path = ledger.ledger_path()
    ledger.append(entry(session="a", usage=UsageCounts(input_tokens=3, output_tokens=4)), path)
    ledger.append(entry(session="b", stop_reason="aborted"), path)
    everything = await hooks.usage_summary({})
    assert everything.text == (
        "agy-host usage (all sessions): 2 turns (aborted 1, stop 1) in 2.0s; usage reported for 1: in 3, out 4, total 7"
    )
    only_b = await hooks.usage_summary({"session": "b", "last": 5})
    assert only_b.text.startswith("agy-host usage (session 'b', last 5 turns): 1 turn (aborted 1)")
    for bad in ({"last": 0}, {"last": True}, {"session": 3}):
        assert (await hooks.usage_summary(bad)).is_error
    json.dumps(hooks.USAGE_SUMMARY_SCHEMA)  # a plain JSON schema, as MCP needs
