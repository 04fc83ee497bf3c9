"""``python -m bench``: run the benchmarks side by side with the peers.

    python -m bench                     # everything, 5 interleaved runs each
    python -m bench --only B1,B2 -r 7   # some, more runs
    python -m bench --quick             # tiny sizes, 1 run: checks the harness, measures nothing
    python -m bench --markdown out.md --json out.json

The peers (ACP Python SDK, acpx) are installed into ``.cache/bench`` first
when missing (:mod:`bench.provision`); a peer that cannot be installed is
shown as skipped with the reason. Workspace sources are byte-compiled first
(as an installed wheel would be), so start-up timings do not include
compiling agy-host. The machine is described at the top of the report:
absolute times are only indicative, ratios are what to compare.
"""

from __future__ import annotations

import argparse
import compileall
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

from bench import b1_flood, b2_cli, b3_bridge, b4_scale, b5_stream_json, b6_harness, b7_signals, b8_warm, b9_history
from bench.common import REPO_ROOT
from bench.context import Ctx, Sizes
from bench.harness import BenchReport, log
from bench.provision import provision_all

BENCHMARKS: dict[str, Callable[[Ctx], BenchReport]] = {
    "B1": b1_flood.run,
    "B2": b2_cli.run,
    "B3": b3_bridge.run,
    "B4": b4_scale.run,
    "B5": b5_stream_json.run,
    "B6": b6_harness.run,
    "B7": b7_signals.run,
    "B8": b8_warm.run,
    "B9": b9_history.run,
}


def machine() -> str:
    """One paragraph about where the numbers come from."""
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            kb = int(next(line.split()[1] for line in f if line.startswith("MemTotal")))
            mem = f"{kb / 1024 / 1024:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    load = ""
    try:
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        pass
    node = ""
    try:
        node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        node = "none"
    return (
        f"{os.cpu_count()} cores ({cpu or platform.processor() or 'unknown CPU'}), {mem or '? GiB'} RAM, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}, Node {node or 'none'}; "
        f"load average at start {load or '?'}"
    )


def precompile() -> None:
    """Byte-compile the workspace and this interpreter's installed packages
    (``PYTHONDONTWRITEBYTECODE`` may be set, so nothing would be cached at
    import time and every start would compile; ``uv pip install``, which
    fills the nox session's venv, compiles nothing either, unlike pip and an
    installed wheel: msgspec, typer and trio were compiled at every start)."""
    roots = [REPO_ROOT / "core" / "src", *sorted((REPO_ROOT / "plugins").glob("*/src")), REPO_ROOT / "bench"]
    roots.append(Path(sysconfig.get_paths()["purelib"]))
    for root in roots:
        if root.is_dir():
            compileall.compile_dir(str(root), quiet=1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default="", help="comma-separated benchmark keys (B1..B9)")
    p.add_argument("-r", "--repeats", type=int, default=5, help="interleaved runs per client (default 5)")
    p.add_argument("--quick", action="store_true", help="tiny sizes and 1 run: a harness check, not a measurement")
    p.add_argument("--no-peers", action="store_true", help="do not install or run the peers")
    p.add_argument("--markdown", type=Path, help="write the report here as Markdown")
    p.add_argument("--json", type=Path, help="write every measured value here")
    args = p.parse_args(argv)
    keys = [k.strip().upper() for k in args.only.split(",") if k.strip()] or list(BENCHMARKS)
    unknown = [k for k in keys if k not in BENCHMARKS]
    if unknown:
        p.error(f"unknown benchmark(s) {unknown}; known: {', '.join(BENCHMARKS)}")
    ctx = Ctx(repeats=1 if args.quick else max(1, args.repeats), sizes=Sizes.quick() if args.quick else Sizes())
    precompile()
    if not args.no_peers:
        log("provisioning the peers into .cache/bench ...")
        ctx.peers = provision_all()
        for name, got in ctx.peers.items():
            log(f"  {name}: {getattr(got, 'version', None) or f'unavailable: {got}'}")
    started = dt.datetime.now(dt.UTC)
    reports: list[BenchReport] = []
    try:
        for key in keys:
            reports.append(BENCHMARKS[key](ctx))
    finally:
        ctx.cleanup()
    header = [
        f"agy-host benchmarks, {started:%Y-%m-%d %H:%M} UTC ({'quick check' if args.quick else f'{ctx.repeats} runs'})",
        "",
        f"Machine: {machine()}.",
        "",
    ]
    text = "\n".join(header) + "\n" + "\n".join(r.markdown() for r in reports)
    print(text)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(text, "utf-8")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "started": started.isoformat(),
            "machine": machine(),
            "repeats": ctx.repeats,
            "sizes": vars(ctx.sizes),
            "benchmarks": {
                r.key: {"skipped": r.skipped, "targets": [vars(t) for t in r.targets], "runs": r.raw} for r in reports
            },
        }
        args.json.write_text(json.dumps(data, indent=2, default=str) + "\n", "utf-8")
    failed = [r.key for r in reports if any(o.get("failed") for o in r.raw.values())]
    if failed:
        log(f"some clients FAILED in: {', '.join(failed)} (see the table)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
