"""The wire trace: every frame an engine exchanges with its agent, on disk.

When a real agent misbehaves, the first thing anyone needs is its traffic.
``agy-host run --trace FILE`` (or ``AGY_HOST_TRACE=FILE``, or
``open_session(trace=FILE)``) appends one JSON line per frame, on every
engine::

    {"time": 1767225600.123, "engine": "acp", "dir": "out", "frame": {...}}

``time`` is unix seconds with milliseconds; ``dir`` is ``out`` (agy-host to
the agent), ``in`` (the agent to agy-host) or ``stderr`` (a line the agent
printed there); ``frame`` is the decoded JSON value when the frame is JSON,
else its text. Secrets are redacted (:mod:`agy_host.engine.redact`), so the
file can be attached to a bug report.

Engines get the host's :class:`WireTrace` through
:attr:`~agy_host.engine.base.EngineContext.trace` (``None`` when tracing is
off: the hot path pays one ``is None`` check) and write through their
:class:`TraceTap` (:meth:`~agy_host.engine.base.Engine.wire_trace`). Lines
are appended with line buffering, one ``write`` each, so a crash loses at
most the line being written; the file is created ``0600`` (it holds what the
agent was told, code and prompts included). A trace that can no longer be
written (a full disk) stops tracing instead of failing the turn.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Iterable, Mapping
from typing import IO, Any, Literal

import msgspec

from agy_host.engine.redact import Redactor, env_secrets, value_secrets

#: The environment variable that turns tracing on for every command.
TRACE_ENV = "AGY_HOST_TRACE"

Direction = Literal["in", "out", "stderr"]

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()


def trace_target(given: str | os.PathLike[str] | None, env: Mapping[str, str]) -> str | None:
    """Where the trace goes: the path given (``--trace``, ``trace=``), else
    ``$AGY_HOST_TRACE``; ``None`` when tracing is off."""
    if given:
        return os.fspath(given)
    return env.get(TRACE_ENV, "").strip() or None


class WireTrace:
    """One trace file, shared by every engine of a host. Open with :meth:`open`."""

    def __init__(self, stream: IO[str], path: str, *, secrets: Iterable[str] = ()) -> None:
        self._stream: IO[str] | None = stream
        self.path = path
        self.redactor = Redactor(secrets)
        #: Why the trace stopped being written (a failed write), if it did.
        self.error = ""

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        env: Mapping[str, str] | None = None,
        config: object = None,
        secrets: Iterable[str] = (),
    ) -> WireTrace:
        """Append to ``path`` (created ``0600``; a regular file that exists is
        made ``0600`` too). The values of ``env``'s sensitive variables, of
        ``config``'s sensitive keys (the host's config) and ``secrets`` are
        redacted wherever they appear. Raises :class:`OSError`."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        try:
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode) and info.st_mode & 0o077:
                os.fchmod(fd, 0o600)
            stream = os.fdopen(fd, "a", encoding="utf-8", errors="replace", buffering=1)
        except BaseException:
            os.close(fd)
            raise
        known = [*env_secrets(env or {}), *value_secrets(msgspec.to_builtins(config)), *secrets]
        return cls(stream, os.fspath(path), secrets=known)

    @property
    def on(self) -> bool:
        """Still being written."""
        return self._stream is not None

    def add_secrets(self, secrets: Iterable[str]) -> None:
        """Values learnt at run time (a token drawn, a key the agent handed out)."""
        self.redactor.add(secrets)

    def tap(self, engine: str) -> TraceTap:
        """The view one engine writes through (its name on every line)."""
        return TraceTap(self, engine)

    def record(self, engine: str, direction: Direction, frame: bytes | str | Any) -> None:
        """One frame: raw bytes or text (decoded when it is JSON), or a value
        already decoded (a summary of a binary message)."""
        stream = self._stream
        if stream is None:
            return
        entry = {
            "time": round(time.time(), 3),
            "engine": engine,
            "dir": direction,
            "frame": self.redactor.value(_decoded(frame)),
        }
        try:
            stream.write(_encoder.encode(entry).decode("utf-8") + "\n")
        except (OSError, ValueError) as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            self.close()

    def close(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


class TraceTap:
    """One engine's pen on the host's :class:`WireTrace`."""

    __slots__ = ("engine", "trace")

    def __init__(self, trace: WireTrace, engine: str) -> None:
        self.trace = trace
        self.engine = engine

    def sent(self, frame: bytes | str | Any) -> None:
        """A frame agy-host sent the agent."""
        self.trace.record(self.engine, "out", frame)

    def received(self, frame: bytes | str | Any) -> None:
        """A frame the agent sent agy-host."""
        self.trace.record(self.engine, "in", frame)

    def stderr(self, line: str) -> None:
        """A line the agent printed on its stderr."""
        self.trace.record(self.engine, "stderr", line)

    def add_secrets(self, secrets: Iterable[str]) -> None:
        self.trace.add_secrets(secrets)


def _decoded(frame: bytes | str | Any) -> Any:
    """The JSON value of a raw frame, else its text (newline removed)."""
    if isinstance(frame, (bytes, bytearray, memoryview)):
        raw = bytes(frame).rstrip(b"\r\n")
    elif isinstance(frame, str):
        raw = frame.rstrip("\r\n").encode("utf-8", "surrogateescape")
    else:
        return frame
    try:
        return _decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return raw.decode("utf-8", "replace")


__all__ = ["TRACE_ENV", "Direction", "TraceTap", "WireTrace", "trace_target"]
