"""A tiny ACP agent bundled with the engine: ``python -m agy_host_acp.sandbox_agent``.

It exists so that a fresh install completes a real turn over a real pipe
before the user has installed Antigravity's 1 GB server: it speaks ACP v1 on
stdio and echoes the prompt back, word by word. It never touches files,
network or credentials. The host says plainly when a turn ran here.
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

AGENT_INFO = {"name": "agy-host-sandbox", "title": "agy-host sandbox agent", "version": "1"}


def _send(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def _update(session_id: str, update: dict[str, Any]) -> None:
    _send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": update}})


def _reply(prompt: list[dict[str, Any]]) -> str:
    text = " ".join(b.get("text", "") for b in prompt if isinstance(b, dict) and b.get("type") == "text").strip()
    return (
        "This is agy-host's sandbox agent (no real agent is installed). "
        f"You said: {text}\n"
        "Install Antigravity's ACP server (`agy-host doctor` shows where it looks), "
        'or run any ACP agent with --agent "CMD".'
    )


def main() -> int:
    sessions: set[str] = set()
    for raw in sys.stdin:
        line = raw.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(msg, dict):
            continue
        method, msg_id, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if method is None or msg_id is None:
            continue  # responses and notifications (session/cancel: nothing runs long enough)
        if method == "initialize":
            result: Any = {
                "protocolVersion": 1,
                "agentCapabilities": {
                    "loadSession": True,
                    "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
                    "sessionCapabilities": {"close": {}},
                },
                "authMethods": [],
                "agentInfo": AGENT_INFO,
            }
        elif method == "session/new":
            sid = f"sandbox-{uuid.uuid4()}"
            sessions.add(sid)
            result = {"sessionId": sid}
        elif method == "session/load":
            sessions.add(str(params.get("sessionId", "")))
            result = {}
        elif method == "session/prompt":
            sid = str(params.get("sessionId", ""))
            for word in _reply(params.get("prompt") or []).split(" "):
                _update(sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": word + " "}})
            result = {"stopReason": "end_turn"}
        elif method == "session/close":
            sessions.discard(str(params.get("sessionId", "")))
            result = {}
        else:
            _send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": f"method not found: {method}"}})
            continue
        _send({"jsonrpc": "2.0", "id": msg_id, "result": result})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
