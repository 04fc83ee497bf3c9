"""Pipe plumbing shared by the fake and the replay agent (stdlib + msgspec only).

Both agents are subprocesses a test may SIGKILL at any moment, and tests
assert on what the agent received. So the received-message log is written
with one unbuffered ``os.write`` per line on an ``O_APPEND`` descriptor: once
the agent has answered a message, its log line is on disk whatever happens
to the process next. Stdout goes through a lock because a prompt's worker
thread and the reader thread both write frames, and a frame must never be
interleaved with another.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from typing import Any, BinaryIO

import msgspec

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()


def encode(obj: Any) -> bytes:
    return _encoder.encode(obj)


def decode(data: bytes) -> Any:
    """Parse one JSON value; raise ``msgspec.DecodeError`` on bad input."""
    return _decoder.decode(data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class Output:
    """Frames to stdout, whole lines only, safe from any thread."""

    def __init__(self, fd: int = 1) -> None:
        self._fd = fd
        self._lock = threading.Lock()
        self.closed = False

    def write(self, data: bytes) -> None:
        with self._lock:
            try:
                _write_all(self._fd, data)
            except OSError:
                # The client stopped reading; nothing we write can matter now.
                self.closed = True
                os._exit(0)

    def send(self, message: Any) -> None:
        self.write(encode(message) + b"\n")

    def raw_line(self, text: str) -> None:
        self.write(text.encode("utf-8") + b"\n")


class MessageLog:
    """Append-only JSON-lines log of what the agent received (and did).

    Lines are the received frames byte for byte (they are JSON already), a
    non-JSON input line as ``{"_unparsed": text}``, and the agent's own
    observations as ``{"_fake": event, ...}``. Without a path it is a no-op.
    """

    def __init__(self, path: str | None) -> None:
        self._fd: int | None = None
        if path:
            parent = os.path.dirname(os.path.abspath(path))
            os.makedirs(parent, exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def received(self, line: bytes, parsed: bool) -> None:
        if self._fd is None:
            return
        if parsed:
            _write_all(self._fd, line.rstrip(b"\r\n") + b"\n")
        else:
            text = line.rstrip(b"\r\n").decode("utf-8", "replace")
            _write_all(self._fd, encode({"_unparsed": text}) + b"\n")

    def event(self, name: str, **fields: Any) -> None:
        if self._fd is None:
            return
        _write_all(self._fd, encode({"_fake": name, **fields}) + b"\n")


def stderr(text: str) -> None:
    """Write to stderr unbuffered, so it is there even if we ``os._exit`` next."""
    data = text if text.endswith("\n") else text + "\n"
    try:
        _write_all(2, data.encode("utf-8", "replace"))
    except OSError:
        pass


def stdin_lines(stream: BinaryIO | None = None) -> Iterator[bytes]:
    """Complete input lines; a trailing partial line is held until its newline
    (or yielded at EOF), because pipe reads are not aligned to frames."""
    source = stream if stream is not None else sys.stdin.buffer
    while True:
        line = source.readline()
        if not line:
            return
        yield line


def error_response(msg_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


def result_response(msg_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}


def notification(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


__all__ = [
    "MessageLog",
    "Output",
    "decode",
    "encode",
    "error_response",
    "notification",
    "result_response",
    "stderr",
    "stdin_lines",
]
