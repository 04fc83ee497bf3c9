"""The human at the terminal: one question at a time, on ``/dev/tty``, cancellable.

The ``ask`` permission policy and the bridge's ``ask_user`` tool both need a
person. Three choices here keep that safe:

* **``/dev/tty``, not stdin.** ``agy-host run`` may read its prompt from a
  pipe, and its stdout may be a pipe to a script; the controlling terminal is
  where a person actually is (``sudo`` and ``ssh`` ask there for the same
  reason). No controlling terminal (CI, a daemon) is :class:`NoTerminal`.
  ``AGY_HOST_TTY`` names another terminal (tests point it at a pty);
  ``AGY_HOST_TTY=none`` turns asking off.
* **No thread.** The terminal is opened as a *new* open file description
  with ``O_NONBLOCK`` and read through ``trio.lowlevel.wait_readable``. A
  question that is cancelled (the turn was aborted, the permission deadline
  passed) leaves no thread blocked in ``read()`` that would swallow the next
  line the user types. The shell's own descriptor keeps its blocking mode:
  the flag belongs to the description we opened, not to the terminal.
* **Only in the foreground.** A command started in the background (``&``)
  that read its terminal would be stopped by SIGTTIN, and stay stopped, its
  agent waiting for good. Without the terminal's foreground (its foreground
  process group is not ours) the terminal counts as absent: the no-terminal
  behaviour applies (``permissions.ask_fallback``, questions unanswered) and
  the reason says why. It is looked at before every read and write, so a
  job sent to the background mid-prompt (Ctrl-Z, ``bg``) stops asking too.
  A terminal that is not our controlling one (``AGY_HOST_TTY``) cannot stop
  us and is always used.
* **One question at a time, in order.** Every prompt queues for the
  terminal (:mod:`agy_host.service.terminal_queue`, one queue per process,
  whatever trio run asks), so a permission prompt and an ``ask_user``
  question never interleave, and each prompt says who else is waiting.

trio is imported when a question is asked, not when the plugin registers:
``agy-host plugins``, ``doctor`` and ``--help`` load this module and never ask.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import AsyncIterator, Mapping, Sequence

TTY_ENV = "AGY_HOST_TTY"
DEFAULT_TTY = "/dev/tty"
#: Invalid answers tolerated before a question counts as unanswered.
MAX_ATTEMPTS = 5
#: How often a prompt waiting for the person looks whether another session queued behind it.
QUEUE_POLL_S = 0.25
#: A line longer than this is cut (a paste gone wrong must not grow memory).
MAX_LINE = 64 * 1024


#: Why a command in the background does not ask (the rest of the sentence after "no terminal: ").
BACKGROUND = (
    "agy-host runs in the background: another job holds the terminal's foreground, "
    "and reading it would stop agy-host (SIGTTIN)"
)


class NoTerminal(Exception):
    """There is no terminal to ask on (or it went away mid-question)."""


def background(fd: int) -> str | None:
    """Why the terminal ``fd`` must not be read or written now (we are not
    in its foreground process group), or ``None``."""
    try:
        foreground = os.tcgetpgrp(fd)
    except OSError:
        return None  # not our controlling terminal: job control cannot stop us for it
    return None if foreground == os.getpgrp() else BACKGROUND


def tty_path(env: Mapping[str, str]) -> str | None:
    """The terminal to ask on, or ``None`` when asking is turned off."""
    value = env.get(TTY_ENV, "").strip()
    if value.lower() in {"none", "off", "0"}:
        return None
    return value or DEFAULT_TTY


def terminal_available(env: Mapping[str, str]) -> str | None:
    """``None`` when a terminal can be opened, else why not (for preflight checks)."""
    path = tty_path(env)
    if path is None:
        return f"asking is turned off (${TTY_ENV}=none)"
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError as exc:
        return f"no terminal to ask on ({path}: {exc.strerror or exc})"
    try:
        return background(fd)
    finally:
        os.close(fd)


class Terminal:
    """One open terminal; use :func:`open_terminal`."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = b""
        #: The prompt line last written (re-drawn after a "waiting" notice).
        self._prompt = ""
        #: How many askers waited behind this prompt when the person was last told.
        self._told = 0
        #: The cursor is at the start of a line (a prompt left unanswered is ended on leaving).
        self.at_line_start = True

    def _in_foreground(self) -> None:
        problem = background(self.fd)
        if problem is not None:
            raise NoTerminal(problem)

    def waiting_note(self) -> str:
        """A line naming the askers queued behind this prompt, or ``""``."""
        from agy_host.service.terminal_queue import QUEUE, waiting_note

        waiting = QUEUE.waiting()
        self._told = len(waiting)
        return waiting_note(waiting)

    async def _wait_readable(self) -> None:
        """Wait for a keystroke; meanwhile tell the person when another
        session starts waiting for the terminal (it is blocked on them)."""
        import trio

        from agy_host.service.terminal_queue import QUEUE

        while True:
            with trio.move_on_after(QUEUE_POLL_S):
                await trio.lowlevel.wait_readable(self.fd)
                return
            self._in_foreground()
            waiting = QUEUE.waiting()
            if len(waiting) > self._told:
                notes = "".join(f"\n  ({who} is waiting to ask too)" for who in waiting[self._told :])
                await self.write(f"{notes}\n{self._prompt}")
            self._told = len(waiting)

    async def write(self, text: str) -> None:
        self._prompt = text.rpartition("\n")[2]
        data = text.encode("utf-8", "replace")
        if data:
            self.at_line_start = text.endswith("\n")
        while data:
            self._in_foreground()
            try:
                n = os.write(self.fd, data)
            except BlockingIOError:
                import trio

                await trio.lowlevel.wait_writable(self.fd)
                continue
            except OSError as exc:
                raise NoTerminal(f"the terminal went away ({exc.strerror or exc})") from exc
            data = data[n:]

    async def read_line(self) -> str:
        """The next line typed (without its newline)."""
        while b"\n" not in self._buffer:
            self._in_foreground()
            try:
                chunk = os.read(self.fd, 4096)
            except BlockingIOError:
                await self._wait_readable()
                continue
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                raise NoTerminal(f"the terminal went away ({exc.strerror or exc})") from exc
            if not chunk:
                raise NoTerminal("the terminal closed (end of input)")
            self._buffer = (self._buffer + chunk)[-MAX_LINE:]
        line, _, self._buffer = self._buffer.partition(b"\n")
        self.at_line_start = True  # the person's Enter, echoed
        return line.decode("utf-8", "replace").rstrip("\r")

    def end_line(self) -> None:
        """A prompt left unanswered (cancelled, timed out) gets its line
        ended before the terminal is given back, so what is drawn next
        starts on a line of its own."""
        if not self.at_line_start and background(self.fd) is None:
            with contextlib.suppress(OSError):
                os.write(self.fd, b"\n")
        self.at_line_start = True

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


@contextlib.asynccontextmanager
async def open_terminal(env: Mapping[str, str], asker: str = "the agent") -> AsyncIterator[Terminal]:
    """The terminal, held for one question (others wait their turn); ``asker``
    names who asks, for the prompt that holds the terminal while this waits.

    Raises :class:`NoTerminal` when there is none (before queueing: a command
    without a terminal never waits behind one that has it).
    """
    from agy_host.service.terminal_queue import QUEUE

    path = tty_path(env)
    if path is None:
        raise NoTerminal(f"asking is turned off (${TTY_ENV}=none)")
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError as exc:
        raise NoTerminal(f"no terminal to ask on ({path}: {exc.strerror or exc})") from exc
    problem = background(fd)
    if problem is not None:
        os.close(fd)
        raise NoTerminal(problem)
    term = Terminal(fd)
    try:
        async with QUEUE.turn(asker):
            try:
                yield term
            finally:
                term.end_line()
    finally:
        term.close()


def deadline_note(bound_s: float | None) -> str:
    """A line saying how long the agent waits for this answer (the
    ``turn.permission_timeout_seconds`` bound, counted from when it asked),
    or ``""`` when it waits for ever."""
    import math

    if bound_s is None or not math.isfinite(bound_s) or bound_s <= 0:
        return ""
    from agy_host.engine.timers import minutes

    return f"  (the agent waits up to {minutes(bound_s)} for this answer, then it is cancelled)\n"


#: What :func:`choose` gives for an empty answer where Enter is offered (``enter``).
SKIPPED = -1


async def choose(
    term: Terminal, choices: Sequence[str], *, prompt: str, enter: str = "", zero: str = "0 for no answer"
) -> int | None:
    """Ask for one of ``choices`` by number (1-based); ``0`` or ``q`` means no
    answer. Returns the 0-based index, or ``None`` when the person declined
    or gave :data:`MAX_ATTEMPTS` answers that were not a choice. Where
    ``enter`` says what Enter does (an optional form field: ``Enter to
    skip``), an empty answer is :data:`SKIPPED`; ``zero`` says what ``0``
    does. Both are said again after an answer that was not a choice, as
    ``prompt`` should say them."""
    offered = ", ".join(part for part in (enter, zero) if part)
    for _ in range(MAX_ATTEMPTS):
        await term.write(prompt)
        answer = (await term.read_line()).strip().lower()
        if not answer and enter:
            return SKIPPED
        if answer in {"0", "q", "quit", "c", "cancel"}:
            return None
        if answer.isdigit() and 1 <= int(answer) <= len(choices):
            return int(answer) - 1
        exact = [i for i, c in enumerate(choices) if c.strip().lower() == answer and answer]
        if len(exact) == 1:
            return exact[0]
        await term.write(f"  please type a number from 1 to {len(choices)} ({offered})\n")
    await term.write("  no valid answer; giving up\n")
    return None


__all__ = [
    "BACKGROUND",
    "DEFAULT_TTY",
    "MAX_ATTEMPTS",
    "TTY_ENV",
    "SKIPPED",
    "NoTerminal",
    "Terminal",
    "background",
    "choose",
    "deadline_note",
    "open_terminal",
    "terminal_available",
    "tty_path",
]
