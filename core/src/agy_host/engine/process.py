"""What every engine needs from an agent child process, written once.

Engines differ in what they say to their agent (JSON-RPC, agy's events) but
not in how a child is kept under control, and the field lessons apply to
all of them:

* **Line framing that is linear.** Pipe reads are not aligned to newlines,
  and a line may be far bigger than a read (64 MiB is allowed). A partial
  line is kept as a list of pieces and joined once, when its newline
  arrives: re-concatenating the partial on every read is quadratic (a
  64 MiB line in 64 KiB reads copied about 32 GiB). A line longer than the
  limit is refused as soon as it is known to be too long, and the rest of
  it is skipped up to its newline, so the next line is read intact.
* **Its own process group.** A wrapper (``npx``, ``sh -c``) leaves the real
  agent running when only the wrapper dies, and some agents ignore SIGTERM
  and stdin EOF: the child starts a new session, and a kill is SIGTERM to
  the group, a grace, then SIGKILL to the group (:class:`GroupChild`).
* **stderr is always drained.** A client that pipes stderr without reading
  it hangs as soon as the agent writes 64 KiB (the official Python SDK
  does); a bounded tail is kept for error messages and doctor, and each line
  goes to the engine (agents print sign-in URLs and failures there).
* **Exit is observed per process object**, so a slow-dying old agent is
  never mistaken for its replacement (callers compare the objects).
* **Teardown never depends on the watcher task.** A command that is ending
  cancels its tasks, the exit watcher among them; :meth:`GroupChild.terminate`
  waits on the process itself, so an agent that is already gone (or dies of
  the SIGKILL) ends the wait at once instead of running out its bounds.
* **Every live child is known to the process** (:func:`kill_every_group`),
  so a host that leaves at once (a third Ctrl-C) SIGKILLs its agents' groups
  first and orphans none.
* **A child may have been started ahead** (:mod:`agy_host.engine.ahead`):
  :func:`open_in_own_group` adopts the one the command started before its
  imports when it is this very command, started the same way.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import trio

from agy_host.engine.ahead import Ahead, adopt, discard, pending

if TYPE_CHECKING:
    from agy_host.engine.trace import TraceTap

log = logging.getLogger(__name__)

#: How much of the agent's stderr is kept for error messages and doctor.
STDERR_TAIL_CHARS = 8192
#: A stderr "line" longer than this without a newline is dropped, not kept.
MAX_STDERR_LINE = 65536

#: SIGTERM to the group, then SIGKILL after this many seconds (the default).
KILL_GRACE_S = 0.5

#: The longest line accepted from an agent (64 MiB, like other ACP clients).
MAX_LINE_BYTES = 64 * 1024 * 1024


class LineSplitter:
    """Bytes in, complete lines out (split on ``\\n`` only, newline removed).

    :meth:`feed` returns the complete lines of one read (empty lines
    included; callers decide) and how many lines were refused for exceeding
    :attr:`max_line` during that read; a refusal is counted once, when it is
    detected, and the refused line's remaining bytes are discarded up to its
    newline.
    """

    __slots__ = ("_discarding", "_parts", "_size", "max_line")

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self.max_line = max_line
        self._parts: list[bytes] = []
        self._size = 0
        self._discarding = False

    def feed(self, data: bytes | bytearray | memoryview) -> tuple[list[bytes], int]:
        chunk = data if type(data) is bytes else bytes(data)
        refused = 0
        if self._discarding:
            nl = chunk.find(b"\n")
            if nl < 0:
                return [], 0
            chunk = chunk[nl + 1 :]
            self._discarding = False
        # One split of the whole read (a flood's hot path: no copy of the
        # read after its first line, no second scan for that line's end).
        lines = chunk.split(b"\n")
        tail = lines.pop()
        if not lines:
            return [], self._keep(tail)
        if self._parts:
            head = lines[0]
            if self._size + len(head) > self.max_line:
                del lines[0]
                refused += 1
            else:
                self._parts.append(head)
                lines[0] = b"".join(self._parts)
            self._parts, self._size = [], 0
        elif len(lines[0]) > self.max_line:
            del lines[0]
            refused += 1
        if len(chunk) > self.max_line:
            kept = [line for line in lines if len(line) <= self.max_line]
            refused += len(lines) - len(kept)
            lines = kept
        refused += self._keep(tail)
        return lines, refused

    def _keep(self, piece: bytes) -> int:
        """Hold a piece of the unterminated line; 1 when that makes it too long."""
        if not piece:
            return 0
        self._size += len(piece)
        if self._size > self.max_line:
            self._parts, self._size = [], 0
            self._discarding = True
            return 1
        self._parts.append(piece)
        return 0

    @property
    def pending(self) -> bytes:
        """The unterminated line so far (``b""`` while a refused line is skipped)."""
        return b"".join(self._parts)

    def flush(self) -> bytes:
        """The unterminated line at EOF (a line the agent did not finish is still a line)."""
        tail = self.pending
        self._parts, self._size, self._discarding = [], 0, False
        return tail


class SpawnError(Exception):
    """The agent command could not be started at all."""


def _check_spawnable(argv: Sequence[str], cwd: str | None, what: str) -> None:
    if not argv:
        raise SpawnError(f"empty {what}")
    if cwd is not None and not os.path.isdir(cwd):
        # open_process reports a missing cwd as FileNotFoundError, which
        # would read as "command not found".
        raise SpawnError(f"the working directory does not exist: {cwd}")


async def open_in_own_group(
    argv: Sequence[str], *, cwd: str | None, env: Mapping[str, str] | None, what: str
) -> trio.Process:
    """Start ``argv`` with piped stdio in a new session (its own process
    group), or adopt the child started ahead as exactly that. ``what`` names
    the command in errors (``agy``, ``agent command``)."""
    _check_spawnable(argv, cwd, what)
    ahead = adopt(argv, cwd=cwd, env=env)
    if ahead is not None:
        proc = _adopted(ahead)
        if proc is not None:
            return proc
    try:
        return await trio.lowlevel.open_process(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise SpawnError(f"{what} not found: {argv[0]!r}") from exc
    except PermissionError as exc:
        raise SpawnError(f"{what} is not executable: {argv[0]!r} ({exc.strerror})") from exc
    except OSError as exc:
        raise SpawnError(f"could not start {argv[0]!r}: {exc}") from exc


def _adopted(ahead: Ahead) -> trio.Process | None:
    """The child started ahead as a :class:`trio.Process`, built the way
    :func:`trio.lowlevel.open_process` builds the one it starts (the
    ``Popen`` and trio streams on the parent's pipe ends). trio offers no
    public constructor for that; a trio without this one gets the child
    ended and a new one started (``None``)."""
    create = getattr(trio.Process, "_create", None)
    if create is None:
        ahead.end()
        return None
    try:
        streams = [trio.lowlevel.FdStream(fd) for fd in (ahead.stdin, ahead.stdout, ahead.stderr)]
    except OSError:
        ahead.end()
        return None
    proc: trio.Process = create(ahead.popen, *streams)
    return proc


class GroupChild:
    """A child in its own process group: stderr drained into a bounded tail,
    exit watched, and a group kill. Engines subclass it for their stdout.

    Subclasses override :meth:`on_stderr_line` and :meth:`on_exited`; the
    engine starts :meth:`drain_stderr` and :meth:`wait` in its nursery, after
    setting :attr:`trace` when the host traces the wire."""

    def __init__(self, proc: trio.Process) -> None:
        self._proc = proc
        self.pid = proc.pid
        #: The engine's wire trace: every stderr line is written there too.
        self.trace: TraceTap | None = None
        self._tail = ""
        self.returncode: int | None = None
        self.exited = trio.Event()
        self.stderr_done = trio.Event()
        _LIVE.add(self)

    # -- hooks -------------------------------------------------------------------

    def on_stderr_line(self, line: str) -> None:
        """One line of stderr (``\r`` stripped). Runs on the reader: never waits."""

    def on_exited(self) -> None:
        """The process has exited (:attr:`returncode` is set)."""

    # -- background tasks ------------------------------------------------------------

    async def drain_stderr(self) -> None:
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
            if len(partial) > MAX_STDERR_LINE:
                partial = b""
            for part in parts:
                self._stderr_line(part)
        if partial:
            self._stderr_line(partial)
        self.stderr_done.set()

    def _stderr_line(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip("\r")
        if self.trace is not None:
            self.trace.stderr(line)
        try:
            self.on_stderr_line(line)
        except Exception:  # a bug in a callback must not stop the draining
            log.exception("handling the agent's stderr failed")

    async def wait(self) -> None:
        self._mark_exited(await self._proc.wait())

    def _mark_exited(self, code: int) -> None:
        if self.exited.is_set():
            return
        self.returncode = code
        self.exited.set()
        _LIVE.discard(self)
        try:
            self.on_exited()
        except Exception:
            log.exception("handling the agent's exit failed")

    async def exited_within(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for the process to exit; whether it did.

        Waits on the process itself, not on :meth:`wait`'s task, which a
        command that is ending may already have cancelled."""
        if self.exited.is_set():
            return True
        with trio.move_on_after(seconds):
            self._mark_exited(await self._proc.wait())
        return self.exited.is_set()

    # -- queries ---------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return not self.exited.is_set()

    def stderr_tail(self, chars: int = STDERR_TAIL_CHARS) -> str:
        return self._tail[-chars:]

    # -- shutdown --------------------------------------------------------------------

    def _signal_group(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            if self.alive:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, sig)

    async def terminate(self, grace: float = KILL_GRACE_S) -> None:
        """SIGTERM the group, SIGKILL it after ``grace`` seconds; the SIGKILL
        also reaps what the group left behind once the leader is gone."""
        with trio.CancelScope(shield=True):
            if self.alive:
                self._signal_group(signal.SIGTERM)
                await self.exited_within(grace)
            self._signal_group(signal.SIGKILL)
            await self.exited_within(5)

    def kill_now(self) -> None:
        """SIGKILL the group at once, without waiting (a host leaving now)."""
        if self.alive:
            self._signal_group(signal.SIGKILL)

    async def close_stdin(self) -> None:
        stream = self._proc.stdin
        if stream is not None:
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                await stream.aclose()

    async def end(self, *, eof_grace: float, kill_grace: float = KILL_GRACE_S) -> None:
        """The polite end, bounded: close stdin (most agents exit on EOF and
        save their state first), give them ``eof_grace``, then
        :meth:`terminate`. Shielded: an ending command still ends its agent."""
        with trio.CancelScope(shield=True):
            await self.close_stdin()
            await self.exited_within(eof_grace)
            await self.terminate(kill_grace)


def kill_every_group() -> int:
    """SIGKILL the group of every live agent child of this process, without
    waiting; how many. For a host about to ``os._exit``: nothing it started
    may outlive it. (A per-process registry, as the children are.)"""
    live = [child for child in list(_LIVE) if child.alive]
    for child in live:
        child.kill_now()
    waiting = pending()
    discard(wait=False)
    return len(live) + waiting


#: Live children of this process (weak: a child that is dropped unwaited is no one's).
_LIVE: weakref.WeakSet[GroupChild] = weakref.WeakSet()


__all__ = [
    "KILL_GRACE_S",
    "MAX_LINE_BYTES",
    "STDERR_TAIL_CHARS",
    "GroupChild",
    "LineSplitter",
    "SpawnError",
    "kill_every_group",
    "open_in_own_group",
]
