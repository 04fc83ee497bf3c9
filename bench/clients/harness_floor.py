"""The floor for the harness benchmarks: the same ``localharness`` driven by
a bare loop (bootstrap, one WebSocket, config, one user input, read frames
until the main trajectory is idle, write each text delta to stdout). No
agy-host runtime: only the harness engine's two wire modules (the bootstrap
codec and the wsproto socket) and msgspec's JSON decoder.

    python bench/clients/harness_floor.py BINARY BASE_URL "prompt"
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import tempfile

import msgspec
import trio
from agy_host_harness.bootstrap import InputConfig, decode_output, encode_input, frame
from agy_host_harness.websocket import WebSocket


async def main(binary: str, base_url: str, prompt: str) -> int:
    root = tempfile.mkdtemp(prefix="harness-floor-")
    env = dict(os.environ, HOME=root)
    proc = await trio.lowlevel.open_process([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    await proc.stdin.send_all(frame(encode_input(InputConfig(storage_directory=root))))
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack("<I", data[:4])[0]:
        data += await proc.stdout.receive_some(4096)
    out = decode_output(data[4:])
    ws = await WebSocket.connect("127.0.0.1", out.port, {"x-goog-api-key": out.api_key})
    model = {
        "name": "gemini-3.8-flash",
        "types": ["MODEL_TYPE_TEXT"],
        "geminiApiEndpoint": {"baseUrl": base_url, "apiKey": "k"},
    }
    config = {"models": [model], "workspaces": [{"filesystemWorkspace": {"directory": root}}], "appDataDir": root}
    await ws.send(msgspec.json.encode({"config": config}).decode())
    decode = msgspec.json.decode
    cascade = decode(await ws.receive())["initializeConversationResponse"]["cascadeId"]
    await ws.send(msgspec.json.encode({"userInput": {"parts": [{"text": prompt}]}}).decode())
    write = sys.stdout.write
    chars = 0
    while True:
        event = decode(await ws.receive())
        step = event.get("stepUpdate")
        if step is not None and step.get("target") == "TARGET_USER" and step.get("source") == "SOURCE_MODEL":
            delta = step.get("textDelta", "")
            if delta:
                write(delta)
                chars += len(delta)
        state = event.get("trajectoryStateUpdate")
        if state is not None and state.get("trajectoryId") == cascade and state.get("state") == "STATE_FULLY_IDLE":
            break
    sys.stdout.flush()
    await ws.aclose()
    await proc.stdin.aclose()
    await proc.wait()
    return 0 if chars else 1


if __name__ == "__main__":
    raise SystemExit(trio.run(main, *sys.argv[1:4]))
