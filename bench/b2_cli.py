"""B2 CLI latency: whole-process wall time of short commands.

* ``agy-host --version`` and ``acpx --version``;
* ``agy-host plugins``;
* a one-shot turn against an agent that answers at once (the fake agent's
  ``echo`` scenario, the same command for both): ``agy-host run`` and
  ``acpx exec`` (default text output, stdout to /dev/null);
* references: ``python -c pass`` (the interpreter's own start), and the bare
  Python client (``bench/clients/floor.py --oneshot``: spawn the agent,
  initialize, session/new, one prompt, exit), which is the least any Python
  host can spend on a one-shot turn with this agent.

Each client runs in a fresh HOME/XDG tree. One measurement is the median of
``cli_runs`` invocations in a row; the runner interleaves measurements.
"""

from __future__ import annotations

import math
import shlex
import statistics
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import fake_agent_command, now
from bench.context import Ctx
from bench.harness import (
    BenchReport,
    Case,
    Outcome,
    Target,
    interleave,
    log,
    markdown_table,
    median_of,
    raw_outcomes,
    seconds_col,
    spread_col,
)

CLIENTS = Path(__file__).resolve().parent / "clients"
VERSION = "agy-host --version"
ACPX_VERSION = "acpx --version"
PLUGINS = "agy-host plugins"
RUN = "agy-host run (one-shot turn)"
ACPX_EXEC = "acpx exec (one-shot turn)"
PYTHON = "python -c pass"
BARE = "bare Python client, one-shot turn"


def _timed(make: Callable[[], tuple[list[str], dict[str, str] | None, Path | None]], runs: int) -> dict[str, Any]:
    walls = []
    for _ in range(runs):
        cmd, env, cwd = make()
        t0 = now()
        proc = subprocess.run(
            cmd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            check=False,
        )
        walls.append(now() - t0)
        if proc.returncode != 0:
            tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-5:]
            raise RuntimeError(f"{shlex.join(cmd[:3])}... exited {proc.returncode}: {' | '.join(tail)}")
    return {"wall_s": statistics.median(walls)}


def cases(ctx: Ctx) -> list[Case]:
    agy = str(Path(ctx.python).parent / "agy-host")
    agent = shlex.join(fake_agent_command(ctx.python, "echo"))
    runs = ctx.sizes.cli_runs

    def ours(*args: str) -> Callable[[], dict[str, Any]]:
        def make() -> tuple[list[str], dict[str, str] | None, Path | None]:
            home = ctx.home("agy")
            return [agy, *args], ctx.isolated_env(home), home

        return lambda: _timed(make, runs)

    def acpx(*args: str) -> Callable[[], dict[str, Any]]:
        def make() -> tuple[list[str], dict[str, str] | None, Path | None]:
            peer = ctx.peer("acpx")
            home = ctx.home("acpx")
            return [ctx.node(), str(peer.executable), *args], ctx.isolated_env(home), home

        return lambda: _timed(make, runs)

    def plain(cmd: list[str]) -> Callable[[], dict[str, Any]]:
        return lambda: _timed(lambda: (cmd, None, None), runs)

    return [
        Case(VERSION, "ours", ours("--version")),
        Case(ACPX_VERSION, "peer", acpx("--version")),
        Case(PLUGINS, "ours", ours("plugins")),
        Case(RUN, "ours", ours("run", "--engine", "acp", "--agent", agent, "hi")),
        Case(ACPX_EXEC, "peer", acpx("--approve-all", "--agent", agent, "exec", "hi")),
        Case(PYTHON, "ref", plain([ctx.python, "-c", "pass"])),
        Case(BARE, "ref", plain([ctx.python, str(CLIENTS / "floor.py"), "--oneshot", "--agent-python", ctx.python])),
    ]


def report(ctx: Ctx, outcomes: list[Outcome]) -> BenchReport:
    columns = [seconds_col("wall_s", "wall (median)"), spread_col("wall_s")]
    rep = BenchReport(
        key="B2",
        title="CLI latency",
        setup=f"Whole-process wall time; each measurement is the median of {ctx.sizes.cli_runs} invocations, "
        f"{ctx.repeats} interleaved measurements per command. The agent is the fake ACP agent's `echo` scenario "
        "(a Python process that answers at once; its own start-up is in every one-shot row).",
        table=markdown_table(outcomes, columns),
        raw=raw_outcomes(outcomes),
    )
    version = median_of(outcomes, VERSION, "wall_s")
    run = median_of(outcomes, RUN, "wall_s")
    acpx = median_of(outcomes, ACPX_EXEC, "wall_s")
    bare = median_of(outcomes, BARE, "wall_s")
    rep.targets = [
        _le("`agy-host --version` <= 150 ms", version, 0.150),
        _le("one-shot turn <= 350 ms wall", run, 0.350),
    ]
    if not math.isnan(run) and not math.isnan(acpx):
        rep.notes.append(f"acpx exec needs {acpx / run:.1f}x the wall time of agy-host run on the same agent.")
    if not math.isnan(run) and not math.isnan(bare):
        rep.notes.append(
            f"agy-host run spends {(run - bare) * 1000:.0f} ms more than the bare Python client "
            "(the CLI, config, plugins, engine selection, trio, the session store)."
        )
    return rep


def _le(text: str, value: float, limit: float) -> Target:
    if math.isnan(value):
        return Target(text, "-", None)
    return Target(text, f"{value * 1000:.0f} ms", value <= limit)


def run(ctx: Ctx) -> BenchReport:
    log(f"B2 CLI latency: {ctx.sizes.cli_runs} invocations per measurement x {ctx.repeats}")
    return report(ctx, interleave(cases(ctx), ctx.repeats, log=log))


__all__ = ["cases", "report", "run"]
