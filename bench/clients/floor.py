"""The floor of B1: a bare loop reading the agent's pipe and decoding each line.

No event loop, no routing, no objects beyond the decoded message: what any
client must at least pay to see every chunk. ``--decode typed`` (the floor
in the table) decodes each line with msgspec into a struct holding the fields
a client needs (method, session id, update kind, text); ``--decode generic``
decodes into dicts; ``--decode none`` only reads the bytes, which is the
agent's own emission time plus the pipe.

The handshake is written by hand (initialize, session/new, one warm prompt),
then the measured prompt: from writing ``session/prompt`` until its response
line was decoded. Needs msgspec only (and the fake agent's interpreter).

    python bench/clients/floor.py --agent-python PY --count 200000 [--decode typed]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.common import MemoryWindow, emit_result, fake_agent_command, flood_agent_command, now, scale_agent_command

READ_CHUNK = 256 * 1024


class Content(msgspec.Struct):
    type: str = ""
    text: str = ""


class Update(msgspec.Struct):
    sessionUpdate: str
    content: Content | None = None


class Params(msgspec.Struct):
    sessionId: str = ""
    update: Update | None = None


class Message(msgspec.Struct):
    id: int | None = None
    method: str | None = None
    params: Params | None = None
    result: msgspec.Raw = msgspec.Raw(b"null")


def _write(fd: int, obj: Any) -> None:
    os.write(fd, msgspec.json.encode(obj) + b"\n")


def _wait_response(fd: int, req_id: int, partial: bytes) -> tuple[Any, bytes]:
    """Read until the response to ``req_id`` (the handshake: not measured)."""
    while True:
        nl = partial.find(b"\n")
        while nl >= 0:
            line, partial = partial[:nl], partial[nl + 1 :]
            if line.strip():
                msg = msgspec.json.decode(line)
                if isinstance(msg, dict) and msg.get("id") == req_id and "method" not in msg:
                    return msg, partial
            nl = partial.find(b"\n")
        data = os.read(fd, READ_CHUNK)
        if not data:
            raise SystemExit(f"agent closed its output before answering request {req_id}")
        partial += data


def measure(fd: int, decode: str, req_id: int, partial: bytes) -> tuple[int, int]:
    """The measured loop; returns (chunks, text characters)."""
    marker = b'"id":%d' % req_id
    chunks = 0
    chars = 0
    if decode == "none":
        tail = partial
        while True:
            data = os.read(fd, READ_CHUNK)
            if not data:
                raise SystemExit("agent output ended mid-turn")
            tail = tail[-256:] + data
            if b'"stopReason"' in tail and marker in tail:
                return -1, -1
    typed = decode == "typed"
    dec: Any = msgspec.json.Decoder(Message) if typed else msgspec.json.Decoder()
    read = os.read
    while True:
        data = read(fd, READ_CHUNK)
        if not data:
            raise SystemExit("agent output ended mid-turn")
        if partial:
            data = partial + data
        lines = data.split(b"\n")
        partial = lines.pop()
        for line in lines:
            msg = dec.decode(line)
            if typed:
                if msg.method is not None:
                    params = msg.params
                    if params is not None and params.update is not None and params.update.content is not None:
                        chunks += 1
                        chars += len(params.update.content.text)
                elif msg.id == req_id:
                    return chunks, chars
            elif "method" in msg:
                chunks += 1
                chars += len(msg["params"]["update"]["content"]["text"])
            elif msg.get("id") == req_id:
                return chunks, chars


def oneshot(agent_python: str) -> int:
    """The least a Python client can do for a one-shot turn: spawn the agent,
    initialize, session/new, one prompt, print the answer, exit."""
    cmd = fake_agent_command(agent_python, "echo")
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    win, rout = proc.stdin.fileno(), proc.stdout.fileno()
    _write(win, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
    _, partial = _wait_response(rout, 0, b"")
    _write(win, {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": os.getcwd(), "mcpServers": []}})
    new, partial = _wait_response(rout, 1, partial)
    prompt = {"sessionId": new["result"]["sessionId"], "prompt": [{"type": "text", "text": "hi"}]}
    _write(win, {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt})
    _wait_response(rout, 2, partial)
    proc.stdin.close()
    proc.wait()
    return 0


def scale(agent_python: str, count: int, sessions: int) -> dict[str, Any]:
    """B4's floor: N sessions, N flood prompts at once, every line decoded,
    until the N responses arrived."""
    cmd = scale_agent_command(agent_python, count, sessions)
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    win, rout = proc.stdin.fileno(), proc.stdout.fileno()
    _write(win, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
    _, partial = _wait_response(rout, 0, b"")
    sids = []
    for i in range(sessions):
        params = {"cwd": os.getcwd(), "mcpServers": []}
        _write(win, {"jsonrpc": "2.0", "id": 1 + i, "method": "session/new", "params": params})
        new, partial = _wait_response(rout, 1 + i, partial)
        sids.append(new["result"]["sessionId"])
    for i, sid in enumerate(sids):  # warm: one round trip per session
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "warm"}]}
        _write(win, {"jsonrpc": "2.0", "id": 500 + i, "method": "session/prompt", "params": prompt})
        _, partial = _wait_response(rout, 500 + i, partial)
    first = 1000
    mem = MemoryWindow()
    mem.start()
    t0 = now()
    for i, sid in enumerate(sids):
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
        _write(win, {"jsonrpc": "2.0", "id": first + i, "method": "session/prompt", "params": prompt})
    dec = msgspec.json.Decoder(Message)
    finish: list[float] = []
    chunks = 0
    while len(finish) < sessions:
        data = os.read(rout, READ_CHUNK)
        if not data:
            raise SystemExit("agent output ended mid-turn")
        data = partial + data
        lines = data.split(b"\n")
        partial = lines.pop()
        for line in lines:
            msg = dec.decode(line)
            if msg.method is not None:
                chunks += 1
            elif msg.id is not None and msg.id >= first:
                finish.append(now() - t0)
    total = now() - t0
    mem.stop()
    proc.stdin.close()
    proc.kill()
    proc.wait()
    return {"total_s": total, "finish_s": sorted(finish), "chunks": chunks, **mem.as_dict()}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--agent-python", default=sys.executable)
    p.add_argument("--count", type=int, default=200_000)
    p.add_argument("--decode", choices=["typed", "generic", "none"], default="typed")
    p.add_argument("--oneshot", action="store_true", help="B2: one prompt to the echo agent, then exit")
    p.add_argument("--sessions", type=int, default=0, help="B4: this many sessions at once")
    args = p.parse_args()
    if args.oneshot:
        return oneshot(args.agent_python)
    if args.sessions:
        emit_result(scale(args.agent_python, args.count, args.sessions))
        return 0
    cmd = flood_agent_command(args.agent_python, args.count)
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    win, rout = proc.stdin.fileno(), proc.stdout.fileno()
    partial = b""
    _write(win, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
    _, partial = _wait_response(rout, 0, partial)
    _write(win, {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": os.getcwd(), "mcpServers": []}})
    new, partial = _wait_response(rout, 1, partial)
    sid = new["result"]["sessionId"]
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
    _write(win, {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt})
    _, partial = _wait_response(rout, 2, partial)

    mem = MemoryWindow()
    mem.start()
    t0 = now()
    _write(win, {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt})
    chunks, chars = measure(rout, args.decode, 3, partial)
    t1 = now()
    mem.stop()
    proc.stdin.close()
    proc.kill()
    proc.wait()
    emit_result({"turn_s": t1 - t0, "chunks": chunks, "chars": chars, **mem.as_dict()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
