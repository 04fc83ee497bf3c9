"""B9 history: what a run costs when months of sessions are on disk.

A user's state directory fills up: every run, named or not, leaves a session
binding and a transcript. A command must not pay for that history unless it
asks for it (``sessions list --all``). This benchmark builds one synthetic
history (``history_sessions`` sessions, ``history_mb`` MB of transcripts in
today's transcript format, and their bindings in the session store's first
format, ``sessions.json`` v1, which every build reads) and measures, as
whole processes in that one state directory, interleaved:

* ``agy-host run`` (unnamed) with the history, and in an empty state directory;
* ``agy-host run --session NAME`` with a name never used before, with the
  history, and in an empty state directory.

Each measurement is the median wall time and CPU time (user and system, of
agy-host and the agent it waited for) of ``cli_runs`` invocations and the
largest peak RSS among them (``ru_maxrss`` from ``wait4`` in a small launcher:
agy-host's own, or its agent's if larger; the agent is the same in every
row). A warm-up run in
each state directory comes first, so a build that converts the old store
does so before anything is timed.
"""

from __future__ import annotations

import itertools
import json
import math
import shlex
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import fake_agent_command, fmt_mb, launch
from bench.context import Ctx
from bench.harness import (
    BenchReport,
    Case,
    Outcome,
    Target,
    interleave,
    log,
    markdown_table,
    mb_col,
    median_of,
    raw_outcomes,
    seconds_col,
    spread_col,
)

RUN_EMPTY = "agy-host run, empty state"
RUN_HISTORY = "agy-host run, with the history"
NEW_EMPTY = "agy-host run --session NEW, empty state"
NEW_HISTORY = "agy-host run --session NEW, with the history"

#: One line of answer text in the synthetic transcripts (about 100 bytes).
_LINE = "The history line says what a long agent answer says, at about one hundred bytes per line here. "


def build_history(state: Path, sessions: int, megabytes: int) -> dict[str, int]:
    """``sessions`` sessions (every tenth named, the rest unnamed runs) with
    ``megabytes`` MB of transcripts in all, and a ``sessions.json`` v1 binding
    each: the shape a user's state directory has after months of use. Most
    of the bytes are in a few big transcripts (one in 200 sessions holds 80%,
    as long answers and floods leave them); the rest share the remainder."""
    root = state / "agy-host"
    transcripts = root / "transcripts"
    transcripts.mkdir(parents=True, exist_ok=True)
    big = max(1, sessions // 200)
    total = megabytes * 1_000_000
    sizes = [
        total * 4 // 5 // big if i % (sessions // big) == 0 else total // 5 // (sessions - big) for i in range(sessions)
    ]
    bindings: dict[str, Any] = {}
    written = 0
    for i, size in enumerate(sizes):
        name = f"project-{i}" if i % 10 == 0 else f"run-2026{1 + i % 12:02d}{1 + i % 28:02d}-{i % 24:02d}0000-{i:04x}"
        ts = f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00Z"
        answer = (_LINE * (size // (2 * len(_LINE)) + 1))[: max(1, size // 2)]
        turn = [
            {"v": 1, "ts": ts, "role": "user", "text": "explain this", "engine": "acp", "agent": "a", "cwd": "/p"},
            {
                "v": 1,
                "ts": ts,
                "role": "assistant",
                "text": answer,
                "engine": "acp",
                "agent": "a",
                "stop_reason": "stop",
            },
        ]
        lines = "".join(json.dumps(entry, separators=(",", ":")) + "\n" for entry in turn) * 2
        (transcripts / f"{name}.jsonl").write_text(lines, "utf-8")
        written += len(lines)
        bindings[f"{name}@acp:bench"] = {
            "conversation_id": f"conversation-{i}",
            "engine": "acp",
            "agent": "a",
            "cwd": "/p",
            "updated_at": ts,
        }
    store = {"version": 1, "bindings": dict(sorted(bindings.items()))}
    (root / "sessions.json").write_text(json.dumps(store, indent=2) + "\n", "utf-8")
    return {"sessions": sessions, "transcript_bytes": written, "largest": max(sizes)}


def _timed(python: str, make: Callable[[], list[str]], env: dict[str, str], cwd: Path, runs: int) -> dict[str, Any]:
    walls: list[float] = []
    cpus: list[float] = []
    peak_kb = 0
    for _ in range(runs):
        wall, peak, cpu = launch(python, make(), env=env, cwd=cwd)
        walls.append(wall)
        cpus.append(cpu)
        peak_kb = max(peak_kb, peak)
    return {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus), "peak_kb": peak_kb}


def cases(ctx: Ctx) -> list[Case]:
    agy = str(Path(ctx.python).parent / "agy-host")
    agent = shlex.join(fake_agent_command(ctx.python, "echo"))
    runs = ctx.sizes.cli_runs
    run = [agy, "run", "--engine", "acp", "--agent", agent, "--keep-alive", "0"]
    empty, full = ctx.home("agy-empty"), ctx.home("agy-history")
    facts = build_history(full / "state", ctx.sizes.history_sessions, ctx.sizes.history_mb)
    log(
        f"  history: {facts['sessions']} sessions, {facts['transcript_bytes'] / 1e6:.0f} MB of transcripts "
        f"(the largest {facts['largest'] / 1e6:.1f} MB)"
    )
    envs = {home: ctx.isolated_env(home) for home in (empty, full)}
    for home in (empty, full):  # a build that converts the old store does it here, untimed
        _timed(ctx.python, lambda: [*run, "warm up"], envs[home], home, 1)
    fresh = itertools.count()

    def case(home: Path, named: bool) -> Callable[[], dict[str, Any]]:
        def make() -> list[str]:
            return [*run, "--session", f"bench-new-{next(fresh)}", "hi"] if named else [*run, "hi"]

        return lambda: _timed(ctx.python, make, envs[home], home, runs)

    return [
        Case(RUN_EMPTY, "ref", case(empty, named=False)),
        Case(RUN_HISTORY, "ours", case(full, named=False)),
        Case(NEW_EMPTY, "ref", case(empty, named=True)),
        Case(NEW_HISTORY, "ours", case(full, named=True)),
    ]


def report(ctx: Ctx, outcomes: list[Outcome]) -> BenchReport:
    columns = [
        seconds_col("wall_s", "wall (median)"),
        spread_col("wall_s"),
        seconds_col("cpu_s", "CPU (median)"),
        spread_col("cpu_s", "CPU spread"),
        mb_col("peak_kb", "peak RSS"),
    ]
    rep = BenchReport(
        key="B9",
        title="history on disk",
        setup="Whole-process wall time, CPU time (agy-host and its agent) and peak RSS of one-shot turns on the "
        f"fake ACP agent's `echo`, in a state directory holding {ctx.sizes.history_sessions:,} sessions with "
        f"{ctx.sizes.history_mb} MB of transcripts (every tenth session named; one in 200 holds 80% of the bytes, "
        f"as long answers leave them), and in an empty one; each measurement is the median of "
        f"{ctx.sizes.cli_runs} invocations, {ctx.repeats} interleaved measurements per row.",
        table=markdown_table(outcomes, columns),
        raw=raw_outcomes(outcomes),
    )

    def ratio(a: str, b: str, metric: str) -> float:
        base = median_of(outcomes, b, metric)
        return median_of(outcomes, a, metric) / base if base else math.nan

    cpu = ratio(NEW_HISTORY, RUN_HISTORY, "cpu_s")
    if not math.isnan(cpu):
        # CPU (agy-host and its agent) is the steadier figure on a shared machine; wall time is given next to it
        rep.targets.append(
            Target("a new `--session NAME` costs what a plain run costs (CPU, <= 1.10x)", f"{cpu:.2f}x", cpu <= 1.10)
        )
    wall = ratio(NEW_HISTORY, RUN_HISTORY, "wall_s")
    if not math.isnan(wall):
        rep.notes.append(f"Wall time: a new `--session NAME` takes {wall:.2f}x a plain run's, with the history.")
    grows = [
        ratio(with_history, empty, "cpu_s")
        for with_history, empty in ((RUN_HISTORY, RUN_EMPTY), (NEW_HISTORY, NEW_EMPTY))
    ]
    if not any(math.isnan(g) for g in grows):
        rep.notes.append(
            f"With the history against an empty state directory (CPU): a plain run {grows[0]:.2f}x, "
            f"a new `--session NAME` {grows[1]:.2f}x."
        )
    peak_new = median_of(outcomes, NEW_HISTORY, "peak_kb")
    peak_plain = median_of(outcomes, RUN_HISTORY, "peak_kb")
    if not math.isnan(peak_new) and not math.isnan(peak_plain):
        rep.notes.append(
            f"Peak RSS: {fmt_mb(peak_new)} for a new `--session NAME`, {fmt_mb(peak_plain)} for a plain run."
        )
    return rep


def run(ctx: Ctx) -> BenchReport:
    log(f"B9 history on disk: {ctx.sizes.cli_runs} invocations per measurement x {ctx.repeats}")
    return report(ctx, interleave(cases(ctx), ctx.repeats, log=log))


__all__ = ["build_history", "cases", "report", "run"]
