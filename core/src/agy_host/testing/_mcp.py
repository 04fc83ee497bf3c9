"""The fake ACP agent's MCP client: calls a tool on a server from ``mcpServers``.

Real agents connect to the MCP servers the client lists on ``session/new``
and ``session/load`` and call their tools over HTTP while a prompt runs.
The ``mcp_call`` step does the same with the standard library only (the fake
agent must start fast): ``initialize``, ``notifications/initialized``,
optionally ``tools/list``, then ``tools/call``, each a plain JSON-RPC POST
with the server's headers. Like agy, it sends its own (newer) protocol
version header on the follow-up requests.

Each POST runs on a helper thread so the prompt can give up on it: on a
cancel or when the step's ``timeout`` passes (agy's MCP client gives up
after about 180 s) the connection is shut down, which is what the server
sees as the agent disconnecting.
"""

from __future__ import annotations

import http.client
import itertools
import re
import socket
import threading
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

ACCEPT = "application/json, text/event-stream"
#: Deadline of the requests before ``tools/call`` (the server may still be starting).
SETUP_TIMEOUT = 30.0
CLIENT_INFO = {"name": "fake-acp-agent", "version": "fake-1"}


if TYPE_CHECKING:
    from agy_host.testing.acp.scenario import McpCall


class McpCallFailed(Exception):
    """The server answered with an HTTP or JSON-RPC error, or not at all."""


class McpCancelled(Exception):
    """The prompt was cancelled while a request was in flight."""


def pick_server(servers: list[Any] | None, name: str | None) -> dict[str, Any]:
    """The named HTTP server from ``mcpServers`` (the first one without a name)."""
    for server in servers or []:
        if not isinstance(server, dict) or not server.get("url"):
            continue
        if name is None or server.get("name") == name:
            return server
    known = [s.get("name") for s in servers or [] if isinstance(s, dict)]
    raise McpCallFailed(f"no MCP server {name or '(any)'} in mcpServers (got {known})")


def pick_cli_server(path: Path, prefix: str, host_pid: int, *, event: Callable[..., None]) -> dict[str, Any]:
    """The server the agy CLI would use, from its global MCP config at
    ``path`` (``{"mcpServers": {name: {"serverUrl", "headers", "disabled"}}}``):
    the enabled entry of the host that started this process
    (``agy-host-bridge-<host_pid>``), else the only enabled entry named
    ``prefix*``. Logged as ``mcp-server`` (entry, header names, file mode,
    every entry name) so a test can check what the host registered."""
    import json

    try:
        servers = json.loads(path.read_text("utf-8")).get("mcpServers") or {}
    except (OSError, ValueError, AttributeError) as exc:
        raise McpCallFailed(f"no usable MCP config at {path}: {exc}") from None
    enabled = {
        name: entry
        for name, entry in servers.items()
        if isinstance(entry, dict) and entry.get("serverUrl") and not entry.get("disabled")
    }
    matching = [name for name in enabled if name.startswith(prefix)]
    ours = f"agy-host-bridge-{host_pid}"
    name = ours if ours in matching else (matching[0] if len(matching) == 1 else None)
    if name is None:
        raise McpCallFailed(f"no single enabled MCP server {prefix}* in {path} (enabled: {sorted(enabled)})")
    entry = enabled[name]
    headers = entry.get("headers") or {}
    event("mcp-server", entry=name, headers=sorted(headers), mode=path.stat().st_mode & 0o777, all=sorted(servers))
    return {"url": entry["serverUrl"], "headers": headers}


def server_headers(server: dict[str, Any]) -> dict[str, str]:
    """ACP sends headers as ``[{name, value}]``; a mapping is accepted too."""
    raw = server.get("headers") or []
    if isinstance(raw, dict):
        return {str(k): str(v) for k, v in raw.items()}
    return {str(h["name"]): str(h.get("value", "")) for h in raw if isinstance(h, dict) and "name" in h}


def _decode_body(content_type: str, body: bytes) -> Any:
    if "text/event-stream" in content_type:
        # the last JSON ``data:`` line of the stream is the response
        found: Any = None
        for line in body.decode("utf-8", "replace").splitlines():
            if line.startswith("data:") and line[5:].strip():
                try:
                    found = msgspec.json.decode(line[5:].strip())
                except msgspec.DecodeError:
                    continue
        return found
    return msgspec.json.decode(body) if body.strip() else None


class McpHttpClient:
    """One MCP server, one request at a time."""

    def __init__(self, url: str, headers: dict[str, str], *, cancel: threading.Event) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise McpCallFailed(f"only http:// MCP servers are supported, got {url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.path = parts.path or "/"
        self.headers = headers
        self.cancel = cancel
        self.protocol_version: str | None = None
        self._ids = itertools.count(1)

    def request(self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None) -> Any:
        """Send a request; return its ``result`` (raise on an error)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self._ids), "method": method}
        if params is not None:
            message["params"] = params
        status, body = self._post(message, SETUP_TIMEOUT if timeout is None else timeout)
        if status >= 400:
            raise McpCallFailed(f"HTTP {status}: {body!r}"[:500])
        if not isinstance(body, dict):
            raise McpCallFailed(f"{method}: not a JSON-RPC response: {body!r}"[:500])
        if "error" in body:
            raise McpCallFailed(f"{method}: JSON-RPC error {body['error']!r}"[:500])
        return body.get("result")

    def notify(self, method: str) -> None:
        status, body = self._post({"jsonrpc": "2.0", "method": method}, SETUP_TIMEOUT)
        if status >= 400:
            raise McpCallFailed(f"{method}: HTTP {status}: {body!r}"[:500])

    def _post(self, message: dict[str, Any], timeout: float) -> tuple[int, Any]:
        data = msgspec.json.encode(message)
        headers = {"Content-Type": "application/json", "Accept": ACCEPT, **self.headers}
        if self.protocol_version:
            headers["MCP-Protocol-Version"] = self.protocol_version
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout + 5)
        outcome: dict[str, Any] = {}

        def send() -> None:
            try:
                conn.request("POST", self.path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
                outcome["value"] = (resp.status, _decode_body(resp.getheader("content-type") or "", raw))
            except Exception as exc:
                outcome["error"] = exc

        worker = threading.Thread(target=send, name="fake-mcp-post", daemon=True)
        worker.start()
        waited = 0.0
        while worker.is_alive() and waited < timeout and not self.cancel.is_set():
            worker.join(0.05)
            waited += 0.05
        if worker.is_alive():
            self._hang_up(conn)
            worker.join(5.0)
            if self.cancel.is_set():
                raise McpCancelled
            raise McpCallFailed(f"MCP request timed out after {timeout:g}s (the agent gave up)")
        conn.close()
        if "error" in outcome:
            raise McpCallFailed(f"MCP request failed: {outcome['error']!r}")
        status, body = outcome["value"]
        return int(status), body

    @staticmethod
    def _hang_up(conn: http.client.HTTPConnection) -> None:
        sock = conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        conn.close()


def result_text(result: Any) -> tuple[str, bool]:
    """The text blocks of a ``tools/call`` result joined, and its ``isError``;
    image blocks are counted as ``[image <mime>]``."""
    if not isinstance(result, dict):
        return f"(not a tool result: {result!r})", True
    parts: list[str] = []
    for block in result.get("content") or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "image":
            parts.append(f"[image {block.get('mimeType', '?')}]")
    return " ".join(p for p in parts if p), bool(result.get("isError"))


def call_tool(
    server: dict[str, Any],
    step: McpCall,
    *,
    cancel: threading.Event,
    event: Callable[..., None],
    sleep_scale: float = 1.0,
) -> tuple[str, bool, int]:
    """One ``mcp_call`` step, as both fake agents play it: ``initialize``,
    ``notifications/initialized``, ``tools/list`` (logged as ``mcp-tools``),
    ``tools/call``, then the poll tool while the answer is "STILL RUNNING".

    Returns the result text, whether it is an error, and how many polls it
    took; a server error becomes an error text (the agent sees a failed tool,
    it does not crash). :class:`McpCancelled` escapes: the caller's turn is over.
    """
    polls = 0
    try:
        client = McpHttpClient(str(server["url"]), server_headers(server), cancel=cancel)
        client.request(
            "initialize", {"protocolVersion": step.protocol_version, "capabilities": {}, "clientInfo": CLIENT_INFO}
        )
        client.protocol_version = step.protocol_version
        client.notify("notifications/initialized")
        if step.list_tools:
            listed = client.request("tools/list", {})
            event("mcp-tools", names=[t.get("name") for t in (listed or {}).get("tools", []) if isinstance(t, dict)])
        result = client.request("tools/call", {"name": step.tool, "arguments": step.arguments}, timeout=step.timeout)
        text, is_error = result_text(result)
        while step.poll and text.startswith("STILL RUNNING") and polls < step.max_polls:
            match = re.search(r"callId ([\w.:-]+)", text)
            if match is None:
                break
            if cancel.wait(step.poll_interval * sleep_scale):
                raise McpCancelled
            polls += 1
            arguments = {"callId": match[1]}
            result = client.request(
                "tools/call", {"name": step.poll_tool, "arguments": arguments}, timeout=step.timeout
            )
            text, is_error = result_text(result)
    except McpCallFailed as exc:
        text, is_error = str(exc), True
    event("mcp-call", tool=step.tool, is_error=is_error, polls=polls, text=text[:2000])
    return text, is_error, polls


__all__ = [
    "McpCallFailed",
    "McpCancelled",
    "McpHttpClient",
    "call_tool",
    "pick_cli_server",
    "pick_server",
    "result_text",
    "server_headers",
]
