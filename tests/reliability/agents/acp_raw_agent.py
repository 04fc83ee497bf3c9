"""A tiny ACP agent that writes exactly the bytes a reliability test needs.

The shared fake agent (``agy_host.testing.acp.agent``) speaks tidy
ACP; the cases here need what no tidy agent sends (a line of exactly
64 MiB, invalid UTF-8, a duplicate response id) or a volume where every
message must be distinguishable (a million numbered chunks). Stdlib only,
so it starts fast. Usage::

    python acp_raw_agent.py MODE [ARG]

MODE, applied to every ``session/prompt``:

``numbered N``  N ``agent_message_chunk`` frames, chunk i's text ``"<i>,"``,
                written in big blocks, then ``end_turn``.
``bigline MAX`` one frame of exactly MAX bytes (without its newline), one of
                MAX + 1, then a chunk ``AFTER``, then ``end_turn``.
``garbage``     invalid UTF-8, NUL bytes, a JSON array, a response to an
                unknown id, then a chunk ``SURVIVED``, then ``end_turn``;
                ``session/new`` is answered twice (a duplicate id).
``badupdates``  a text chunk holding an invalid UTF-8 byte (``caf\\xff``),
                an update of a kind ACP does not define, twice, then a
                chunk ``END``, then ``end_turn``; ``initialize`` answers
                protocol version 2.
"""

from __future__ import annotations

import json
import os
import sys

SESSION = "raw-session-1"


def write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(1, view)
        view = view[n:]


def frame(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def chunk(text: str) -> bytes:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    return frame({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SESSION, "update": update}})


def numbered(count: int) -> None:
    """Lines built from one template: json.dumps per line would make the
    agent, not the host, the slow side of the test."""
    pre, _, post = chunk("@N@").partition(b"@N@")
    step = 50_000
    for start in range(0, count, step):
        write(b"".join([b"%s%d,%s" % (pre, i, post) for i in range(start, min(count, start + step))]))


def bigline(limit: int) -> None:
    empty = len(chunk("")) - 1  # the frame's bytes around the text, without the newline
    write(chunk("x" * (limit - empty)))
    write(chunk("y" * (limit + 1 - empty)))
    write(chunk("AFTER"))


def garbage() -> None:
    write(b"\xff\xfe not utf-8 \xc3\x28\n")
    write(b"\x00\x00\x00\x00\n")
    write(b'[{"jsonrpc":"2.0","method":"session/update","params":{}}]\n')
    write(frame({"jsonrpc": "2.0", "id": 987654, "result": {}}))
    write(chunk("SURVIVED"))


def badupdates() -> None:
    write(chunk("caf@").replace(b"@", b"\xff"))
    future = {"sessionUpdate": "future_kind", "x": 1}
    for _ in range(2):
        write(frame({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SESSION, "update": future}}))
    write(chunk("END"))


def main() -> int:
    mode = sys.argv[1]
    arg = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    for raw in sys.stdin.buffer:
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        method, req_id = msg.get("method"), msg.get("id")
        if req_id is None:
            continue  # notifications (session/cancel) need no answer
        if method == "initialize":
            result: object = {
                "protocolVersion": 2 if mode == "badupdates" else 1,
                "agentCapabilities": {"loadSession": False},
                "authMethods": [],
                "agentInfo": {"name": "acp-raw-agent", "version": "1.0"},
            }
        elif method == "session/new":
            result = {"sessionId": SESSION}
            if mode == "garbage":
                write(frame({"jsonrpc": "2.0", "id": req_id, "result": result}))  # answered twice
        elif method == "session/prompt":
            modes = {"numbered": lambda: numbered(arg), "bigline": lambda: bigline(arg), "garbage": garbage}
            modes["badupdates"] = badupdates
            modes[mode]()
            result = {"stopReason": "end_turn"}
        else:
            write(frame({"jsonrpc": "2.0", "id": req_id, "error": {"code": -32601, "message": "not here"}}))
            continue
        write(frame({"jsonrpc": "2.0", "id": req_id, "result": result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
