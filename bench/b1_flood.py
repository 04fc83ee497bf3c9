"""B1 stream flood: N ``agent_message_chunk`` notifications (60 bytes of text
each) then ``end_turn``, from the same fake agent to every client.

Clients, each in its own process (its peak RSS is its own):

* agy-host's full path, in-process API (connection -> events -> turn layer ->
  a null renderer; again with the JSON renderer to /dev/null);
* agy-host's CLI, ``agy-host run --format json`` and ``--format text``
  (whole processes, stdout to ``/dev/null``, started by a small launcher
  that reads their peak RSS with ``wait4``: what a user runs; issue 29's
  memory target is theirs);
* the ACP Python SDK 0.12.x client with a no-op ``session_update``;
* ``acpx@0.19.1 --format json exec``: its stdout goes to a pipe the runner
  reads and discards (acpx prints every frame; the runner notes when the
  ``session/prompt`` frame and its response frame pass, which is acpx's turn);
* the floor: a bare loop reading the pipe and decoding each line with
  msgspec; and the agent alone (the pipe read, nothing decoded).

The turn is timed from sending ``session/prompt`` to having its response (and
for agy-host, to the end of ``run_turn``: the outcome mapped, the session
binding stored). In-process clients first run a warm prompt (spawn,
initialize and session/new are not in the turn). RSS: ``VmHWM`` within the
turn minus ``VmRSS`` at its start (the peak is reset at the start).
"""

from __future__ import annotations

import math
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, MemoryWindow, flood_agent_command, launch, now
from bench.context import Ctx
from bench.harness import (
    BenchReport,
    Case,
    Column,
    Outcome,
    Target,
    interleave,
    log,
    markdown_table,
    mb_col,
    median_of,
    ratio_col,
    raw_outcomes,
    run_json_subprocess,
    seconds_col,
    spread_col,
)

CLIENTS = Path(__file__).resolve().parent / "clients"
AGY_NULL = "agy-host, API, null renderer"
AGY_JSON = "agy-host, API, JSON renderer -> /dev/null"
AGY_CLI = "agy-host run --format json (CLI)"
AGY_CLI_TEXT = "agy-host run, text (CLI)"
SDK = "ACP Python SDK 0.12.1, no-op handler"
ACPX = "acpx 0.19.1 --format json exec"
FLOOR = "floor: pipe + msgspec decode per line"
AGENT = "agent alone: pipe read, no decode"


def _agy(ctx: Ctx, renderer: str) -> dict[str, Any]:
    cmd = [ctx.python, "-m", "bench.agy_worker", "flood", "--count", str(ctx.sizes.flood)]
    cmd += ["--renderer", renderer, "--agent-python", ctx.python]
    return run_json_subprocess(cmd, env=_env_with_repo())


def _env_with_repo() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _sdk(ctx: Ctx) -> dict[str, Any]:
    sdk = ctx.peer("acp-sdk")
    cmd = [str(sdk.executable), str(CLIENTS / "sdk_flood.py"), "--agent-python", ctx.python]
    return run_json_subprocess([*cmd, "--count", str(ctx.sizes.flood)], timeout=1800)


def _floor(ctx: Ctx, decode: str) -> dict[str, Any]:
    cmd = [ctx.python, str(CLIENTS / "floor.py"), "--agent-python", ctx.python, "--count", str(ctx.sizes.flood)]
    return run_json_subprocess([*cmd, "--decode", decode])


class _Scanner:
    """Finds frames in a byte stream read in pieces (a marker may straddle two reads)."""

    def __init__(self) -> None:
        self.tail = b""

    def window(self, data: bytes, keep: int = 64) -> bytes:
        buf = self.tail + data
        self.tail = buf[-keep:]
        return buf


def run_cli(
    cmd: list[str], *, env: dict[str, str], cwd: Path, prompt_marker: bytes | None, done_marker: bytes | None
) -> dict[str, Any]:
    """Run a CLI with stdout to a pipe that is read and discarded; time the
    whole process, and (with markers) the span between two frames on stdout.
    Memory is read from ``/proc/<pid>`` of the CLI process itself."""
    t_spawn = now()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env, cwd=cwd
    )
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    scan = _Scanner()
    mem = MemoryWindow(pid=proc.pid)
    t0 = t1 = math.nan
    chunks = 0
    marker = b'"agent_message_chunk"'
    while True:
        data = os.read(fd, 1 << 20)
        if not data:
            break
        if prompt_marker is None:
            continue
        buf = scan.window(data, keep=len(marker) - 1)
        if math.isnan(t0):
            at = buf.find(prompt_marker)
            if at >= 0:
                t0 = now()
                mem.start()
                buf = buf[at:]
        if not math.isnan(t0) and math.isnan(t1):
            chunks += buf.count(marker)
            if done_marker is not None and done_marker in buf:
                t1 = now()
                mem.stop()
    code = proc.wait()
    wall = now() - t_spawn
    if code != 0:
        raise RuntimeError(f"{cmd[0]} exited {code}")
    out: dict[str, Any] = {"wall_s": wall}
    if prompt_marker is not None:
        if math.isnan(t1):
            raise RuntimeError("the response frame was not seen on stdout")
        out.update(turn_s=t1 - t0, chunks=chunks, **mem.as_dict())
    return out


def _acpx(ctx: Ctx) -> dict[str, Any]:
    acpx = ctx.peer("acpx")
    home = ctx.home("acpx")
    agent = shlex.join(flood_agent_command(ctx.python, ctx.sizes.flood, warm_prompt=False))
    cmd = [ctx.node(), str(acpx.executable), "--format", "json", "--approve-all", "--agent", agent, "exec", "go"]
    return run_cli(
        cmd,
        env=ctx.isolated_env(home),
        cwd=home,
        prompt_marker=b'"method":"session/prompt"',
        done_marker=b'"stopReason"',
    )


def _agy_cli(ctx: Ctx, fmt: str) -> dict[str, Any]:
    home = ctx.home("agy")
    agent = shlex.join(flood_agent_command(ctx.python, ctx.sizes.flood, warm_prompt=False))
    exe = str(Path(ctx.python).parent / "agy-host")
    cmd = [exe, "run", "--engine", "acp", "--format", fmt, "--agent", agent, "go"]
    wall, peak_kb, cpu = launch(ctx.python, cmd, env=ctx.isolated_env(home), cwd=home)
    return {"wall_s": wall, "peak_kb": peak_kb, "cpu_with_agent_s": cpu}


def cases(ctx: Ctx) -> list[Case]:
    return [
        Case(AGY_NULL, "ours", lambda: _agy(ctx, "null")),
        Case(SDK, "peer", lambda: _sdk(ctx)),
        Case(AGY_JSON, "ours", lambda: _agy(ctx, "json")),
        Case(ACPX, "peer", lambda: _acpx(ctx)),
        Case(FLOOR, "floor", lambda: _floor(ctx, "typed")),
        Case(AGY_CLI, "ours", lambda: _agy_cli(ctx, "json")),
        Case(AGY_CLI_TEXT, "ours", lambda: _agy_cli(ctx, "text")),
        Case(AGENT, "ref", lambda: _floor(ctx, "none")),
    ]


def report(ctx: Ctx, outcomes: list[Outcome]) -> BenchReport:
    def ours() -> float:
        return median_of(outcomes, AGY_NULL, "turn_s")

    def floor() -> float:
        return median_of(outcomes, FLOOR, "turn_s")

    columns = [
        seconds_col("turn_s", "turn (median)"),
        spread_col("turn_s"),
        ratio_col("turn_s", floor, "/ floor"),
        ratio_col("turn_s", ours, "/ agy-host"),
        seconds_col("cpu_s", "client CPU"),
        mb_col("growth_kb", "RSS growth"),
        mb_col("peak_kb", "peak RSS"),
        seconds_col("wall_s", "whole process"),
        Column(
            "chunks", lambda o: f"{o.median('chunks'):.0f}" if "chunks" in o.series and o.median("chunks") >= 0 else "-"
        ),
    ]
    n = ctx.sizes.flood
    rep = BenchReport(
        key="B1",
        title="stream flood",
        setup=f"{n:,} `agent_message_chunk` notifications of 60 characters (about 232 bytes per line), then "
        f"`end_turn`; {ctx.repeats} interleaved runs per client. 'turn' is `session/prompt` sent -> response "
        "received (agy-host: -> `run_turn` returned); '/ agy-host' is how many times agy-host's null-renderer "
        "turn a client needs.",
        table=markdown_table(outcomes, columns),
        raw=raw_outcomes(outcomes),
    )
    agy = ours()
    sdk = median_of(outcomes, SDK, "turn_s")
    acpx = median_of(outcomes, ACPX, "turn_s")
    fl = floor()
    growth = median_of(outcomes, AGY_NULL, "growth_kb")
    cli = [o for o in outcomes if o.case.name in (AGY_CLI, AGY_CLI_TEXT) and "peak_kb" in o.series]
    cli_peaks = [max(o.series["peak_kb"].values) for o in cli]
    rep.targets = [
        _ratio_target(">= 10x faster than the ACP Python SDK", sdk, agy, 10.0),
        _ratio_target(">= 5x faster than acpx", acpx, agy, 5.0),
        Target(
            "within 1.25x of the floor (issue 29; 1.5x before)",
            "-" if math.isnan(agy) or math.isnan(fl) else f"{agy / fl:.2f}x the floor",
            None if math.isnan(agy) or math.isnan(fl) else agy / fl <= 1.25,
        ),
        Target(
            "`agy-host run` peak RSS under 45 MB, whole process, largest of all runs (issue 29)",
            "-" if not cli_peaks else f"{max(cli_peaks) / 1024:.1f} MB",
            None if not cli_peaks else max(cli_peaks) < 45 * 1024,
        ),
        Target(
            "RSS growth under 10 MB over the turn, in process (the API returns the answer, one copy its size)",
            "-"
            if math.isnan(growth)
            else f"{growth / 1024:.1f} MB (the response alone is {n * 60 / 1e6:.1f} MB of text)",
            None if math.isnan(growth) else growth < 10 * 1024,
        ),
    ]
    agy_out = next((o for o in outcomes if o.case.name == AGY_NULL), None)
    if agy_out is not None and "stream_s" in agy_out.series:
        stream_ms = agy_out.median("stream_s") * 1000
        rep.notes.append(
            f"agy-host null renderer: streaming (prompt sent -> response received) {stream_ms:.0f} ms, "
            f"then {agy_out.median('tail_s') * 1000:.0f} ms from the response to `run_turn` returning "
            "(outcome, session binding written with fsync, render hooks such as transcripts)."
        )
    return rep


def _ratio_target(text: str, peer: float, ours: float, want: float) -> Target:
    if math.isnan(peer) or math.isnan(ours) or not ours:
        return Target(text, "-", None)
    r = peer / ours
    return Target(text, f"{r:.1f}x", r >= want)


def run(ctx: Ctx) -> BenchReport:
    log(f"B1 stream flood: {ctx.sizes.flood:,} chunks x {ctx.repeats} runs")
    outcomes = interleave(cases(ctx), ctx.repeats, log=log)
    return report(ctx, outcomes)


__all__ = ["cases", "report", "run", "run_cli"]
