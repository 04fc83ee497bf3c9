"""B8 warm agents (issue 25): a named session's second command, warm and cold.

Whole ``agy-host run --session S`` processes, each client in a fresh HOME:

* the second turn on an instant agent (the fake ACP agent's ``echo``): warm
  through the thin client (the default), warm through the full CLI
  (``AGY_HOST_THIN=0``), and cold (``--keep-alive 0``: the agent is spawned,
  initialized and asked to load the conversation every time). One
  measurement is the median of ``cli_runs`` second commands after a first,
  untimed one that starts the agent (and, warm, the keeper);
* a 200,000-chunk flood through a warm agent (``--format json``, stdout to a
  pipe the runner reads and discards), thin client and full CLI, next to
  B1's floor client (pipe + msgspec decode per line) and B1's in-process
  API with the null renderer (the same engine path without the keeper's
  hop). The turn is timed from outside, from the ``turn_start`` line to the
  ``turn_end`` line on stdout; the keeper's CPU time over the turn is read
  from ``/proc``;
* the real Gemini CLI (``gemini --acp`` 0.61.0, provisioned for the interop
  suite into ``.cache/interop``) against the kit's scripted model API: the
  second command, warm and cold. Skipped when it is not provisioned or
  ``node`` is missing.

Each measurement ends the keeper it started (``sessions stop --all``, then
SIGTERM) and waits until it is gone.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import b1_flood
from bench.common import REPO_ROOT, cpu_seconds, fake_agent_command, flood_agent_command, now
from bench.context import Ctx
from bench.harness import (
    BenchReport,
    Case,
    Outcome,
    Skip,
    Target,
    interleave,
    log,
    markdown_table,
    median_of,
    ratio_col,
    raw_outcomes,
    seconds_col,
    spread_col,
)

WARM_THIN = "second turn, warm: thin client (default)"
WARM_FULL = "second turn, warm: full CLI (AGY_HOST_THIN=0)"
COLD = "second turn, cold (--keep-alive 0)"
FLOOD_THIN = "flood, warm: thin client"
FLOOD_FULL = "flood, warm: full CLI (AGY_HOST_THIN=0)"
FLOOD_API = b1_flood.AGY_NULL + " (no keeper)"
FLOOR = b1_flood.FLOOR
GEMINI_WARM = "Gemini CLI, second command, warm"
GEMINI_COLD = "Gemini CLI, second command, cold (--keep-alive 0)"
GEMINI_VERSION = "0.61.0"
GEMINI_MODEL = "gemini-2.5-pro"  # an explicit model: the CLI's router would ask a classifier first


class _Home:
    """One client's HOME with warm agents on (or off), its commands, and its keeper's end."""

    def __init__(self, ctx: Ctx, name: str, *, warm: bool, **env: str) -> None:
        self.dir = ctx.home(name)
        self.cwd = self.dir / "project"
        self.cwd.mkdir()
        self.exe = str(Path(ctx.python).parent / "agy-host")
        self.env = ctx.isolated_env(self.dir)
        self.env.update(AGY_HOST_ENGINE="acp", AGY_HOST_KEEP_ALIVE_MINUTES="5" if warm else "0", **env)

    def run(self, *args: str, timeout: float = 120, **env: str) -> float:
        """One command, its stdout discarded; its wall time."""
        t0 = now()
        proc = subprocess.run(
            [self.exe, *args],
            env={**self.env, **env},
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=timeout,
            check=False,
        )
        wall = now() - t0
        if proc.returncode != 0:
            tail = " | ".join(proc.stderr.decode("utf-8", "replace").strip().splitlines()[-5:])
            raise RuntimeError(f"agy-host {shlex.join(args[:2])}... exited {proc.returncode}: {tail}")
        return wall

    def keeper_pid(self) -> int | None:
        proc = subprocess.run(
            [self.exe, "sessions", "status", "--format", "json"],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        keeper = json.loads(proc.stdout or "{}").get("keeper") if proc.returncode == 0 else None
        return int(keeper["pid"]) if keeper else None

    def close(self) -> None:
        """End the keeper (and its warm agents) and wait until it is gone."""
        pid = self.keeper_pid()
        if pid is None:
            return
        stop = [self.exe, "sessions", "stop", "--all"]
        subprocess.run(stop, env=self.env, capture_output=True, timeout=60, check=False)
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
            time.sleep(0.05)


def _second_turns(ctx: Ctx, agent: list[str], *, warm: bool, runs: int, **env: str) -> dict[str, Any]:
    """The median wall time of ``runs`` second commands on one session."""
    home = _Home(ctx, "warm" if warm else "cold", warm=warm)
    args = ["run", "--agent", shlex.join(agent), "--session", "s"]
    try:
        home.run(*args, "first")
        walls = sorted(home.run(*args, "hi", **env) for _ in range(runs))
    finally:
        home.close()
    return {"wall_s": walls[len(walls) // 2]}


def _flood(ctx: Ctx, **env: str) -> dict[str, Any]:
    """A warm flood turn, timed on stdout from ``turn_start`` to ``turn_end``."""
    home = _Home(ctx, "flood", warm=True)
    agent = shlex.join(flood_agent_command(ctx.python, ctx.sizes.flood))
    args = ["run", "--agent", agent, "--session", "f", "--format", "json"]
    try:
        home.run(*args, "first")
        keeper = home.keeper_pid()
        if keeper is None:
            raise RuntimeError("no keeper after the first command")
        before = cpu_seconds(keeper)
        out = b1_flood.run_cli(
            [home.exe, *args, "go"],
            env={**home.env, **env},
            cwd=home.cwd,
            prompt_marker=b'"turn_start"',
            done_marker=b'"turn_end"',
        )
        out["keeper_cpu_s"] = cpu_seconds(keeper) - before
        out.pop("chunks", None)  # B1's marker counts ACP frames; this stdout carries host events
    finally:
        home.close()
    return out


# ---------------------------------------------------------------------------
# the Gemini CLI
# ---------------------------------------------------------------------------


def _gemini_script() -> Path:
    root = REPO_ROOT / ".cache" / "interop" / f"gemini-cli-{GEMINI_VERSION}"
    script = root / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"
    if not script.is_file():
        raise Skip(f"the Gemini CLI {GEMINI_VERSION} is not provisioned at {root} (run the interop suite once)")
    return script


def _gemini_agent(node: str, script: Path, home: Path) -> str:
    """``gemini --acp`` with a HOME of its own set for API-key sign-in (as the interop suite launches it)."""
    settings = home / "gemini-home" / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}), "utf-8")
    return shlex.join(["env", f"HOME={settings.parent.parent}", node, str(script), "--acp", "--model", GEMINI_MODEL])


def _gemini(ctx: Ctx, model_url: Callable[[], str], *, warm: bool) -> dict[str, Any]:
    script = _gemini_script()
    node = ctx.node()
    home = _Home(ctx, "gemini", warm=warm, GEMINI_API_KEY="bench", GOOGLE_GEMINI_BASE_URL=model_url())
    args = ["run", "--agent", _gemini_agent(node, script, home.dir), "--session", "g"]
    try:
        home.run(*args, "first", timeout=300)
        wall = home.run(*args, "second", timeout=300)
    finally:
        home.close()
    return {"wall_s": wall}


class _Model:
    """One scripted model API for the Gemini rows, started on first use."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.api: Any = None

    def url(self) -> str:
        if self.api is None:
            from agy_host.testing.models.api import ModelApiProcess

            script = {"turns": [[[{"text": "Hello from the scripted model."}]]]}
            self.api = ModelApiProcess(self.ctx.scratch / "gemini-model", script)
        return str(self.api.url)

    def close(self) -> None:
        if self.api is not None:
            self.api.close()


# ---------------------------------------------------------------------------
# the benchmark
# ---------------------------------------------------------------------------


def cases(ctx: Ctx, model: _Model) -> list[Case]:
    echo = fake_agent_command(ctx.python, "echo")
    runs = ctx.sizes.cli_runs
    return [
        Case(WARM_THIN, "ours", lambda: _second_turns(ctx, echo, warm=True, runs=runs)),
        Case(WARM_FULL, "ours", lambda: _second_turns(ctx, echo, warm=True, runs=runs, AGY_HOST_THIN="0")),
        Case(COLD, "ours", lambda: _second_turns(ctx, echo, warm=False, runs=runs)),
        Case(FLOOD_THIN, "ours", lambda: _flood(ctx)),
        Case(FLOOD_FULL, "ours", lambda: _flood(ctx, AGY_HOST_THIN="0")),
        Case(FLOOD_API, "ref", lambda: b1_flood._agy(ctx, "null")),
        Case(FLOOR, "floor", lambda: b1_flood._floor(ctx, "typed")),
        Case(GEMINI_WARM, "ours", lambda: _gemini(ctx, model.url, warm=True)),
        Case(GEMINI_COLD, "ours", lambda: _gemini(ctx, model.url, warm=False)),
    ]


def _le(text: str, value: float, limit: float, shown: str) -> Target:
    if math.isnan(value):
        return Target(text, "-", None)
    return Target(text, shown, value <= limit)


def report(ctx: Ctx, outcomes: list[Outcome]) -> BenchReport:
    def floor() -> float:
        return median_of(outcomes, FLOOR, "turn_s")

    columns = [
        seconds_col("wall_s", "whole process (median)"),
        spread_col("wall_s"),
        seconds_col("turn_s", "flood turn"),
        ratio_col("turn_s", floor, "turn / floor"),
        seconds_col("cpu_s", "client CPU (turn)"),
        seconds_col("keeper_cpu_s", "keeper CPU (turn)"),
    ]
    rep = BenchReport(
        key="B8",
        title="warm agents",
        setup=f"Whole `agy-host run --session S` processes, each client in a fresh HOME; {ctx.repeats} interleaved "
        f"measurements. Second turn: the median of {ctx.sizes.cli_runs} second commands on the fake ACP agent's "
        f"`echo` (it answers at once). Flood: {ctx.sizes.flood:,} chunks of 60 characters through a warm agent, "
        "`--format json` to a pipe, timed from the `turn_start` line to the `turn_end` line; the floor and the "
        "in-process API rows are B1's. Gemini CLI 0.61.0 against the scripted model API: the second command.",
        table=markdown_table(outcomes, columns),
        raw=raw_outcomes(outcomes),
    )
    thin = median_of(outcomes, WARM_THIN, "wall_s")
    full = median_of(outcomes, WARM_FULL, "wall_s")
    cold = median_of(outcomes, COLD, "wall_s")
    flood = median_of(outcomes, FLOOD_THIN, "turn_s")
    ratio = flood / floor() if not (math.isnan(flood) or math.isnan(floor())) else math.nan
    rep.targets = [
        _le("warm second turn <= 250 ms wall", thin, 0.250, f"{thin * 1000:.0f} ms"),
        _le("flood through a warm agent within 1.3x of the floor", ratio, 1.3, f"{ratio:.2f}x the floor"),
    ]
    if not math.isnan(thin) and not math.isnan(full):
        rep.notes.append(f"The thin client saves {(full - thin) * 1000:.0f} ms of the full CLI's warm turn.")
    if not math.isnan(thin) and not math.isnan(cold):
        rep.notes.append(f"Cold, the second turn needs {cold / thin:.1f}x the warm one's wall time.")
    api = median_of(outcomes, FLOOD_API, "turn_s")
    if not math.isnan(api) and not math.isnan(flood):
        rep.notes.append(
            f"The keeper's hop: the warm flood turn is {flood / api:.2f}x the in-process API's "
            "(the same engine path, no keeper)."
        )
    g_warm, g_cold = median_of(outcomes, GEMINI_WARM, "wall_s"), median_of(outcomes, GEMINI_COLD, "wall_s")
    if not math.isnan(g_warm) and not math.isnan(g_cold):
        rep.notes.append(f"Gemini CLI: the second command warm takes {g_cold / g_warm:.1f}x less wall time than cold.")
    return rep


def run(ctx: Ctx) -> BenchReport:
    log(
        f"B8 warm agents: second turns ({ctx.sizes.cli_runs} per measurement), a {ctx.sizes.flood:,}-chunk flood, "
        f"the Gemini CLI; x {ctx.repeats}"
    )
    if shutil.which("node") is None:
        log("  (no node: the Gemini CLI rows are skipped)")
    model = _Model(ctx)
    try:
        return report(ctx, interleave(cases(ctx, model), ctx.repeats, log=log))
    finally:
        model.close()


__all__ = ["cases", "report", "run"]
