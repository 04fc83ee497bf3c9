"""B2 CLI latency: whole-process wall time of short commands.

* ``agy-host --version`` and ``acpx --version``;
* ``agy-host plugins`` and ``agy-host --help``;
* a one-shot turn against an agent that answers at once (the fake agent's
  ``echo`` scenario, the same command for both): ``agy-host run`` and
  ``acpx exec`` (default text output, stdout to /dev/null);
* the same one-shot with ``AGY_HOST_AHEAD=0``: the agent started by the
  engine after the imports instead of by the CLI before them;
* references: ``python -c pass`` (the interpreter's own start), and the bare
  Python client (``bench/clients/floor.py --oneshot``: spawn the agent,
  initialize, session/new, one prompt, exit), which is the least any Python
  host can spend on a one-shot turn with this agent.

Each client runs in a fresh HOME/XDG tree. One measurement is the median of
``cli_runs`` invocations in a row; the runner interleaves measurements. The
targets of issue 29 are ratios of rows measured in the same round (the
median of the round-by-round ratios), which a loaded machine disturbs far
less than absolute times: the one-shot turn against the bare client, and
``--help`` against ``python -c pass``. The modules a command imports are
counted too (once; they do not depend on the load).
"""

from __future__ import annotations

import math
import resource
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
    find,
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
HELP = "agy-host --help"
RUN = "agy-host run (one-shot turn)"
RUN_LATE = "agy-host run, agent not started ahead (AGY_HOST_AHEAD=0)"
ACPX_EXEC = "acpx exec (one-shot turn)"
PYTHON = "python -c pass"
BARE = "bare Python client, one-shot turn"


def _timed(make: Callable[[], tuple[list[str], dict[str, str] | None, Path | None]], runs: int) -> dict[str, Any]:
    walls = []
    cpus = []
    for _ in range(runs):
        cmd, env, cwd = make()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
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
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # The whole tree: the client and the agent it waited for.
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if proc.returncode != 0:
            tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-5:]
            raise RuntimeError(f"{shlex.join(cmd[:3])}... exited {proc.returncode}: {' | '.join(tail)}")
    return {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus)}


def cases(ctx: Ctx) -> list[Case]:
    agy = str(Path(ctx.python).parent / "agy-host")
    agent = shlex.join(fake_agent_command(ctx.python, "echo"))
    runs = ctx.sizes.cli_runs

    def ours(*args: str, **env: str) -> Callable[[], dict[str, Any]]:
        def make() -> tuple[list[str], dict[str, str] | None, Path | None]:
            home = ctx.home("agy")
            return [agy, *args], {**ctx.isolated_env(home), **env}, home

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
        Case(HELP, "ours", ours("--help")),
        Case(RUN, "ours", ours("run", "--engine", "acp", "--agent", agent, "hi")),
        Case(RUN_LATE, "ours", ours("run", "--engine", "acp", "--agent", agent, "hi", AGY_HOST_AHEAD="0")),
        Case(ACPX_EXEC, "peer", acpx("--approve-all", "--agent", agent, "exec", "hi")),
        Case(PYTHON, "ref", plain([ctx.python, "-c", "pass"])),
        Case(BARE, "ref", plain([ctx.python, str(CLIENTS / "floor.py"), "--oneshot", "--agent-python", ctx.python])),
    ]


def report(ctx: Ctx, outcomes: list[Outcome]) -> BenchReport:
    columns = [seconds_col("wall_s", "wall (median)"), spread_col("wall_s"), seconds_col("cpu_s", "CPU with the agent")]
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
        _within("one-shot turn within 2.2x the bare Python client", paired_ratio(outcomes, RUN, BARE), 2.2),
        _within("`agy-host --help` within 8x `python -c pass`", paired_ratio(outcomes, HELP, PYTHON), 8.0),
    ]
    if not math.isnan(run) and not math.isnan(acpx):
        rep.notes.append(f"acpx exec needs {acpx / run:.1f}x the wall time of agy-host run on the same agent.")
    cpu = paired_ratio(outcomes, RUN, BARE, "cpu_s")
    if not math.isnan(cpu):
        rep.notes.append(
            f"CPU (agy-host and its agent against the bare client and the same agent): {cpu:.2f}x; "
            "the steadier figure on a loaded machine."
        )
    late = paired_ratio(outcomes, RUN_LATE, RUN)
    if not math.isnan(late):
        rep.notes.append(
            f"With AGY_HOST_AHEAD=0 (the engine starts the agent after the imports) the one-shot takes "
            f"{late:.2f}x the time of the default, where the CLI starts it before them (agy_host.cli.agent_ahead)."
        )
    if not math.isnan(run) and not math.isnan(bare):
        rep.notes.append(
            f"agy-host run spends {(run - bare) * 1000:.0f} ms more than the bare Python client "
            "(the CLI, config, plugins, engine selection, trio, the session store)."
        )
    counts = {label: module_count(ctx, args) for label, args in MODULE_COUNTS.items()}
    if any(counts.values()):
        rep.notes.append(
            "Modules imported (load-independent): "
            + ", ".join(f"{label} {n}" for label, n in counts.items() if n)
            + " (`python -c pass` itself: "
            + str(module_count(ctx, None))
            + ")."
        )
    return rep


#: Commands whose imported modules B2 counts.
MODULE_COUNTS = {"`--help`": ["--help"], "`plugins`": ["plugins"], "one-shot `run`": ["run"]}

#: Counts the modules of a real ``agy-host`` process as it exits (its exit
#: handlers run before ``os._exit``, see agy_host.cli.exit_now).
_COUNT = (
    "import atexit, sys; atexit.register(lambda: print('MODULES', len(sys.modules), file=sys.stderr));"
    "sys.argv = ['agy-host', *sys.argv[1:]]; from agy_host.cli.main import main; raise SystemExit(main())"
)


def module_count(ctx: Ctx, args: list[str] | None) -> int:
    """How many modules ``agy-host ARGS`` (``run``: a one-shot turn on the
    echo agent) has imported when it exits; ``None``: ``python -c pass``."""
    home = ctx.home("count")
    if args is None:
        cmd = [ctx.python, "-c", "import sys; print('MODULES', len(sys.modules), file=sys.stderr)"]
    else:
        if args == ["run"]:
            agent = shlex.join(fake_agent_command(ctx.python, "echo"))
            args = ["run", "--engine", "acp", "--agent", agent, "hi"]
        cmd = [ctx.python, "-c", _COUNT, *args]
    proc = subprocess.run(cmd, env=ctx.isolated_env(home), cwd=home, capture_output=True, text=True, check=False)
    found = [line.split()[1] for line in proc.stderr.splitlines() if line.startswith("MODULES ")]
    return int(found[-1]) if found else 0


def paired_ratio(outcomes: list[Outcome], name: str, base: str, metric: str = "wall_s") -> float:
    """The median of ``name / base`` over the rounds both were measured in
    (the runner measures every row once per round, so a slow minute slows
    both sides of each ratio)."""
    ours, theirs = find(outcomes, name), find(outcomes, base)
    if ours is None or theirs is None or ours.skipped or ours.failed or theirs.skipped or theirs.failed:
        return math.nan
    a, b = ours.series.get(metric), theirs.series.get(metric)
    if a is None or b is None:
        return math.nan
    ratios = [x / y for x, y in zip(a.values, b.values, strict=False) if y > 0]
    return statistics.median(ratios) if ratios else math.nan


def _within(text: str, ratio: float, limit: float) -> Target:
    if math.isnan(ratio):
        return Target(text, "-", None)
    return Target(text, f"{ratio:.2f}x", ratio <= limit)


def _le(text: str, value: float, limit: float) -> Target:
    if math.isnan(value):
        return Target(text, "-", None)
    return Target(text, f"{value * 1000:.0f} ms", value <= limit)


def run(ctx: Ctx) -> BenchReport:
    log(f"B2 CLI latency: {ctx.sizes.cli_runs} invocations per measurement x {ctx.repeats}")
    return report(ctx, interleave(cases(ctx), ctx.repeats, log=log))


__all__ = ["cases", "report", "run"]
