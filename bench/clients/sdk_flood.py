"""B1 and B4 through the official ACP Python SDK (``agent-client-protocol``
0.12.x), a client with a no-op ``session_update`` handler.

Runs with the SDK venv's interpreter (``.cache/bench/acp-sdk-*/venv``); it
imports ``acp`` and the standard library only. The agent is the same fake
agent every client talks to, started with ``--agent-python``.

    sdk-python bench/clients/sdk_flood.py --agent-python PY --count 200000
    sdk-python bench/clients/sdk_flood.py --agent-python PY --count 5000 --sessions 64

With one session: a warm prompt, then the measured prompt (from calling
``conn.prompt`` until it returned; the SDK returns only after every update of
the prompt went through the handler). With ``--sessions N``: N sessions on the
one connection, one flood prompt each, all started at once.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block  # type: ignore[import-not-found,unused-ignore]

from bench.common import MemoryWindow, emit_result, flood_agent_command, now, scale_agent_command


class NullClient:
    """No-op handlers: what the client does with an update is not measured."""

    def __init__(self) -> None:
        self.updates = 0

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates += 1

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def on_connect(self, conn: Any) -> None:
        return None


async def flood(agent_python: str, count: int) -> dict[str, Any]:
    cmd = flood_agent_command(agent_python, count)
    client = NullClient()
    async with spawn_agent_process(client, cmd[0], *cmd[1:], env=dict(os.environ)) as (conn, _proc):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=os.getcwd(), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("warm")])
        before = client.updates
        mem = MemoryWindow()
        mem.start()
        t0 = now()
        result = await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
        t1 = now()
        mem.stop()
        return {
            "turn_s": t1 - t0,
            "chunks": client.updates - before,
            "stop": result.stop_reason,
            **mem.as_dict(),
        }


async def scale(agent_python: str, count: int, sessions: int) -> dict[str, Any]:
    cmd = scale_agent_command(agent_python, count, sessions)
    client = NullClient()
    async with spawn_agent_process(client, cmd[0], *cmd[1:], env=dict(os.environ)) as (conn, _proc):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        ids = [(await conn.new_session(cwd=os.getcwd(), mcp_servers=[])).session_id for _ in range(sessions)]
        for sid in ids:  # warm: one round trip per session, like the other clients
            await conn.prompt(session_id=sid, prompt=[text_block("warm")])
        client.updates = 0
        mem = MemoryWindow()
        mem.start()
        t0 = now()
        finish: list[float] = []

        async def one(sid: str) -> None:
            await conn.prompt(session_id=sid, prompt=[text_block("go")])
            finish.append(now() - t0)

        await asyncio.gather(*(one(sid) for sid in ids))
        total = now() - t0
        mem.stop()
        return {"total_s": total, "finish_s": sorted(finish), "chunks": client.updates, **mem.as_dict()}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--agent-python", required=True)
    p.add_argument("--count", type=int, default=200_000)
    p.add_argument("--sessions", type=int, default=0)
    args = p.parse_args()
    if args.sessions:
        result = asyncio.run(scale(args.agent_python, args.count, args.sessions))
    else:
        result = asyncio.run(flood(args.agent_python, args.count))
    emit_result(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
