"""B7 time to exit: from a signal to the end of ``agy-host run``.

The agent sleeps inside its prompt and ignores SIGTERM (the ACP one also
ignores stdin EOF), so agy-host must kill its process group: what the user
waits for after Ctrl-C, or ``timeout``/systemd after SIGTERM, is the abort,
the binding being stored, the group kill and the teardown. Rows:

* Ctrl-C and SIGTERM on the ACP engine (the agent honours ``session/cancel``
  at once; its exit takes the stdin-EOF grace and the SIGTERM grace);
* Ctrl-C and SIGTERM on the stream-json engine (the fake ``agy``; an abort
  kills the group: the SIGTERM grace);
* a second Ctrl-C to an ACP agent that ignores ``session/cancel`` (the first
  one would give it the cancel grace, 2 s by default).

Each process runs in a fresh HOME/XDG tree; the time is measured from the
signal to the process's exit, once the agent has its prompt. Target: 1 s.
"""

from __future__ import annotations

import json
import math
import shlex
import signal
import subprocess
import time
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

ACP_INT = "Ctrl-C, ACP agent ignoring SIGTERM"
ACP_TERM = "SIGTERM, ACP agent ignoring SIGTERM"
SJ_INT = "Ctrl-C, stream-json agy ignoring SIGTERM"
SJ_TERM = "SIGTERM, stream-json agy ignoring SIGTERM"
ACP_TWICE = "second Ctrl-C, ACP agent ignoring cancel"
TARGET_S = 1.0
HANG = {"prompt": [{"chunk": "T0"}, {"hang": True}]}


def _wait_for(check: Callable[[], bool], proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not check():
        if proc.poll() is not None or time.monotonic() > deadline:
            _, err = proc.communicate(timeout=10)
            raise RuntimeError(f"agy-host exited {proc.returncode} before the agent got its prompt: {err[-300:]!r}")
        time.sleep(0.02)


def _time_to_exit(ctx: Ctx, engine: str, signals: list[signal.Signals], *, cancel: str = "graceful") -> dict[str, Any]:
    home = ctx.home("b7")
    env = ctx.isolated_env(home)
    log_path = home / "agent.log"
    if engine == "acp":
        scenario = home / "hang.json"
        scenario.write_text(json.dumps(HANG))
        knobs = {"cancel": cancel, "sigterm": "ignore", "stdin_eof": "ignore"}
        agent = [*fake_agent_command(ctx.python, str(scenario), settings=knobs), "--log", str(log_path)]
        args = ["--engine", "acp", "--agent", shlex.join(agent)]

        def started() -> bool:
            return log_path.exists() and "session/prompt" in log_path.read_text("utf-8", "replace")

    else:
        from agy_host.testing.agy_cli.agent import make_fake_agy

        fake = make_fake_agy(home / "agy", {"turns": [[{"say": ["T0"]}, {"hang": True}]], "sigterm": "ignore"})
        env["AGY_BIN"] = str(fake.bin)
        args = ["--engine", "stream-json"]

        def started() -> bool:
            return bool(fake.received())

    agy = str(Path(ctx.python).parent / "agy-host")
    proc = subprocess.Popen(
        [agy, "run", *args, "hi"],
        env=env,
        cwd=home,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _wait_for(started, proc)
    t0 = now()
    for i, sig in enumerate(signals):
        if i:
            time.sleep(0.3)  # each signal read on its own
        proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    wall = now() - t0 - 0.3 * (len(signals) - 1)
    expected = 128 + int(signals[-1]) if signals[-1] != signal.SIGINT else 130
    if proc.returncode != expected:
        raise RuntimeError(f"exit {proc.returncode}, expected {expected}: {err.decode()[-300:]}")
    return {"exit_s": wall}


def cases(ctx: Ctx) -> list[Case]:
    def case(engine: str, signals: list[signal.Signals], **kw: str) -> Callable[[], dict[str, Any]]:
        return lambda: _time_to_exit(ctx, engine, signals, **kw)

    return [
        Case(ACP_INT, "ours", case("acp", [signal.SIGINT])),
        Case(ACP_TERM, "ours", case("acp", [signal.SIGTERM])),
        Case(SJ_INT, "ours", case("stream-json", [signal.SIGINT])),
        Case(SJ_TERM, "ours", case("stream-json", [signal.SIGTERM])),
        Case(ACP_TWICE, "ours", case("acp", [signal.SIGINT, signal.SIGINT], cancel="ignore")),
    ]


def report(ctx: Ctx, outcomes: list[Outcome]) -> BenchReport:
    columns = [seconds_col("exit_s", "signal to exit (median)"), spread_col("exit_s")]
    rep = BenchReport(
        key="B7",
        title="Time to exit after a signal",
        setup=f"`agy-host run` on an agent that sleeps in its prompt and ignores SIGTERM; {ctx.repeats} "
        "interleaved runs per row, each in a fresh HOME. Measured from the (last) signal to the process's exit.",
        table=markdown_table(outcomes, columns),
        raw=raw_outcomes(outcomes),
    )
    for name in (ACP_INT, ACP_TERM, SJ_INT, SJ_TERM, ACP_TWICE):
        value = median_of(outcomes, name, "exit_s")
        measured = "-" if math.isnan(value) else f"{value * 1000:.0f} ms"
        rep.targets.append(Target(f"{name}: exit <= 1 s", measured, None if math.isnan(value) else value <= TARGET_S))
    return rep


def run(ctx: Ctx) -> BenchReport:
    log(f"B7 time to exit after a signal: {ctx.repeats} runs per row")
    return report(ctx, interleave(cases(ctx), ctx.repeats, log=log))


__all__ = ["cases", "report", "run"]
