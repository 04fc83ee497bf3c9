"""A blocking JSON-lines client for poking agent subprocesses in tests.

This is not the host's ACP client (that lives in the ACP engine and is what
the fakes exist to test). It is the smallest thing that can drive an agent
process from a plain synchronous test: write frames or raw bytes, read
frames with a timeout, answer the agent's requests. Stdout and stderr are
drained by threads so a chatty agent can never block on a full pipe, and
every timeout is a guard against hangs, not an assertion on speed.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

DEFAULT_TIMEOUT = 10.0


class RawOutput(str):
    """A stdout line that was not a JSON object (kept verbatim, without newline)."""


Message = dict[str, Any] | RawOutput


class AgentExited(Exception):
    """The agent closed stdout while a message was awaited."""


class AgentPipe:
    """Spawn ``command`` with piped stdio and talk JSON lines to it."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.timeout = timeout
        self.proc = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            cwd=cwd,
        )
        self._inbox: queue.Queue[Message | None] = queue.Queue()
        self._stderr: list[bytes] = []
        self._next_id = 1
        #: Every stdout message in arrival order (reads do not remove from it).
        self.messages: list[Message] = []
        #: Messages skipped over while waiting for something else.
        self.stash: list[Message] = []
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._threads = [
            threading.Thread(target=self._pump_stdout, args=(self.proc.stdout,), daemon=True),
            threading.Thread(target=self._pump_stderr, args=(self.proc.stderr,), daemon=True),
        ]
        for t in self._threads:
            t.start()

    # -- pumps -------------------------------------------------------------

    def _pump_stdout(self, stream: IO[bytes]) -> None:
        for raw in iter(stream.readline, b""):
            text = raw.decode("utf-8", "replace").rstrip("\r\n")
            msg: Message
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            msg = parsed if isinstance(parsed, dict) else RawOutput(text)
            self.messages.append(msg)
            self._inbox.put(msg)
        self._inbox.put(None)

    def _pump_stderr(self, stream: IO[bytes]) -> None:
        fd = stream.fileno()
        for chunk in iter(lambda: os.read(fd, 65536), b""):
            self._stderr.append(chunk)

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    # -- writing -----------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Raw bytes to the agent's stdin (for partial lines and garbage)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Mapping[str, Any]) -> None:
        self.write(json.dumps(message).encode("utf-8") + b"\n")

    def new_id(self) -> int:
        msg_id = self._next_id
        self._next_id += 1
        return msg_id

    def start_request(self, method: str, params: Any = None, *, msg_id: Any = None) -> Any:
        msg_id = self.new_id() if msg_id is None else msg_id
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            frame["params"] = params
        self.send(frame)
        return msg_id

    def notify(self, method: str, params: Any = None) -> None:
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            frame["params"] = params
        self.send(frame)

    def respond(self, msg_id: Any, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "result": result})

    def close_stdin(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass

    # -- reading -----------------------------------------------------------

    def read(self, timeout: float | None = None) -> Message:
        """The next stdout message; ``TimeoutError`` if none in time."""
        wait = self.timeout if timeout is None else timeout
        try:
            msg = self._inbox.get(timeout=wait)
        except queue.Empty:
            raise TimeoutError(f"no message from the agent within {wait}s; stderr: {self.stderr[-500:]!r}") from None
        if msg is None:
            self._inbox.put(None)  # keep reporting EOF
            raise AgentExited(f"agent closed stdout (exit {self.proc.poll()}); stderr: {self.stderr[-500:]!r}")
        return msg

    def read_until(self, predicate: Callable[[Message], bool], timeout: float | None = None) -> list[Message]:
        """Messages up to and including the first one ``predicate`` accepts."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        out: list[Message] = []
        while True:
            msg = self.read(max(0.0, deadline - time.monotonic()))
            out.append(msg)
            if predicate(msg):
                return out

    def wait_response(self, msg_id: Any, timeout: float | None = None) -> tuple[list[Message], dict[str, Any]]:
        """Messages before the response to ``msg_id``, and the response."""
        got = self.read_until(lambda m: isinstance(m, dict) and _is_response_to(m, msg_id), timeout)
        response = got.pop()
        assert isinstance(response, dict)
        return got, response

    def request(self, method: str, params: Any = None, *, timeout: float | None = None) -> dict[str, Any]:
        """Send a request and return its response; messages in between go to :attr:`stash`."""
        msg_id = self.start_request(method, params)
        before, response = self.wait_response(msg_id, timeout)
        self.stash.extend(before)
        return response

    def drain(self, quiet: float = 0.2) -> list[Message]:
        """Everything that arrives until the agent is quiet for ``quiet`` seconds."""
        out: list[Message] = []
        while True:
            try:
                out.append(self.read(quiet))
            except (TimeoutError, AgentExited):
                return out

    # -- ending ------------------------------------------------------------

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the exit status; then let the pumps drain, so :attr:`stderr`
        and :attr:`messages` hold everything the agent wrote."""
        code = self.proc.wait(self.timeout if timeout is None else timeout)
        for t in self._threads:
            t.join(2.0)
        return code

    def wait_stderr(self, text: str, timeout: float | None = None) -> str:
        """Block until ``text`` shows up on stderr (it arrives on its own pipe,
        so it can lag behind stdout); return all stderr so far."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while text not in self.stderr:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{text!r} not on the agent's stderr; got {self.stderr[-500:]!r}")
            time.sleep(0.01)
        return self.stderr

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(self.timeout)

    def close(self) -> None:
        self.close_stdin()
        try:
            self.proc.wait(2.0)
        except subprocess.TimeoutExpired:
            self.kill()
        for t in self._threads:
            t.join(2.0)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()

    def __enter__(self) -> AgentPipe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _is_response_to(msg: dict[str, Any], msg_id: Any) -> bool:
    return "method" not in msg and msg.get("id") == msg_id and ("result" in msg or "error" in msg)


def is_update(msg: Message, kind: str | None = None) -> bool:
    """A ``session/update`` notification (of ``sessionUpdate`` ``kind`` when given)."""
    if not isinstance(msg, dict) or msg.get("method") != "session/update":
        return False
    if kind is None:
        return True
    update = (msg.get("params") or {}).get("update") or {}
    return isinstance(update, dict) and update.get("sessionUpdate") == kind


def chunk_texts(messages: Sequence[Message], kind: str = "agent_message_chunk") -> list[str]:
    """The ``content.text`` of each update of ``kind``, in order."""
    out: list[str] = []
    for msg in messages:
        if is_update(msg, kind):
            assert isinstance(msg, dict)
            content = msg["params"]["update"].get("content") or {}
            out.append(str(content.get("text", "")))
    return out


__all__ = ["DEFAULT_TIMEOUT", "AgentExited", "AgentPipe", "Message", "RawOutput", "chunk_texts", "is_update"]
