"""B3's agent: a minimal ACP agent (stdlib only) that calls a host tool
through the MCP server the host hands it in ``session/new``'s ``mcpServers``.

On ``session/prompt`` it opens one keep-alive HTTP connection to the server,
sends MCP ``initialize`` and ``notifications/initialized``, then ``tools/call``
of ``$BENCH_BRIDGE_TOOL`` ``$BENCH_BRIDGE_CALLS`` times in a row, timing each
call from the request written to the response read. The latencies (seconds)
go to ``$BENCH_BRIDGE_OUT`` as JSON, then the prompt answers ``end_turn``.

The same client code (:func:`call_loop`) also times a plain loopback HTTP
server for the reference row.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import sys
import time
from typing import Any
from urllib.parse import urlsplit

MCP_VERSION = "2025-06-18"


def _send(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


class McpHttp:
    """One keep-alive connection; JSON-RPC over POST (JSON or one SSE event back)."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        parts = urlsplit(url)
        self.path = parts.path or "/"
        self.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=60)
        self.conn.connect()
        assert self.conn.sock is not None
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MCP_VERSION,
            **headers,
        }
        self.ids = 0

    def post(self, method: str, params: dict[str, Any], *, notify: bool = False) -> Any:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            self.ids += 1
            body["id"] = self.ids
        self.conn.request("POST", self.path, body=json.dumps(body).encode(), headers=self.headers)
        resp = self.conn.getresponse()
        data = resp.read()
        if resp.status >= 300:
            raise RuntimeError(f"{method}: HTTP {resp.status}: {data[:300]!r}")
        if notify or not data:
            return None
        text = data.decode("utf-8", "replace")
        if "text/event-stream" in (resp.getheader("content-type") or ""):
            text = "\n".join(line[5:].strip() for line in text.splitlines() if line.startswith("data:"))
        msg = json.loads(text)
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg.get("result")


def call_loop(client: McpHttp, tool: str, calls: int) -> list[float]:
    client.post(
        "initialize",
        {"protocolVersion": MCP_VERSION, "capabilities": {}, "clientInfo": {"name": "bench-agent", "version": "1"}},
    )
    client.post("notifications/initialized", {}, notify=True)
    times: list[float] = []
    for i in range(calls):
        t0 = time.monotonic()
        result = client.post("tools/call", {"name": tool, "arguments": {"i": i}})
        times.append(time.monotonic() - t0)
        if not isinstance(result, dict) or result.get("isError"):
            raise RuntimeError(f"tools/call {tool} failed: {result}")
    return times


def main() -> int:
    servers: list[dict[str, Any]] = []
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        method, mid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if method == "initialize":
            caps = {"mcpCapabilities": {"http": True, "sse": False}}
            info = {"name": "bench-bridge-agent", "version": "1"}
            _send(
                {
                    "jsonrpc": "2.0",
                    "id": mid,
                    "result": {"protocolVersion": 1, "agentCapabilities": caps, "agentInfo": info},
                }
            )
        elif method == "session/new":
            servers = list(params.get("mcpServers") or [])
            _send({"jsonrpc": "2.0", "id": mid, "result": {"sessionId": "bench-bridge"}})
        elif method == "session/prompt":
            out = os.environ["BENCH_BRIDGE_OUT"]
            try:
                http_servers = [s for s in servers if s.get("url")]
                if not http_servers:
                    raise RuntimeError(f"no HTTP MCP server in session/new (got {servers})")
                srv = http_servers[0]
                headers = {h["name"]: h["value"] for h in srv.get("headers") or []}
                client = McpHttp(srv["url"], headers)
                times = call_loop(
                    client, os.environ.get("BENCH_BRIDGE_TOOL", "bench_noop"), int(os.environ["BENCH_BRIDGE_CALLS"])
                )
                result: dict[str, Any] = {"times": times}
            except Exception as exc:
                result = {"error": f"{type(exc).__name__}: {exc}"}
            with open(out, "w", encoding="utf-8") as f:
                json.dump(result, f)
            _send({"jsonrpc": "2.0", "id": mid, "result": {"stopReason": "end_turn"}})
        elif mid is not None:
            _send({"jsonrpc": "2.0", "id": mid, "result": {}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
