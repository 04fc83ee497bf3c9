"""One ``agy`` child: its own process group, stdout parsed line by line,
stderr always drained.

* The child runs in a new session, so a kill reaches everything it started
  (agy runs tools as children; a wrapper script may sit in front of it):
  SIGTERM to the group, a grace, then SIGKILL to the group.
* stdout is read by one task that splits lines (:class:`~.wire.LineBuffer`),
  decodes each once (:func:`~.wire.parse`) and hands it to the sink. Callbacks
  are synchronous: they run on the hot path and must not wait.
* stderr is read continuously (a child blocked on a full stderr pipe would
  look like a stall) into a bounded tail, and each line goes to the sink,
  because agy states failures there (``error: ...``, ``AGY_ERROR: {...}``).
* Every callback carries the process object, so the driver can ignore a dead
  child's late output by comparing generations.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import Protocol

import trio

from agy_host_stream_json.profile import Profile
from agy_host_stream_json.wire import Event, LineBuffer, Unknown, parse

log = logging.getLogger(__name__)

STDERR_TAIL_CHARS = 8192


class SpawnError(Exception):
    """agy could not be started at all."""


def _check_cwd(cwd: str) -> None:
    # open_process reports a missing cwd as FileNotFoundError, which would
    # read as "agy not found".
    if not os.path.isdir(cwd):
        raise SpawnError(f"the working directory does not exist: {cwd}")


class Sink(Protocol):
    def on_chunk(self, child: AgyProcess) -> None: ...
    def on_event(self, child: AgyProcess, event: Event) -> None: ...
    def on_stderr(self, child: AgyProcess, line: str) -> None: ...
    def on_eof(self, child: AgyProcess) -> None: ...
    def on_exit(self, child: AgyProcess) -> None: ...


class AgyProcess:
    """A running agy. Create with :meth:`spawn`."""

    def __init__(self, proc: trio.Process, argv: Sequence[str], generation: int, profile: Profile, sink: Sink) -> None:
        self._proc = proc
        self.argv = list(argv)
        self.pid = proc.pid
        self.generation = generation
        self.profile = profile
        self._sink = sink
        self._tail = ""
        #: The agy conversation this process is in (``--conversation``, then init).
        self.conversation_id: str | None = None
        #: From init: ``request-review`` or ``always-proceed``; the tool count.
        self.permission_mode: str | None = None
        self.tools: int | None = None
        self.resumed = False
        self.returncode: int | None = None
        self.exited = trio.Event()
        self.stdout_done = trio.Event()
        self.stderr_done = trio.Event()
        self.lines = 0
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self._stdin: trio.abc.SendStream = proc.stdin

    @classmethod
    async def spawn(
        cls,
        nursery: trio.Nursery,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str],
        generation: int,
        profile: Profile,
        sink: Sink,
    ) -> AgyProcess:
        """Start agy in its own process group; its readers run in ``nursery``."""
        _check_cwd(cwd)
        try:
            proc = await trio.lowlevel.open_process(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=dict(env),
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise SpawnError(f"agy not found: {argv[0]!r}") from exc
        except PermissionError as exc:
            raise SpawnError(f"agy is not executable: {argv[0]!r} ({exc.strerror})") from exc
        except OSError as exc:
            raise SpawnError(f"could not start {argv[0]!r}: {exc}") from exc
        child = cls(proc, argv, generation, profile, sink)
        nursery.start_soon(child._read_stdout)
        nursery.start_soon(child._drain_stderr)
        nursery.start_soon(child._wait)
        return child

    # -- readers ---------------------------------------------------------------

    async def _read_stdout(self) -> None:
        stream = self._proc.stdout
        assert stream is not None
        buf = LineBuffer()
        sink = self._sink
        while True:
            try:
                data = await stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            overflows = buf.overflows
            lines = buf.feed(data) if data else buf.flush()
            try:
                if data:
                    sink.on_chunk(self)
                if buf.overflows != overflows:
                    sink.on_event(self, Unknown(reason="too-long", head=f"a line over {buf.max_line} bytes"))
                for line in lines:
                    self.lines += 1
                    sink.on_event(self, parse(line))
            except Exception:  # a bug in a callback must not take the reader down
                log.exception("stream-json: handling agy output failed")
            if not data:
                break
        self.stdout_done.set()
        with contextlib.suppress(Exception):
            sink.on_eof(self)

    async def _drain_stderr(self) -> None:
        stream = self._proc.stderr
        assert stream is not None
        partial = b""
        while True:
            try:
                data = await stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                break
            if not data:
                break
            self._tail = (self._tail + data.decode("utf-8", "replace"))[-STDERR_TAIL_CHARS:]
            parts = (partial + data).split(b"\n")
            partial = parts.pop()
            if len(partial) > 65536:
                partial = b""
            for part in parts:
                self._stderr_line(part)
        if partial:
            self._stderr_line(partial)
        self.stderr_done.set()

    def _stderr_line(self, raw: bytes) -> None:
        try:
            self._sink.on_stderr(self, raw.decode("utf-8", "replace").rstrip("\r"))
        except Exception:
            log.exception("stream-json: handling agy stderr failed")

    async def _wait(self) -> None:
        self.returncode = await self._proc.wait()
        self.exited.set()
        with contextlib.suppress(Exception):
            self._sink.on_exit(self)

    # -- queries -----------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return not self.exited.is_set()

    def stderr_tail(self, chars: int = STDERR_TAIL_CHARS) -> str:
        return self._tail[-chars:]

    # -- writing and shutdown ------------------------------------------------------

    async def send(self, data: bytes) -> str | None:
        """Write to agy's stdin; the error text when it is gone (agy may have
        printed a result and exited before reading: its stdout still counts)."""
        try:
            await self._stdin.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            return str(exc) or type(exc).__name__
        return None

    async def close_stdin(self) -> None:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            await self._stdin.aclose()

    def _signal_group(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            if self.alive:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, sig)

    async def terminate(self, grace: float) -> None:
        """SIGTERM the group, SIGKILL it after ``grace``; also reaps what the
        group left behind once the leader is gone."""
        with trio.CancelScope(shield=True):
            if self.alive:
                self._signal_group(signal.SIGTERM)
                with trio.move_on_after(grace):
                    await self.exited.wait()
            self._signal_group(signal.SIGKILL)
            with trio.move_on_after(5):
                await self.exited.wait()

    async def finish(self, exit_grace: float, kill_grace: float) -> None:
        """The polite end: close stdin (agy exits after the current turn), let
        it exit and flush stderr, then make sure the group is gone."""
        with trio.CancelScope(shield=True):
            await self.close_stdin()
            with trio.move_on_after(exit_grace):
                await self.exited.wait()
                await self.stderr_done.wait()
            await self.terminate(kill_grace)


__all__ = ["STDERR_TAIL_CHARS", "AgyProcess", "Sink", "SpawnError"]
