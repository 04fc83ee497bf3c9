"""In-process agy-host measurements, one per subprocess (peak RSS is its own).

agy-host's full path is what ``agy-host run`` builds: a :class:`~agy_host.runtime.host.Host`
(config, plugins, the ACP engine selected by name) and the
:class:`~agy_host.runtime.session.SessionRuntime` that ``run`` uses, whose sink is
the renderer. ``scale`` drives the engine SDK one level down (many turn layers
on one driver), which a Session, one turn at a time, does not do. The state
and config folders point into a temporary directory.

    python -m bench.agy_worker flood --count 200000 --renderer null|json
    python -m bench.agy_worker scale --count 5000 --sessions 64

``flood``: a warm turn (spawn, initialize, session/new, one round trip), then
the measured turn, timed from ``run_turn`` until it returned (the prompt is
sent, every chunk is mapped to events and rendered, the outcome is mapped and
the session binding stored). ``scale``: N host sessions on one driver (one
ACP connection), one flood turn each, all started at once.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

import trio

from agy_host.contract.events import HostEvent
from agy_host.contract.prompt import TextBlock
from agy_host.runtime.host import Host
from agy_host.runtime.session import SessionRuntime, say_nothing
from agy_host.runtime.turn_layer import TurnLayer
from bench.common import FLOOD_TEXT, MemoryWindow, emit_result, flood_agent_command, now, scale_agent_command


class NullRenderer:
    """Receives every event and does nothing with it."""

    def __init__(self) -> None:
        self.events = 0

    def handle(self, event: HostEvent) -> None:
        self.events += 1

    def close(self) -> None:
        return None


class PromptClock:
    """Instrumentation only: when ``session/prompt`` was sent and when its
    response arrived, so the turn's own bookkeeping after the response (the
    session binding, transcripts) can be told apart from streaming."""

    def __init__(self) -> None:
        self.sent: list[float] = []
        self.answered: list[float] = []

    def install(self) -> None:
        from agy_host_acp.connection import AcpConnection

        original = AcpConnection.prompt
        clock = self

        async def prompt(conn: AcpConnection, session_id: str, blocks: list[dict[str, Any]]) -> Any:
            clock.sent.append(now())
            try:
                return await original(conn, session_id, blocks)
            finally:
                clock.answered.append(now())

        AcpConnection.prompt = prompt  # type: ignore[method-assign,assignment]


def _host(tmp: Path, agent: list[str]) -> Host:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGY_")}
    env.update(
        XDG_CONFIG_HOME=str(tmp / "config"),
        XDG_STATE_HOME=str(tmp / "state"),
        XDG_CACHE_HOME=str(tmp / "cache"),
        AGY_HOST_ENGINE="acp",
    )
    return Host(env=env, agent=shlex.join(agent), warn=lambda m: print(f"warning: {m}", file=sys.stderr))


def _renderer(kind: str, devnull: IO[str]) -> Any:
    if kind == "null":
        return NullRenderer()
    from agy_host.builtins.renderers import JsonRenderer
    from agy_host.contract.rendering import RenderOptions

    return JsonRenderer(RenderOptions(stream=devnull))


def _layer(host: Host, engine: Any, driver: Any, sink: Any) -> TurnLayer:
    return TurnLayer(
        engine=engine,
        driver=driver,
        store=host.store,
        plugins=host.plugins,
        config=host.config,
        sink=sink,
        warn=host.warn,
    )


def flood(count: int, renderer_kind: str, agent_python: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="agy-bench-") as tmp_name, open(os.devnull, "w") as devnull:
        tmp = Path(tmp_name)
        host = _host(tmp, flood_agent_command(agent_python, count))
        renderer = _renderer(renderer_kind, devnull)
        clock = PromptClock()
        clock.install()
        out: dict[str, Any] = {}

        async def run() -> None:
            async with SessionRuntime.open(host, cwd=tmp_name, sink=renderer.handle, say=say_nothing) as runtime:
                warm = await runtime.turn("bench", [TextBlock(text="warm")], cwd=tmp_name)
                if warm is None or warm.exit_code != 0:
                    raise SystemExit(f"warm turn failed: {warm.error if warm else 'left behind'}")
                mem = MemoryWindow()
                mem.start()
                t0 = now()
                result = await runtime.turn("bench", [TextBlock(text="go")], cwd=tmp_name)
                t1 = now()
                mem.stop()
                if result is None or result.exit_code != 0:
                    raise SystemExit(f"flood turn failed: {result.error if result else 'left behind'}")
                out.update(
                    turn_s=t1 - t0,
                    #: session/prompt sent -> its response received (streaming only)
                    stream_s=clock.answered[-1] - clock.sent[-1],
                    #: the response received -> run_turn returned (outcome, binding, transcript)
                    tail_s=t1 - clock.answered[-1],
                    chunks=len(result.response) // len(FLOOD_TEXT),
                    chars=len(result.response),
                    **mem.as_dict(),
                )

        trio.run(run)
        renderer.close()
        return out


def scale(count: int, sessions: int, agent_python: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="agy-bench-") as tmp_name:
        tmp = Path(tmp_name)
        host = _host(tmp, scale_agent_command(agent_python, count, sessions))
        engine = host.load_engine()
        out: dict[str, Any] = {}

        async def run() -> None:
            async with engine.open_driver() as driver:
                # One TurnLayer per host session (a layer runs one turn at a
                # time); all share the driver, so all share one ACP connection.
                layers = [_layer(host, engine, driver, NullRenderer().handle) for _ in range(sessions)]
                for i, layer in enumerate(layers):  # warm: connection, session/new, one round trip each
                    warm = await layer.run_turn(f"s{i}", [TextBlock(text="warm")], cwd=tmp_name)
                    if warm.exit_code != 0:
                        raise SystemExit(f"warm turn of s{i} failed: {warm.error}")
                mem = MemoryWindow()
                mem.start()
                finish: list[float] = []
                chars = 0
                t0 = now()

                async def one(i: int, layer: TurnLayer) -> None:
                    nonlocal chars
                    result = await layer.run_turn(f"s{i}", [TextBlock(text="go")], cwd=tmp_name)
                    finish.append(now() - t0)
                    if result.exit_code != 0:
                        raise SystemExit(f"session s{i} failed: {result.error}")
                    chars += len(result.response)

                async with trio.open_nursery() as nursery:
                    for i, layer in enumerate(layers):
                        nursery.start_soon(one, i, layer)
                total = now() - t0
                mem.stop()
                snap = driver.snapshot()
                out.update(
                    total_s=total,
                    finish_s=sorted(finish),
                    chunks=chars // len(FLOOD_TEXT),
                    spawns=snap.stats.get("spawns", 0),
                    **mem.as_dict(),
                )

        trio.run(run)
        return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.agy_worker")
    sub = p.add_subparsers(dest="what", required=True)
    f = sub.add_parser("flood")
    f.add_argument("--count", type=int, default=200_000)
    f.add_argument("--renderer", choices=["null", "json"], default="null")
    f.add_argument("--agent-python", default=sys.executable)
    s = sub.add_parser("scale")
    s.add_argument("--count", type=int, default=5_000)
    s.add_argument("--sessions", type=int, default=64)
    s.add_argument("--agent-python", default=sys.executable)
    args = p.parse_args(argv)
    if args.what == "flood":
        emit_result(flood(args.count, args.renderer, args.agent_python))
    else:
        emit_result(scale(args.count, args.sessions, args.agent_python))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
