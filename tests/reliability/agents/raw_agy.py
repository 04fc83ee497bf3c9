"""A tiny ``agy`` CLI (stream-json dialect) that writes exactly the bytes a
reliability test needs; the stream-json twin of ``acp_raw_agent.py``.

The engine runs it as ``raw_agy.py MODE ARG <agy flags>``: it prints the
``init`` event, then for every stdin line plays MODE and ends the turn with a
``result``. Stdlib only. MODE:

``numbered N``   N ``agent_response`` ACTIVE frames, delta i ``"<i>,"``.
``bigline MAX``  a frame of exactly MAX bytes, one of MAX + 1, then ``AFTER``.
``garbage``      invalid UTF-8, NUL bytes, a JSON array, then ``SURVIVED``.
``stderr N``     N bytes on stderr before answering ``FLOODED``.
"""

from __future__ import annotations

import json
import os
import sys

CONV = "raw-agy-conversation-1"


def write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def frame(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def delta(text: str, state: str = "ACTIVE") -> bytes:
    step = {"conversation_id": CONV, "step_index": 1, "state": state, "step_type": "agent_response"}
    return frame({"event": "step_update", "step_update": {**step, "text_delta": text}})


def numbered(count: int) -> None:
    """Lines built from one template: json.dumps per line would make the
    agent, not the host, the slow side of the test."""
    pre, _, post = delta("@N@").partition(b"@N@")
    step = 50_000
    for start in range(0, count, step):
        write(1, b"".join([b"%s%d,%s" % (pre, i, post) for i in range(start, min(count, start + step))]))


def bigline(limit: int) -> None:
    empty = len(delta("")) - 1
    write(1, delta("x" * (limit - empty)))
    write(1, delta("y" * (limit + 1 - empty)))
    write(1, delta("AFTER"))


def garbage() -> None:
    write(1, b"\xff\xfe not utf-8 \xc3\x28\n")
    write(1, b"\x00\x00\x00\x00\n")
    write(1, b'[{"event":"step_update"}]\n')
    write(1, delta("SURVIVED"))


def stderr_flood(count: int) -> None:
    block = (b"e" * 99 + b"\n") * 10_000
    left = count
    while left > 0:
        part = block[:left]
        write(2, part)
        left -= len(part)
    write(1, delta("FLOODED"))


def main() -> int:
    mode, arg = sys.argv[1], int(sys.argv[2]) if sys.argv[2:3] and sys.argv[2].isdigit() else 0
    write(1, frame({"event": "init", "conversation_id": CONV, "init": {"cwd": os.getcwd(), "tools": []}}))
    plays = {"numbered": numbered, "bigline": bigline, "garbage": lambda _n: garbage(), "stderr": stderr_flood}
    for raw in sys.stdin.buffer:
        if not raw.strip():
            continue
        plays[mode](arg)
        write(1, delta("", "DONE"))
        write(1, frame({"event": "result", "result": {"conversation_id": CONV, "status": "SUCCESS"}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
