"""A scripted model API over real HTTP, for agents that call a model endpoint
themselves (Antigravity's local harness, any OpenAI-compatible client).

Run ``python -m agy_host.testing.models.api --script FILE|JSON
[--port-file F] [--log F] [--api-key K]``; it listens on 127.0.0.1 (an
ephemeral port unless ``--port``), writes the port to ``--port-file`` once it
accepts connections, and serves two dialects:

* Gemini: ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse``
  (and ``:generateContent``), ``X-Goog-Api-Key`` or ``?key=``;
* OpenAI chat completions: ``POST /v1/chat/completions`` (``stream`` or not).

With ``--api-key`` a request without that key gets the provider's 401.
Every request is appended to ``--log`` as one JSON line (``path``, ``model``,
``user_text``, ``turn``, ``call``, ``body``) *before* it is answered, so a
test can assert on what the agent really sent.

The script (JSON, or TOML when the file ends in ``.toml``)::

    {"turns": [[reply, reply, ...], ...],      # by user request; the last repeats
     "rules": [{"match": "regex", "replies": [reply, ...]}]}   # by the user's text, first

A user request (a user message wrapping its text in ``<USER_REQUEST>``, or
any user text message when none does) picks its list of replies; each model
call within it takes the next reply, counted by the function responses sent
since that request. Past the end, the model says ``(script ended)``: a fake
must never make an agent loop forever on the same tool call. One reply is a
list of events::

    {"text": "..." | ["a", "b"]}   answer text, one chunk per piece
    {"thought": "..."}             thinking (Gemini ``thought: true``; dropped on OpenAI)
    {"echo": true}                 the user's request text, back
    {"call": {"name": n, "args": {...}}}   a function call (ends the reply)
    {"usage": {"input": n, "output": m, "thoughts": t, "cached": c}}   usage on the last chunk
    {"sleep": s}                   pause before the next event
    {"hang": true}                 stop sending; hold the stream open until the client leaves
    {"flood": {"chunks": n, "text": t}}    n text chunks of t, as fast as the socket takes them
    {"touch": "/path"}             create that file (tells a test the stream got this far)
    {"tool_result": true}          "tool result: " and the last tool's output (a host tool's own text)
    {"verdict": true}              "DENIED" when the last tool was refused, else "PERMITTED"
    {"error": {"status": 500, "message": "..."}}   answer this HTTP error instead (first event only)
    {"drop": true}                 close the connection without an answer (first event only): a network error

A client's retry of a failed call sends the same conversation, so it gets
the same reply: a reply of ``error`` (a 429 or 503) or ``drop`` fails every
retry, for ever, as an overloaded or broken endpoint does. (An endpoint that
is not there at all is a port nobody listens on: close the server.)

Without usage events no usage metadata is sent, as a model that reports none.
The harness's quirks are honoured: function responses may arrive with role
``"model"`` (they still count), and the user's text is read from inside
``<USER_REQUEST>`` when present.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import trio

from agy_host.testing._http import Connection, Request

Reply = list[dict[str, Any]]
_USER_REQUEST = re.compile(r"<USER_REQUEST>\s*(.*?)\s*</USER_REQUEST>", re.S)
_MODEL_PATH = re.compile(r"^/v1(?:beta|alpha|)?/models/([^/:]+):(streamGenerateContent|generateContent)$")
ENDED = "(script ended)"
_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


class Script:
    def __init__(self, raw: dict[str, Any]) -> None:
        turns = raw.get("turns") or [[[{"echo": True}]]]
        self.turns: list[list[Reply]] = [list(t) for t in turns]
        self.rules = [(re.compile(str(r["match"])), list(r.get("replies", []))) for r in raw.get("rules", [])]

    def reply(self, user_text: str, turn: int, call: int) -> Reply:
        replies: list[Reply] | None = None
        for pattern, candidate in self.rules:
            if pattern.search(user_text):
                replies = candidate
                break
        if replies is None:
            replies = self.turns[min(max(turn, 1), len(self.turns)) - 1]
        if call < len(replies):
            return replies[call]
        return [{"text": ENDED}]


def load_script(spec: str) -> Script:
    text = spec
    path = Path(spec)
    if not spec.lstrip().startswith(("{", "[")) and path.is_file():
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".toml":
            return Script(tomllib.loads(text))
    raw = json.loads(text)
    if isinstance(raw, list):
        raw = {"turns": raw}
    if not isinstance(raw, dict):
        raise TypeError("a model script is a JSON object with 'turns' and/or 'rules'")
    return Script(raw)


# ---------------------------------------------------------------------------
# reading a conversation: which user request, which model call
# ---------------------------------------------------------------------------


def gemini_position(body: dict[str, Any]) -> tuple[str, int, int]:
    """(user text, user request number from 1, model calls since it)."""
    contents = body.get("contents") or []
    marked = [i for i, c in enumerate(contents) if _user_request(c) is not None]
    if not marked:
        marked = [i for i, c in enumerate(contents) if c.get("role") == "user" and _texts(c) and not _responses(c)]
    if not marked:
        return "", 1, 0
    last = marked[-1]
    text = _user_request(contents[last])
    if text is None:
        text = "\n".join(_texts(contents[last]))
    calls = sum(_responses(c) for c in contents[last + 1 :])
    return text, len(marked), calls


_FENCED_JSON = re.compile(r"```json\s*(.*?)\s*```", re.S)
_DENIED = re.compile(r"denied|rejected|not allowed|refused|cancell?ed by the user", re.I)


def tool_output(raw: str) -> str:
    """A tool's own output inside the harness's function response text: the
    fenced JSON of a host tool (``{"output": ...}``), a command's output, or
    the text as it is."""
    fenced = _FENCED_JSON.search(raw)
    if fenced:
        try:
            value = json.loads(fenced.group(1))
        except ValueError:
            return fenced.group(1)
        if isinstance(value, dict) and "output" in value:
            return str(value["output"])
        return fenced.group(1)
    marker = raw.find("Output:\n")
    if marker >= 0:
        return raw[marker + len("Output:\n") :].strip()
    lines = raw.split("\n")
    while lines and lines[0].startswith(("Created At:", "Completed At:")):
        lines.pop(0)  # the harness's own header on a tool's answer
    return "\n".join(lines)


def last_gemini_output(body: dict[str, Any]) -> str:
    for content in reversed(body.get("contents") or []):
        for part in reversed(content.get("parts") or []):
            if isinstance(part, dict) and "functionResponse" in part:
                response = part["functionResponse"].get("response")
                if isinstance(response, dict) and isinstance(response.get("output"), str):
                    return str(response["output"])
                return json.dumps(response)
    return ""


def last_openai_output(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "tool":
            return _openai_text(message.get("content"))
    return ""


def _texts(content: dict[str, Any]) -> list[str]:
    return [str(p["text"]) for p in content.get("parts") or [] if isinstance(p, dict) and "text" in p]


def _responses(content: dict[str, Any]) -> int:
    # role "model" or "user": the harness sends them as "model"
    return sum(1 for p in content.get("parts") or [] if isinstance(p, dict) and "functionResponse" in p)


def _user_request(content: dict[str, Any]) -> str | None:
    if content.get("role") != "user":
        return None
    for text in _texts(content):
        found = _USER_REQUEST.search(text)
        if found:
            return found.group(1)
    return None


def openai_position(body: dict[str, Any]) -> tuple[str, int, int]:
    messages = body.get("messages") or []
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not users:
        return "", 1, 0
    last = users[-1]
    text = _openai_text(messages[last].get("content"))
    found = _USER_REQUEST.search(text)
    calls = sum(1 for m in messages[last + 1 :] if m.get("role") == "tool")
    return (found.group(1) if found else text), len(users), calls


def _openai_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


# ---------------------------------------------------------------------------
# the two dialects
# ---------------------------------------------------------------------------


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _usage_counts(event: dict[str, Any]) -> dict[str, int]:
    u = event["usage"]
    return {k: int(u.get(k, 0)) for k in ("input", "output", "thoughts", "cached")}


class Server:
    def __init__(self, script: Script, log: Path | None, api_key: str | None) -> None:
        self.script = script
        self.log = log
        self.api_key = api_key
        self.requests = itertools.count(1)

    def _record(self, entry: dict[str, Any]) -> None:
        if self.log is None:
            return
        with self.log.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")
            f.flush()

    async def serve(self, stream: trio.SocketStream) -> None:
        conn = Connection(stream)
        try:
            while True:
                request = await conn.read_request()
                if request is None:
                    return
                await self.handle(conn, request)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError, _Dropped):
            return
        finally:
            await stream.aclose()

    async def handle(self, conn: Connection, request: Request) -> None:
        url = urlsplit(request.target)
        try:
            body = json.loads(request.body or b"{}")
        except ValueError:
            await conn.respond(400, _dumps({"error": {"code": 400, "message": "body is not JSON"}}))
            return
        gemini = _MODEL_PATH.match(url.path)
        if gemini is not None:
            key = request.headers.get("x-goog-api-key") or (parse_qs(url.query).get("key") or [""])[0]
            if self.api_key is not None and key != self.api_key:
                self._record({"path": url.path, "rejected": "api key"})
                await self._gemini_error(conn, 401, "API key not valid. Please pass a valid API key.")
                return
            text, turn, call = gemini_position(body)
            self._record(
                {
                    "path": url.path,
                    "model": gemini.group(1),
                    "user_text": text,
                    "turn": turn,
                    "call": call,
                    "body": body,
                }
            )
            reply = _unless_dropped(self.script.reply(text, turn, call))
            last = last_gemini_output(body)
            await self._gemini(conn, reply, text, last, stream=gemini.group(2) == "streamGenerateContent")
            return
        if url.path.rstrip("/").endswith("/chat/completions"):
            auth = request.headers.get("authorization", "")
            if self.api_key is not None and auth != f"Bearer {self.api_key}":
                self._record({"path": url.path, "rejected": "api key"})
                await conn.respond(401, _dumps({"error": {"message": "Incorrect API key", "type": "invalid_api_key"}}))
                return
            text, turn, call = openai_position(body)
            model = str(body.get("model", ""))
            self._record(
                {"path": url.path, "model": model, "user_text": text, "turn": turn, "call": call, "body": body}
            )
            reply = _unless_dropped(self.script.reply(text, turn, call))
            await self._openai(
                conn, reply, text, last_openai_output(body), model=model, stream=bool(body.get("stream"))
            )
            return
        await conn.respond(404, _dumps({"error": {"code": 404, "message": f"no route {url.path}"}}))

    # -- Gemini ---------------------------------------------------------------------

    async def _gemini_error(self, conn: Connection, status: int, message: str) -> None:
        error = {"code": status, "message": message, "status": _GOOGLE_STATUS.get(status, "UNKNOWN")}
        await conn.respond(status, _dumps({"error": error}))

    async def _gemini(self, conn: Connection, reply: Reply, user_text: str, last: str, *, stream: bool) -> None:
        if reply and "error" in reply[0]:
            err = reply[0]["error"]
            await self._gemini_error(conn, int(err.get("status", 500)), str(err.get("message", "scripted error")))
            return
        usage = next((_usage_counts(e) for e in reply if "usage" in e), None)
        chunks = list(_gemini_chunks(reply, user_text, last))
        if not stream:
            parts = [p for kind, p in chunks if kind == "part"]
            await conn.respond(200, _dumps(_gemini_frame(parts, usage, final=True)))
            return
        await conn.start_stream()
        for i, (kind, value) in enumerate(chunks):
            if kind == "sleep":
                await trio.sleep(float(value))
            elif kind == "hang":
                await trio.sleep_forever()
            elif kind == "touch":
                await trio.Path(value).touch()
            else:
                final = all(k != "part" for k, _ in chunks[i + 1 :])
                frame = _gemini_frame([value], usage if final else None, final=final)
                await conn.chunk(b"data: " + _dumps(frame) + b"\r\n\r\n")
        if not any(kind == "part" for kind, _ in chunks):
            await conn.chunk(b"data: " + _dumps(_gemini_frame([{"text": ""}], usage, final=True)) + b"\r\n\r\n")
        await conn.end_stream()

    # -- OpenAI -----------------------------------------------------------------------

    async def _openai(
        self, conn: Connection, reply: Reply, user_text: str, last: str, *, model: str, stream: bool
    ) -> None:
        if reply and "error" in reply[0]:
            err = reply[0]["error"]
            body = {"error": {"message": str(err.get("message", "scripted error")), "type": "server_error"}}
            await conn.respond(int(err.get("status", 500)), _dumps(body))
            return
        usage = next((_usage_counts(e) for e in reply if "usage" in e), None)
        usage_obj = (
            {
                "prompt_tokens": usage["input"],
                "completion_tokens": usage["output"],
                "total_tokens": usage["input"] + usage["output"],
            }
            if usage
            else None
        )
        chunks = [(k, v) for k, v in _gemini_chunks(reply, user_text, last) if not (k == "part" and v.get("thought"))]
        if not stream:
            text = "".join(str(v.get("text", "")) for k, v in chunks if k == "part")
            calls = [_openai_call(i, v["functionCall"]) for i, (k, v) in enumerate(chunks) if "functionCall" in v]
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                message["tool_calls"] = calls
            choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
            out: dict[str, Any] = {"id": "chatcmpl-fake", "object": "chat.completion", "model": model}
            out["choices"] = [choice]
            if usage_obj:
                out["usage"] = usage_obj
            await conn.respond(200, _dumps(out))
            return
        await conn.start_stream()
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model}
        finish = "stop"
        for kind, value in chunks:
            if kind == "sleep":
                await trio.sleep(float(value))
            elif kind == "hang":
                await trio.sleep_forever()
            elif kind == "touch":
                await trio.Path(value).touch()
            elif "functionCall" in value:
                finish = "tool_calls"
                delta = {"role": "assistant", "tool_calls": [_openai_call(0, value["functionCall"], index=True)]}
                await conn.chunk(b"data: " + _dumps({**base, "choices": [{"index": 0, "delta": delta}]}) + b"\n\n")
            else:
                delta = {"role": "assistant", "content": value.get("text", "")}
                await conn.chunk(b"data: " + _dumps({**base, "choices": [{"index": 0, "delta": delta}]}) + b"\n\n")
        closing = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
        await conn.chunk(b"data: " + _dumps(closing) + b"\n\n")
        if usage_obj:
            await conn.chunk(b"data: " + _dumps({**base, "choices": [], "usage": usage_obj}) + b"\n\n")
        await conn.chunk(b"data: [DONE]\n\n")
        await conn.end_stream()


class _Dropped(Exception):
    """A ``drop`` reply: the connection is closed without an answer."""


def _unless_dropped(reply: Reply) -> Reply:
    if reply and reply[0].get("drop"):
        raise _Dropped
    return reply


def _gemini_chunks(reply: Reply, user_text: str, last_output: str = "") -> list[tuple[str, Any]]:
    """A reply as ("part", part) / ("sleep", s) / ("hang", None) / ("touch", path) in order."""
    out: list[tuple[str, Any]] = []
    for event in reply:
        if "text" in event:
            pieces = event["text"] if isinstance(event["text"], list) else [event["text"]]
            out.extend(("part", {"text": str(p)}) for p in pieces)
        elif "thought" in event:
            out.append(("part", {"text": str(event["thought"]), "thought": True}))
        elif event.get("echo"):
            out.append(("part", {"text": user_text}))
        elif event.get("tool_result"):
            out.append(("part", {"text": "tool result: " + tool_output(last_output)}))
        elif event.get("verdict"):
            out.append(("part", {"text": "DENIED" if _DENIED.search(last_output) else "PERMITTED"}))
        elif "call" in event:
            call = event["call"]
            out.append(("part", {"functionCall": {"name": call["name"], "args": call.get("args", {})}}))
        elif "sleep" in event:
            out.append(("sleep", float(event["sleep"])))
        elif event.get("hang"):
            out.append(("hang", None))
        elif "touch" in event:
            out.append(("touch", str(event["touch"])))
        elif "flood" in event:
            flood = event["flood"]
            piece = {"text": str(flood.get("text", "x"))}
            out.extend(("part", piece) for _ in range(int(flood.get("chunks", 1000))))
    return out


def _gemini_frame(parts: list[dict[str, Any]], usage: dict[str, int] | None, *, final: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if final:
        candidate["finishReason"] = "STOP"
    frame: dict[str, Any] = {"candidates": [candidate], "modelVersion": "fake-model"}
    if usage is not None:
        meta = {
            "promptTokenCount": usage["input"],
            "candidatesTokenCount": usage["output"],
            "totalTokenCount": usage["input"] + usage["output"] + usage["thoughts"],
        }
        if usage["thoughts"]:
            meta["thoughtsTokenCount"] = usage["thoughts"]
        if usage["cached"]:
            meta["cachedContentTokenCount"] = usage["cached"]
        frame["usageMetadata"] = meta
    return frame


def _openai_call(i: int, call: dict[str, Any], index: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": f"call_{i}_{call['name']}",
        "type": "function",
        "function": {"name": call["name"], "arguments": json.dumps(call.get("args", {}))},
    }
    if index:
        out["index"] = i
    return out


# ---------------------------------------------------------------------------
# the executable
# ---------------------------------------------------------------------------


async def main_async(args: argparse.Namespace) -> None:
    server = Server(load_script(args.script), Path(args.log) if args.log else None, args.api_key)
    listeners = await trio.open_tcp_listeners(args.port, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:  # noqa: ASYNC230 - once, before serving
            f.write(str(port))
        os.replace(tmp, args.port_file)
    print(f"fake model API listening on http://127.0.0.1:{port}", file=sys.stderr, flush=True)
    await trio.serve_listeners(server.serve, listeners)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agy_host.testing.models.api", description=__doc__.split("\n")[0])
    parser.add_argument("--script", default='{"turns": [[[{"echo": true}]]]}', help="script file or JSON")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", help="write the port here once listening")
    parser.add_argument("--log", help="append every request here, one JSON line each")
    parser.add_argument("--api-key", help="refuse requests without this key (401)")
    args = parser.parse_args(argv)
    try:
        trio.run(main_async, args)
    except KeyboardInterrupt:
        return 130
    return 0


# ---------------------------------------------------------------------------
# for tests: the server as a child process
# ---------------------------------------------------------------------------


class ModelApiProcess:
    """``python -m agy_host.testing.models.api`` as a child of the test:
    ``url`` once it listens, ``requests()`` what it was sent, ``close()``."""

    def __init__(self, workdir: Path, script: dict[str, Any], *, api_key: str | None = None) -> None:
        import subprocess
        import time

        workdir.mkdir(parents=True, exist_ok=True)
        self.script_path = workdir / "model-script.json"
        self.script_path.write_text(json.dumps(script))
        self.log_path = workdir / "model-requests.jsonl"
        port_file = workdir / "model-port"
        port_file.unlink(missing_ok=True)
        argv = [sys.executable, "-m", "agy_host.testing.models.api", "--script", str(self.script_path)]
        argv += ["--port-file", str(port_file), "--log", str(self.log_path)]
        if api_key is not None:
            argv += ["--api-key", api_key]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not port_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("the fake model API did not start")
            time.sleep(0.02)
        self.port = int(port_file.read_text())
        self.url = f"http://127.0.0.1:{self.port}"

    def requests(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines() if line.strip()]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except Exception:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> ModelApiProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    raise SystemExit(main())
