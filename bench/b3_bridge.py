"""B3 bridge round trip: agent ``tools/call`` -> host tool (no-op) -> result back at the agent.

The whole path a real agent uses: ``agy-host run`` (in-process, with a
plugin that registers the no-op host tool ``bench_noop``) starts the MCP
bridge on 127.0.0.1 and hands its URL and token to the agent in
``session/new``; the agent (``bench/clients/bridge_agent.py``) calls the tool
N times in a row on one keep-alive connection, timing each call; every call
parks the turn, the host runs the tool and delivers the result, and the
bridge answers. p50 and p99 are over the N calls of one run.

Reference row: the same client against the standard library's
``http.server`` answering every POST at once (what loopback HTTP costs here).

Needs the ``agy_host_bridge_mcp`` plugin; skipped with the reason when it is
not importable or not complete yet.

    python -m bench.b3_bridge worker --calls 1000     # one measurement (BENCH-RESULT line)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.common import emit_result, percentile
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
    ms_col,
    raw_outcomes,
    run_json_subprocess,
)

CLIENTS = Path(__file__).resolve().parent / "clients"
AGY = "agy-host bridge (MCP over loopback, turn parked)"
PLAIN = "reference: stdlib http.server, same client"


def _summary(times: list[float]) -> dict[str, Any]:
    ms = [t * 1000 for t in times]
    return {"p50_ms": percentile(ms, 50), "p99_ms": percentile(ms, 99), "mean_ms": sum(ms) / len(ms), "calls": len(ms)}


def bridge_available() -> str:
    """Empty when the bridge plugin can be used; else why not."""
    try:
        import agy_host_bridge_mcp
        import agy_host_bridge_mcp.service  # noqa: F401
    except ImportError as exc:
        return f"the MCP bridge plugin (agy_host_bridge_mcp) is not importable: {exc}"
    return ""


def _noop_tools_plugin() -> Any:
    """A plugin registering the no-op host tool (built lazily: it imports agy_host)."""
    from agy_host import hookimpl
    from agy_host.contract.tools import HostTool, ToolResult

    async def noop(args: dict[str, Any]) -> ToolResult:
        return ToolResult(text="ok")

    class NoopTools:
        name = "bench-noop-tools"

        @hookimpl
        def agy_host_register_tools(self, register: Any) -> None:
            register(
                HostTool(
                    name="bench_noop",
                    description="does nothing (benchmark)",
                    input_schema={"type": "object", "properties": {}},
                    call=noop,
                )
            )

    return NoopTools()


def worker(calls: int) -> dict[str, Any]:
    from agy_host.cli.main import main as cli

    with tempfile.TemporaryDirectory(prefix="agy-bench-bridge-") as tmp:
        out = Path(tmp) / "times.json"
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGY_")}
        env.update(
            HOME=tmp,
            XDG_CONFIG_HOME=f"{tmp}/config",
            XDG_STATE_HOME=f"{tmp}/state",
            XDG_CACHE_HOME=f"{tmp}/cache",
            BENCH_BRIDGE_OUT=str(out),
            BENCH_BRIDGE_CALLS=str(calls),
            BENCH_BRIDGE_TOOL="bench_noop",
        )
        os.environ.update({k: env[k] for k in ("BENCH_BRIDGE_OUT", "BENCH_BRIDGE_CALLS", "BENCH_BRIDGE_TOOL")})
        agent = f"{sys.executable} {CLIENTS / 'bridge_agent.py'}"
        code = cli(
            ["run", "--engine", "acp", "--format", "quiet", "--agent", agent, "go"],
            extra_plugins=[_noop_tools_plugin()],
            env=env,
        )
        if not out.exists():
            raise SystemExit(f"agy-host run exited {code} and the agent wrote no timings (the bridge did not reach it)")
        data = json.loads(out.read_text("utf-8"))
        if "error" in data:
            raise SystemExit(f"the agent's calls failed: {data['error']}")
        return _summary(data["times"])


class _Ok(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "ok"}]}}).encode()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        return None


def plain_reference(calls: int) -> dict[str, Any]:
    sys.path.insert(0, str(CLIENTS))
    from bridge_agent import McpHttp, call_loop  # type: ignore[import-not-found]

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = McpHttp(f"http://127.0.0.1:{server.server_address[1]}/mcp", {})
        return _summary(call_loop(client, "bench_noop", calls))
    finally:
        server.shutdown()


def cases(ctx: Ctx) -> list[Case]:
    from bench.b1_flood import _env_with_repo

    n = ctx.sizes.bridge_calls

    def agy() -> dict[str, Any]:
        why = bridge_available()
        if why:
            raise Skip(why)
        cmd = [ctx.python, "-m", "bench.b3_bridge", "worker", "--calls", str(n)]
        try:
            return run_json_subprocess(cmd, env=_env_with_repo(), timeout=600)
        except RuntimeError as exc:
            raise Skip(
                f"the bridge plugin is importable but the round trip did not work yet: {str(exc).splitlines()[-1]}"
            ) from exc

    def plain() -> dict[str, Any]:
        cmd = [ctx.python, "-m", "bench.b3_bridge", "reference", "--calls", str(n)]
        return run_json_subprocess(cmd, env=_env_with_repo())

    return [Case(AGY, "ours", agy), Case(PLAIN, "ref", plain)]


def report(ctx: Ctx, outcomes: list[Outcome]) -> BenchReport:
    rep = BenchReport(
        key="B3",
        title="bridge round trip",
        setup=f"{ctx.sizes.bridge_calls:,} sequential `tools/call` of a no-op host tool per run, one keep-alive "
        f"HTTP connection, {ctx.repeats} interleaved runs; p50/p99 are per run, the table shows their medians.",
        table=markdown_table(outcomes, [ms_col("p50_ms", "p50"), ms_col("p99_ms", "p99"), ms_col("mean_ms", "mean")]),
        raw=raw_outcomes(outcomes),
    )
    p50 = median_of(outcomes, AGY, "p50_ms")
    rep.targets = [
        Target(
            "p50 <= 3 ms on loopback",
            "-" if math.isnan(p50) else f"{p50:.2f} ms",
            None if math.isnan(p50) else p50 <= 3.0,
        )
    ]
    agy = next((o for o in outcomes if o.case.name == AGY), None)
    if agy is not None and agy.skipped:
        rep.notes.append(f"agy-host row skipped: {agy.skipped}")
    return rep


def run(ctx: Ctx) -> BenchReport:
    log(f"B3 bridge round trip: {ctx.sizes.bridge_calls} calls x {ctx.repeats} runs")
    return report(ctx, interleave(cases(ctx), ctx.repeats, log=log))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.b3_bridge")
    p.add_argument("what", choices=["worker", "reference"])
    p.add_argument("--calls", type=int, default=1000)
    args = p.parse_args(argv)
    emit_result(worker(args.calls) if args.what == "worker" else plain_reference(args.calls))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["bridge_available", "cases", "report", "run"]
