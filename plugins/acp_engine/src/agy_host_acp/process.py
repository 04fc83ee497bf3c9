"""The ACP agent child: core's process-group child plus the ACP side's pipes.

The field lessons (own process group, stderr always drained, exit observed
per process object) live in :mod:`agy_host.engine.process`, shared with the
stream-json engine. What is ACP's own here: the JSON-RPC connection reads
``stdout`` and writes ``stdin`` itself, the stdout pipe is grown for floods,
and stderr lines go to a callback (Antigravity may print its sign-in URL
there).
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Callable, Mapping, Sequence

import trio

from agy_host.engine.process import KILL_GRACE_S, STDERR_TAIL_CHARS, GroupChild, SpawnError, open_in_own_group

#: The agent's stdout pipe is grown to this (Linux ``F_SETPIPE_SZ``; the
#: default is 64 KiB): a flooding agent blocks less often and the reader
#: takes bigger reads, so fewer wake-ups on both sides.
PIPE_SIZE = 1024 * 1024
#: How long an idle agent gets to leave after its stdin is closed.
EOF_GRACE_S = 0.25


def _grow_pipe(stream: object) -> None:
    """Best effort: an unprivileged process may be refused past
    ``/proc/sys/fs/pipe-max-size``, and other systems have no such knob."""
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None)
    fileno = getattr(stream, "fileno", None)
    if setsize is None or fileno is None:
        return
    with contextlib.suppress(OSError, ValueError):
        fcntl.fcntl(fileno(), setsize, PIPE_SIZE)


class AgentProcess(GroupChild):
    """A running agent. Create with :meth:`spawn` (or :meth:`open`, then
    :meth:`start_watchers`)."""

    def __init__(self, proc: trio.Process, command: Sequence[str], on_stderr_line: Callable[[str], None]) -> None:
        super().__init__(proc)
        self.command = list(command)
        self._on_stderr = on_stderr_line
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
        nursery.start_soon(self.drain_stderr)
        nursery.start_soon(self.wait)

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
        proc = await open_in_own_group(command, cwd=cwd, env=env, what="agent command")
        _grow_pipe(proc.stdout)
        return cls(proc, command, on_stderr_line)

    def on_stderr_line(self, line: str) -> None:
        self._on_stderr(line)

    async def shutdown(self, grace: float = KILL_GRACE_S) -> None:
        """A polite end: close stdin (many agents exit on EOF), then terminate
        (SIGTERM, ``grace``, SIGKILL). The agent is idle here (its turns have
        ended), and an idle agent that leaves on EOF does so in milliseconds:
        :data:`EOF_GRACE_S` is plenty, and keeps a Ctrl-C'd command under 1 s
        even for an agent that ignores both EOF and SIGTERM."""
        await self.end(eof_grace=min(EOF_GRACE_S, grace), kill_grace=grace)


__all__ = ["EOF_GRACE_S", "STDERR_TAIL_CHARS", "AgentProcess", "SpawnError"]
