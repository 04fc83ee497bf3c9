"""B6 harness engine: Google's own Antigravity harness, three ways, against
the kit's scripted model API (``agy_host.testing.models.api``).

* agy-host: ``agy-host run --engine harness PROMPT`` (the whole CLI process,
  text to /dev/null);
* Google's SDK: ``Agent(LocalAgentConfig())`` + ``chat`` + streaming the text
  (``bench/clients/antigravity_sdk.py``, in the SDK's own venv with all of
  its dependencies, its own copy of the same binary);
* floor: a bare loop on the same binary (``bench/clients/harness_floor.py``:
  bootstrap, one WebSocket, one user input, read to idle).

Two workloads: a one-shot turn (the model answers one short text) and a
flood (the model streams ``harness_flood`` text chunks). Each row is the
whole client process: wall time, and the peak RSS of the largest process of
its tree (``wait4``: the harness child, the same binary for all three, so a
client's own growth shows only where it outgrows the harness). Targets: agy-host at least 2x
faster than the SDK one-shot, and its overhead over the floor under 300 ms;
the flood within 1.3x of the floor.
"""

from __future__ import annotations

import math
import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, now
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
    mb_col,
    median_of,
    ratio_col,
    raw_outcomes,
    seconds_col,
    spread_col,
)

CLIENTS = Path(__file__).resolve().parent / "clients"
OURS = "agy-host run --engine harness"
SDK = "Google's SDK: Agent.chat, streamed"
FLOOR = "bare loop on the same binary"
#: Short chunks: the whole answer is the model's last step, and the harness refuses
#: one larger than its context limit (256k tokens).
TEXT = "tok "


def _binary() -> str:
    given = os.environ.get("ANTIGRAVITY_HARNESS_PATH", "").strip()
    path = Path(given) if given else REPO_ROOT / ".cache" / "harness" / "current" / "localharness"
    if not path.is_file():
        raise Skip(f"no harness binary at {path} (run `python -m agy_host_harness.install --dir .cache/harness`)")
    return str(path)


def _measure(cmd: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """Wall time and the peak RSS of the tree's largest process (``wait4``)."""
    with tempfile.TemporaryFile() as err:
        t0 = now()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = now() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            tail = err.read().decode("utf-8", "replace").strip().splitlines()[-5:]
            raise RuntimeError(f"{shlex.join(cmd[:4])}... exited {proc.returncode}: {' | '.join(tail)}")
    return {"wall_s": wall, "rss_mb": usage.ru_maxrss}  # KiB on Linux, as fmt_mb takes it


class _Workload:
    """One scripted model API for every client of a workload."""

    def __init__(self, ctx: Ctx, name: str, script: dict[str, Any]) -> None:
        from agy_host.testing.models.api import ModelApiProcess

        self.model = ModelApiProcess(ctx.scratch / f"model-{name}", script)

    def env(self, ctx: Ctx, home: Path, binary: str | None) -> dict[str, str]:
        env = ctx.isolated_env(home)
        env.update(GEMINI_API_KEY="bench", GOOGLE_GEMINI_BASE_URL=self.model.url)
        if binary:
            env["ANTIGRAVITY_HARNESS_PATH"] = binary
        return env


def cases(ctx: Ctx, workload: _Workload, tag: str) -> list[Case]:
    agy = str(Path(ctx.python).parent / "agy-host")

    def ours() -> dict[str, Any]:
        home = ctx.home("agy")
        return _measure([agy, "run", "--engine", "harness", "hi"], workload.env(ctx, home, _binary()), home)

    def sdk() -> dict[str, Any]:
        peer = ctx.peer("antigravity-sdk")
        home = ctx.home("sdk")
        env = workload.env(ctx, home, None)  # the SDK finds its own binary
        return _measure([str(peer.executable), str(CLIENTS / "antigravity_sdk.py"), "hi"], env, home)

    def floor() -> dict[str, Any]:
        home = ctx.home("floor")
        cmd = [ctx.python, str(CLIENTS / "harness_floor.py"), _binary(), workload.model.url, "hi"]
        return _measure(cmd, workload.env(ctx, home, None), home)

    return [
        Case(f"{OURS} ({tag})", "ours", ours),
        Case(f"{SDK} ({tag})", "peer", sdk),
        Case(f"{FLOOR} ({tag})", "floor", floor),
    ]


def _ratio(outcomes: list[Outcome], a: str, b: str) -> float:
    x, y = median_of(outcomes, a, "wall_s"), median_of(outcomes, b, "wall_s")
    return x / y if not (math.isnan(x) or math.isnan(y) or not y) else math.nan


def report(ctx: Ctx, outcomes: list[Outcome]) -> BenchReport:
    ours_one = f"{OURS} (one-shot)"
    columns = [
        seconds_col("wall_s", "wall (median)"),
        spread_col("wall_s"),
        mb_col("rss_mb", "peak RSS, largest process (the harness)"),
        ratio_col("wall_s", lambda: median_of(outcomes, ours_one, "wall_s"), "vs agy-host one-shot"),
    ]
    rep = BenchReport(
        key="B6",
        title="Harness engine",
        setup=f"Whole client processes against the scripted model API; one-shot = one short answer, flood = "
        f"{ctx.sizes.harness_flood} text chunks; {ctx.repeats} interleaved measurements. The harness binary is "
        "google-antigravity 0.1.22's for every client.",
        table=markdown_table(outcomes, columns),
        raw=raw_outcomes(outcomes),
    )
    speedup = _ratio(outcomes, f"{SDK} (one-shot)", ours_one)
    overhead = median_of(outcomes, ours_one, "wall_s") - median_of(outcomes, f"{FLOOR} (one-shot)", "wall_s")
    flood = _ratio(outcomes, f"{OURS} (flood)", f"{FLOOR} (flood)")
    rep.targets = [
        Target(
            "one-shot: agy-host at least 2x faster than the SDK",
            "-" if math.isnan(speedup) else f"{speedup:.2f}x",
            None if math.isnan(speedup) else speedup >= 2.0,
        ),
        Target(
            "one-shot: agy-host's overhead over the floor < 300 ms",
            "-" if math.isnan(overhead) else f"{overhead * 1000:.0f} ms",
            None if math.isnan(overhead) else overhead < 0.300,
        ),
        Target(
            "flood: within 1.3x of the floor",
            "-" if math.isnan(flood) else f"{flood:.2f}x",
            None if math.isnan(flood) else flood <= 1.3,
        ),
    ]
    return rep


def run(ctx: Ctx) -> BenchReport:
    log(f"B6 harness: one-shot and a {ctx.sizes.harness_flood}-chunk flood, x {ctx.repeats}")
    one = _Workload(ctx, "one-shot", {"turns": [[[{"text": "Hello from the scripted model."}]]]})
    flood = _Workload(ctx, "flood", {"turns": [[[{"flood": {"chunks": ctx.sizes.harness_flood, "text": TEXT}}]]]})
    try:
        all_cases: list[Case] = [*cases(ctx, one, "one-shot"), *cases(ctx, flood, "flood")]
        return report(ctx, interleave(all_cases, ctx.repeats, log=log))
    finally:
        one.model.close()
        flood.model.close()


__all__ = ["cases", "report", "run"]
