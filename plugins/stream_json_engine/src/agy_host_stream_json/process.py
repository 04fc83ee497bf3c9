"""One ``agy`` child: core's process-group child, stdout parsed line by line.

* Process group, group kill, the stderr tail and exit watching are core's
  (:class:`agy_host.engine.process.GroupChild`, shared with the ACP engine):
  a kill reaches everything agy started (it runs tools as children; a
  wrapper script may sit in front of it).
* stdout is read by one task that splits lines (:class:`~.wire.LineBuffer`),
  decodes each once (:func:`~.wire.parse`) and hands it to the sink. Callbacks
  are synchronous: they run on the hot path and must not wait.
* stderr is read continuously (a child blocked on a full stderr pipe would
  look like a stall) into a bounded tail, and each line goes to the sink,
  because agy states failures there (``error: ...``, ``AGY_ERROR: {...}``).
* Every callback carries the process object, so the driver can ignore a dead
  child's late output by comparing generations.
* With a wire trace (``--trace``), every stdin line written and every stdout
  line read is traced (stderr lines by core's child).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import trio

from agy_host.engine.process import STDERR_TAIL_CHARS, GroupChild, SpawnError, open_in_own_group
from agy_host_stream_json.profile import Profile
from agy_host_stream_json.wire import Event, LineBuffer, Unknown, parse

if TYPE_CHECKING:
    from agy_host.engine.trace import TraceTap

log = logging.getLogger(__name__)


class Sink(Protocol):
    def on_chunk(self, child: AgyProcess) -> None: ...
    def on_event(self, child: AgyProcess, event: Event) -> None: ...
    def on_stderr(self, child: AgyProcess, line: str) -> None: ...
    def on_eof(self, child: AgyProcess) -> None: ...
    def on_exit(self, child: AgyProcess) -> None: ...


class AgyProcess(GroupChild):
    """A running agy. Create with :meth:`spawn`."""

    def __init__(self, proc: trio.Process, argv: Sequence[str], generation: int, profile: Profile, sink: Sink) -> None:
        super().__init__(proc)
        self.argv = list(argv)
        self.generation = generation
        self.profile = profile
        self._sink = sink
        #: The agy conversation this process is in (``--conversation``, then init).
        self.conversation_id: str | None = None
        #: From init: ``request-review`` or ``always-proceed``; the tool count.
        self.permission_mode: str | None = None
        self.tools: int | None = None
        self.resumed = False
        #: agy printed its ``init`` line: the conversation it was given (or a new one) is open.
        self.initialized = False
        self.stdout_done = trio.Event()
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
        trace: TraceTap | None = None,
    ) -> AgyProcess:
        """Start agy in its own process group; its readers run in ``nursery``."""
        proc = await open_in_own_group(argv, cwd=cwd, env=env, what="agy")
        child = cls(proc, argv, generation, profile, sink)
        child.trace = trace
        nursery.start_soon(child._read_stdout)
        nursery.start_soon(child.drain_stderr)
        nursery.start_soon(child.wait)
        return child

    # -- readers ---------------------------------------------------------------

    async def _read_stdout(self) -> None:
        stream = self._proc.stdout
        assert stream is not None
        buf = LineBuffer()
        while True:
            try:
                data = await stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            self._handle(buf, data)
            if not data:
                break
        self.stdout_done.set()
        with contextlib.suppress(Exception):
            self._sink.on_eof(self)

    def _handle(self, buf: LineBuffer, data: bytes | bytearray) -> None:
        """One read's lines, to the sink. A function of its own so that no line
        outlives its handling: the ``result`` line repeats the whole answer,
        and as a local of the read loop it stayed alive (megabytes, on a long
        answer) while the turn's outcome was delivered, until the next read."""
        sink = self._sink
        overflows = buf.overflows
        lines = buf.feed(data) if data else buf.flush()
        if self.trace is not None:
            for line in lines:
                self.trace.received(line)
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

    def on_stderr_line(self, line: str) -> None:
        self._sink.on_stderr(self, line)

    def on_exited(self) -> None:
        self._sink.on_exit(self)

    # -- writing and shutdown ------------------------------------------------------

    async def send(self, data: bytes) -> str | None:
        """Write to agy's stdin; the error text when it is gone (agy may have
        printed a result and exited before reading: its stdout still counts)."""
        if self.trace is not None:
            self.trace.sent(data)
        try:
            await self._stdin.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            return str(exc) or type(exc).__name__
        return None

    async def finish(self, exit_grace: float, kill_grace: float) -> None:
        """The polite end: close stdin (agy exits after the current turn), let
        it exit and flush stderr, then make sure the group is gone."""
        with trio.CancelScope(shield=True):
            await self.close_stdin()
            if await self.exited_within(exit_grace):
                with trio.move_on_after(min(exit_grace, 0.5)):
                    await self.stderr_done.wait()
            await self.terminate(kill_grace)


__all__ = ["STDERR_TAIL_CHARS", "AgyProcess", "Sink", "SpawnError"]
