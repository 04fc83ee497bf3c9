"""The agent child process: its own process group, stderr always drained.

Three field lessons shape this module:

* stderr must be read continuously. A client that pipes stderr without reading
  it hangs as soon as the agent writes 64 KiB (the official Python SDK does).
  We keep only a bounded tail (8192 chars) for error messages and doctor, and
  pass each line to a callback (Antigravity may print its sign-in URL there).
* Kill the **process group**, not the pid: a Node wrapper (``npx``) or
  ``sh -c`` leaves the real agent running when only the wrapper dies, and some
  agents ignore SIGTERM and stdin EOF. We send SIGTERM to the group, wait a
  grace, then SIGKILL the group.
* Exit is observed per process object, so a slow-dying old agent can never be
  mistaken for its replacement (the caller compares process objects).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence

import trio

STDERR_TAIL_CHARS = 8192


#: The agent's stdout pipe is grown to this (Linux ``F_SETPIPE_SZ``; the
#: default is 64 KiB): a flooding agent blocks less often and the reader
#: takes bigger reads, so fewer wake-ups on both sides.
PIPE_SIZE = 1024 * 1024


def _grow_pipe(stream: object) -> None:
    """Best effort: an unprivileged process may be refused past
    ``/proc/sys/fs/pipe-max-size``, and other systems have no such knob."""
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None)
    fileno = getattr(stream, "fileno", None)
    if setsize is None or fileno is None:
        return
    with contextlib.suppress(OSError, ValueError):
        fcntl.fcntl(fileno(), setsize, PIPE_SIZE)


class SpawnError(Exception):
    """The agent command could not be started at all."""


class AgentProcess:
    """A running agent. Create with :meth:`spawn`."""

    def __init__(self, proc: trio.Process, command: Sequence[str], on_stderr_line: Callable[[str], None]) -> None:
        self._proc = proc
        self.command = list(command)
        self.pid = proc.pid
        self._on_stderr_line = on_stderr_line
        self._tail = ""
        self.exited = trio.Event()
        self.returncode: int | None = None
        assert proc.stdin is not None and proc.stdout is not None
        self.stdin: trio.abc.SendStream = proc.stdin
        self.stdout: trio.abc.ReceiveStream = proc.stdout

    @classmethod
    async def spawn(
        cls,
        nursery: trio.Nursery,
        command: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        on_stderr_line: Callable[[str], None] = lambda _line: None,
    ) -> AgentProcess:
        """Start ``command`` and its stderr/exit watchers in ``nursery``."""
        agent = await cls.open(command, cwd=cwd, env=env, on_stderr_line=on_stderr_line)
        agent.start_watchers(nursery)
        return agent

    def start_watchers(self, nursery: trio.Nursery) -> None:
        """Drain stderr and watch for exit; both end when the process does."""
        nursery.start_soon(self._drain_stderr)
        nursery.start_soon(self._wait)

    @classmethod
    async def open(
        cls,
        command: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        on_stderr_line: Callable[[str], None] = lambda _line: None,
    ) -> AgentProcess:
        """Start ``command`` in a new session (process group) with piped stdio."""
        if not command:
            raise SpawnError("empty agent command")
        try:
            proc = await trio.lowlevel.open_process(
                list(command),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=dict(env) if env is not None else None,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise SpawnError(f"agent command not found: {command[0]!r}") from exc
        except PermissionError as exc:
            raise SpawnError(f"agent command is not executable: {command[0]!r} ({exc.strerror})") from exc
        except OSError as exc:
            raise SpawnError(f"could not start {command[0]!r}: {exc}") from exc
        _grow_pipe(proc.stdout)
        return cls(proc, command, on_stderr_line)

    # -- background tasks ------------------------------------------------------------

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
            text = data.decode("utf-8", "replace")
            self._tail = (self._tail + text)[-STDERR_TAIL_CHARS:]
            chunk = partial + data
            lines = chunk.split(b"\n")
            partial = lines.pop()
            if len(partial) > 65536:
                partial = b""
            for line in lines:
                with contextlib.suppress(Exception):
                    self._on_stderr_line(line.decode("utf-8", "replace").rstrip("\r"))
        if partial:
            with contextlib.suppress(Exception):
                self._on_stderr_line(partial.decode("utf-8", "replace"))

    async def _wait(self) -> None:
        self.returncode = await self._proc.wait()
        self.exited.set()

    # -- queries ---------------------------------------------------------------

    def stderr_tail(self, chars: int = STDERR_TAIL_CHARS) -> str:
        return self._tail[-chars:]

    @property
    def alive(self) -> bool:
        return not self.exited.is_set()

    # -- shutdown ----------------------------------------------------------------

    def _signal_group(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            if self.alive:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, sig)

    async def close_stdin(self) -> None:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await self.stdin.aclose()

    async def terminate(self, grace: float = 0.75) -> None:
        """SIGTERM the group, SIGKILL it after ``grace`` seconds; also reaps
        leftover children of the group once the leader is gone."""
        with trio.CancelScope(shield=True):
            if self.alive:
                self._signal_group(signal.SIGTERM)
                with trio.move_on_after(grace):
                    await self.exited.wait()
            self._signal_group(signal.SIGKILL)
            with trio.move_on_after(5):
                await self.exited.wait()

    async def shutdown(self, grace: float = 0.75) -> None:
        """A polite end: close stdin (many agents exit on EOF), then terminate."""
        with trio.CancelScope(shield=True):
            await self.close_stdin()
            with trio.move_on_after(grace):
                await self.exited.wait()
            await self.terminate(grace)


__all__ = ["STDERR_TAIL_CHARS", "AgentProcess", "SpawnError"]
