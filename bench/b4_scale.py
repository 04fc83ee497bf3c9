"""B4 scale: many concurrent sessions on one ACP connection.

The fake agent (``--session-id generate``: a fresh id per ``session/new``)
serves every session on its one stdin/stdout. It does **not** serialize
prompts: each ``session/prompt`` is played on its own thread, and a flood
writes its frames in blocks of about 256 KiB under one output lock, so the
sessions' streams interleave block by block (about 1,100 chunks per block).
What fairness the agent itself allows is shown by the floor row (a bare loop
that decodes every line and notes when each response arrives).

Clients: agy-host (one driver, so one ACP connection; one
:class:`~agy_host.runtime.turn_layer.TurnLayer` per host session, all turns started
at once), the ACP Python SDK (one connection, ``asyncio.gather`` of the
prompts), and the floor. acpx has no equivalent: it runs one session per
queue-owner process, so it is not in this table.

Reported: total time from the first prompt to the last response, throughput
(chunks per second over that time), and fairness: the slowest session's finish
time over the fastest one's (1.0 would be perfectly even).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from bench.b1_flood import _env_with_repo
from bench.context import Ctx
from bench.harness import (
    BenchReport,
    Case,
    Column,
    Outcome,
    interleave,
    log,
    markdown_table,
    mb_col,
    median_of,
    raw_outcomes,
    run_json_subprocess,
    seconds_col,
    spread_col,
)

CLIENTS = Path(__file__).resolve().parent / "clients"
AGY = "agy-host, API, one driver"
SDK = "ACP Python SDK 0.12.1, one connection"
FLOOR = "floor: pipe + msgspec decode per line"


def _derive(result: dict[str, Any], sessions: int, chunks: int) -> dict[str, Any]:
    finish = [float(x) for x in result.get("finish_s", [])]
    total = float(result["total_s"])
    got = int(result.get("chunks", 0))
    if len(finish) != sessions:
        raise RuntimeError(f"{len(finish)} of {sessions} sessions finished")
    if got != sessions * chunks:
        raise RuntimeError(f"{got} chunks arrived, expected {sessions * chunks}")
    return {
        "total_s": total,
        "throughput": sessions * chunks / total,
        "fairness": max(finish) / min(finish) if min(finish) > 0 else math.inf,
        "first_s": min(finish),
        **{k: v for k, v in result.items() if k in ("growth_kb", "peak_kb", "cpu_s")},
        "spawns": result.get("spawns", 1),
    }


def cases(ctx: Ctx) -> list[Case]:
    n, k = ctx.sizes.scale_sessions, ctx.sizes.scale_chunks
    common = ["--count", str(k), "--sessions", str(n), "--agent-python", ctx.python]

    def agy() -> dict[str, Any]:
        cmd = [ctx.python, "-m", "bench.agy_worker", "scale", *common]
        return _derive(run_json_subprocess(cmd, env=_env_with_repo()), n, k)

    def sdk() -> dict[str, Any]:
        cmd = [str(ctx.peer("acp-sdk").executable), str(CLIENTS / "sdk_flood.py"), *common]
        return _derive(run_json_subprocess(cmd, timeout=1800), n, k)

    def floor() -> dict[str, Any]:
        return _derive(run_json_subprocess([ctx.python, str(CLIENTS / "floor.py"), *common]), n, k)

    return [Case(AGY, "ours", agy), Case(SDK, "peer", sdk), Case(FLOOR, "floor", floor)]


def report(ctx: Ctx, outcomes: list[Outcome]) -> BenchReport:
    n, k = ctx.sizes.scale_sessions, ctx.sizes.scale_chunks
    columns = [
        seconds_col("total_s", "total (median)"),
        spread_col("total_s"),
        Column(
            "throughput",
            lambda o: f"{o.median('throughput') / 1000:.0f} k chunks/s" if "throughput" in o.series else "-",
        ),
        Column("slowest / fastest", lambda o: f"{o.median('fairness'):.2f}" if "fairness" in o.series else "-"),
        seconds_col("first_s", "first session done"),
        seconds_col("cpu_s", "client CPU"),
        mb_col("growth_kb", "RSS growth"),
    ]
    rep = BenchReport(
        key="B4",
        title="scale",
        setup=f"{n} sessions on one ACP connection, each streaming {k:,} chunks ({n * k:,} in all), all prompts sent "
        f"at once; {ctx.repeats} interleaved runs. The fake agent plays each prompt on its own thread (prompts are "
        "not serialized) and writes in blocks of about 1,100 chunks.",
        table=markdown_table(outcomes, columns),
        raw=raw_outcomes(outcomes),
    )
    agy = median_of(outcomes, AGY, "total_s")
    sdk = median_of(outcomes, SDK, "total_s")
    fl = median_of(outcomes, FLOOR, "total_s")
    if not math.isnan(agy) and not math.isnan(sdk):
        rep.notes.append(f"The SDK needs {sdk / agy:.1f}x agy-host's total time.")
    if not math.isnan(agy) and not math.isnan(fl):
        rep.notes.append(f"agy-host's total is {agy / fl:.2f}x the floor's.")
    rep.notes.append("acpx: not measured (one session per acpx queue-owner process; no shared connection).")
    return rep


def run(ctx: Ctx) -> BenchReport:
    n, k = ctx.sizes.scale_sessions, ctx.sizes.scale_chunks
    log(f"B4 scale: {n} sessions x {k:,} chunks x {ctx.repeats} runs")
    return report(ctx, interleave(cases(ctx), ctx.repeats, log=log))


__all__ = ["cases", "report", "run"]
