"""The benchmark harness itself: statistics, interleaving, tables, the result
protocol, and that each measured client really receives every chunk.

Fast and not timing-based: nothing here asserts on a duration.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import b1_flood
from bench.common import (
    FLOOD_TEXT,
    MemoryWindow,
    Series,
    emit_result,
    fake_agent_command,
    fmt_seconds,
    parse_result,
    percentile,
    proc_status,
    scale_agent_command,
)
from bench.context import Ctx, Sizes
from bench.harness import Case, Skip, Target, interleave, markdown_table, ratio_col, run_json_subprocess, seconds_col

REPO = Path(__file__).resolve().parents[2]


def test_series_median_and_spread() -> None:
    s = Series([1.0, 3.0, 2.0])
    assert s.median == 2.0
    assert s.spread == pytest.approx(1.0)  # (3 - 1) / 2
    assert Series([5.0]).spread == 0.0
    assert math.isnan(Series().median)


def test_percentile_interpolates() -> None:
    values = [float(x) for x in range(1, 101)]
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile(values, 99) == pytest.approx(99.01)
    assert percentile([7.0], 99) == 7.0
    assert math.isnan(percentile([], 50))


def test_result_protocol_round_trip(capsys: pytest.CaptureFixture[str]) -> None:
    print("noise before")
    emit_result({"turn_s": 0.5, "chunks": 3})
    out = capsys.readouterr().out
    assert parse_result(out) == {"turn_s": 0.5, "chunks": 3}
    assert parse_result("no result here\n") is None


def test_interleave_rotates_order_and_keeps_skips_and_failures() -> None:
    calls: list[str] = []

    def make(name: str) -> Any:
        def run() -> dict[str, Any]:
            calls.append(name)
            return {"turn_s": 1.0, "label": name}

        return run

    def skip() -> dict[str, Any]:
        raise Skip("not here")

    def boom() -> dict[str, Any]:
        raise RuntimeError("broken")

    cases = [
        Case("a", "ours", make("a")),
        Case("b", "peer", make("b")),
        Case("s", "peer", skip),
        Case("f", "peer", boom),
    ]
    outcomes = interleave(cases, 3)
    assert calls == ["a", "b", "b", "a", "a", "b"]  # round 2 starts at b, round 3 at the skipped s
    assert outcomes[0].series["turn_s"].n == 3
    assert outcomes[0].extra["label"] == "a"  # non-numbers are kept aside
    assert outcomes[2].skipped == "not here"
    assert outcomes[3].failed == "RuntimeError: broken"


def test_table_shows_ratios_and_why_a_row_is_missing() -> None:
    cases = [Case("ours", "ours", lambda: {"turn_s": 1.0}), Case("peer", "peer", lambda: {"turn_s": 4.0})]
    cases.append(Case("gone", "peer", lambda: (_ for _ in ()).throw(Skip("no node"))))
    outcomes = interleave(cases, 1)
    table = markdown_table(outcomes, [seconds_col("turn_s", "turn"), ratio_col("turn_s", lambda: 1.0, "/ ours")])
    lines = table.splitlines()
    assert lines[0] == "| client | turn | / ours |"
    assert "| peer | 4.00 s | 4.00x |" in lines
    assert "| gone | skipped: no node |  |" in lines


def test_target_verdicts() -> None:
    assert Target("x", "1", True).verdict == "met"
    assert Target("x", "1", False).verdict == "NOT met"
    assert Target("x", "-", None).verdict == "n/a"


def test_warm_agents_report_judges_its_targets_and_skips_what_is_missing() -> None:
    from bench import b8_warm
    from bench.runner import BENCHMARKS

    assert BENCHMARKS["B8"] is b8_warm.run
    values = {b8_warm.WARM_THIN: {"wall_s": 0.1}, b8_warm.WARM_FULL: {"wall_s": 0.3}, b8_warm.COLD: {"wall_s": 0.9}}
    values[b8_warm.FLOOD_THIN] = {"turn_s": 0.4, "wall_s": 0.5}
    values[b8_warm.FLOOR] = {"turn_s": 0.2}
    cases = [Case(name, "ours", lambda v=v: v) for name, v in values.items()]
    cases.append(Case(b8_warm.GEMINI_WARM, "ours", lambda: (_ for _ in ()).throw(Skip("not provisioned"))))
    report = b8_warm.report(Ctx(repeats=1), interleave(cases, 1))
    assert [(t.text, t.verdict) for t in report.targets] == [
        ("warm second turn <= 250 ms wall", "met"),
        ("flood through a warm agent within 1.3x of the floor", "NOT met"),
    ]
    assert "| Gemini CLI, second command, warm | skipped: not provisioned |" in report.table
    assert any("saves 200 ms" in note for note in report.notes), report.notes


def test_history_report_judges_by_cpu_and_the_history_has_todays_shape(tmp_path: Path) -> None:
    from bench import b9_history
    from bench.runner import BENCHMARKS

    assert BENCHMARKS["B9"] is b9_history.run
    values = {
        b9_history.RUN_EMPTY: {"wall_s": 0.4, "cpu_s": 0.30, "peak_kb": 34_000},
        b9_history.RUN_HISTORY: {"wall_s": 0.5, "cpu_s": 0.31, "peak_kb": 34_000},
        b9_history.NEW_EMPTY: {"wall_s": 0.4, "cpu_s": 0.31, "peak_kb": 34_000},
        b9_history.NEW_HISTORY: {"wall_s": 0.9, "cpu_s": 0.50, "peak_kb": 64_000},
    }
    cases = [Case(name, "ours", lambda v=v: v) for name, v in values.items()]
    report = b9_history.report(Ctx(repeats=1), interleave(cases, 1))
    assert [(t.measured, t.verdict) for t in report.targets] == [("1.61x", "NOT met")]
    assert any("1.80x a plain run's" in note for note in report.notes), report.notes
    facts = b9_history.build_history(tmp_path, sessions=40, megabytes=1)
    store = json.loads((tmp_path / "agy-host" / "sessions.json").read_text())
    assert store["version"] == 1 and len(store["bindings"]) == 40 == facts["sessions"]
    transcripts = sorted((tmp_path / "agy-host" / "transcripts").iterdir())
    assert len(transcripts) == 40 and sum(t.stat().st_size for t in transcripts) == facts["transcript_bytes"]
    assert facts["largest"] > 10 * min(t.stat().st_size for t in transcripts), "a few sessions hold most bytes"


def test_formatting() -> None:
    assert fmt_seconds(0.1234) == "123 ms"
    assert fmt_seconds(12.34) == "12.3 s"
    assert fmt_seconds(float("nan")) == "-"


def test_memory_window_reads_this_process() -> None:
    assert proc_status().get("VmRSS", 0) > 0
    mem = MemoryWindow()
    mem.start()
    block = bytearray(8 * 1024 * 1024)
    block[::4096] = b"x" * len(block[::4096])
    mem.stop()
    assert mem.hwm_end_kb >= mem.rss_start_kb
    assert mem.cpu_s >= 0
    del block


def test_agent_commands_carry_json_settings() -> None:
    cmd = fake_agent_command("py", "flood", settings={"flood_count": 3, "flood_text": "a b"}, session_id="generate")
    assert cmd[:5] == ["py", "-m", "agy_host.testing.acp.agent", "--scenario", "flood"]
    assert "flood_count=3" in cmd and 'flood_text="a b"' in cmd
    scale = scale_agent_command("py", 10, 2)
    prompts = next(a for a in scale if a.startswith("prompts="))
    assert prompts.count('"stop"') == 3  # two warm prompts, then the flood's own stop
    assert len(FLOOD_TEXT) == 60


def test_scanner_finds_markers_split_across_reads() -> None:
    scan = b1_flood._Scanner()
    marker = b'"agent_message_chunk"'
    first = scan.window(b'xxxx"agent_mes', keep=len(marker) - 1)
    second = scan.window(b'sage_chunk"yyyy', keep=len(marker) - 1)
    assert marker not in first
    assert second.count(marker) == 1


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


@pytest.mark.parametrize("decode", ["typed", "generic"])
def test_floor_client_sees_every_chunk(decode: str) -> None:
    cmd = [sys.executable, str(REPO / "bench" / "clients" / "floor.py"), "--count", "700", "--decode", decode]
    result = run_json_subprocess(cmd, env=_env(), timeout=120)
    assert result["chunks"] == 700
    assert result["chars"] == 700 * len(FLOOD_TEXT)


@pytest.mark.parametrize("renderer", ["null", "json"])
def test_agy_worker_flood_delivers_the_whole_response(renderer: str) -> None:
    cmd = [sys.executable, "-m", "bench.agy_worker", "flood", "--count", "1500", "--renderer", renderer]
    result = run_json_subprocess(cmd, env=_env(), timeout=120)
    assert result["chunks"] == 1500
    assert result["chars"] == 1500 * len(FLOOD_TEXT)
    assert result["stream_s"] <= result["turn_s"]


def test_agy_worker_scale_uses_one_connection() -> None:
    cmd = [sys.executable, "-m", "bench.agy_worker", "scale", "--count", "200", "--sessions", "3"]
    result = run_json_subprocess(cmd, env=_env(), timeout=120)
    assert result["chunks"] == 600
    assert len(result["finish_s"]) == 3
    assert result["spawns"] == 1


def test_quick_sizes_are_small() -> None:
    quick = Sizes.quick()
    assert quick.flood < Sizes().flood and quick.cli_runs == 1
    ctx = Ctx(sizes=quick)
    try:
        with pytest.raises(Skip, match="not provisioned"):
            ctx.peer("acpx")
    finally:
        ctx.cleanup()
