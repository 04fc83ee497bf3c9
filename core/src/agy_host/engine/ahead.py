"""An agent started ahead: a command starts its agent before its own heavy
imports, and the engine adopts it where it would have started one.

A cold ``agy-host run`` spends about 150 ms on imports, config, plugins and
engine selection before its engine starts the agent, which then needs its
own start before it can answer (about 50 ms for the kit's Python agent,
seconds for node-based agents). When the command line names the agent's
command exactly (:mod:`agy_host.cli.agent_ahead`), the CLI starts it first
(:func:`start`) and the two starts overlap.

Engines are not involved: :func:`agy_host.engine.process.open_in_own_group`
asks :func:`adopt` for a child started ahead with the very argv, working
directory and environment it was about to use, and takes it; the child was
started the way it starts children (its own session and process group,
piped stdin, stdout and stderr, no other descriptor inherited). Anything
else is a miss: the child is ended and the engine starts its own, so a
wrong guess costs time, never a different agent.

A child nobody adopted (the command failed before its turn, was
interrupted, or ran no turn) is ended when the process exits (an exit
handler; :func:`agy_host.cli.exit_now.exit_now` runs them), or at once by
:func:`agy_host.engine.process.kill_every_group`: its stdin closed, SIGTERM
to its group, SIGKILL after :data:`END_GRACE_S`.

No trio here: this module is imported before trio is.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence

#: How long a child nobody adopted gets after SIGTERM before SIGKILL.
END_GRACE_S = 0.5


class Ahead:
    """A child started ahead, with the parent's ends of its pipes."""

    def __init__(
        self, argv: list[str], cwd: str, env: dict[str, str], popen: subprocess.Popen[bytes], fds: tuple[int, int, int]
    ) -> None:
        self.argv = argv
        self.cwd = cwd
        self.env = env
        self.popen = popen
        #: Our ends: the child's stdin (write), stdout (read), stderr (read).
        self.stdin, self.stdout, self.stderr = fds

    def matches(self, argv: Sequence[str], cwd: str | None, env: Mapping[str, str] | None) -> bool:
        wanted_cwd = os.getcwd() if cwd is None else cwd
        wanted_env = dict(os.environ if env is None else env)
        return list(argv) == self.argv and wanted_cwd == self.cwd and wanted_env == self.env

    def end(self, *, wait: bool = True) -> None:
        """Close our pipe ends (stdin first: EOF), SIGTERM the group, and
        SIGKILL it after :data:`END_GRACE_S` (``wait=False``: SIGKILL now)."""
        for fd in (self.stdin, self.stdout, self.stderr):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.popen.poll() is None:
            _signal_group(self.popen.pid, signal.SIGTERM if wait else signal.SIGKILL)
        if not wait:
            return
        try:
            self.popen.wait(timeout=END_GRACE_S)
        except subprocess.TimeoutExpired:
            _signal_group(self.popen.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=5)


_AHEAD: Ahead | None = None


def start(argv: Sequence[str], *, cwd: str, env: Mapping[str, str]) -> bool:
    """Start ``argv`` as an engine would (see the module docstring); whether
    it started. One at a time; a command that cannot be started is left to
    the engine, which says why."""
    global _AHEAD  # one child per process, as there is one command
    if _AHEAD is not None or not argv:
        return False
    # Pipes are not inheritable (PEP 446): only their dup2 to 0, 1 and 2 reach the child.
    child: list[int] = []
    ours: list[int] = []
    try:
        for i in range(3):  # stdin (the child reads), stdout and stderr (it writes)
            read, write = os.pipe()
            child.append(read if i == 0 else write)
            ours.append(write if i == 0 else read)
        popen = subprocess.Popen(  # the command the user named as the agent
            list(argv),
            stdin=child[0],
            stdout=child[1],
            stderr=child[2],
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except (OSError, ValueError, subprocess.SubprocessError):
        for fd in ours:
            os.close(fd)
        return False
    finally:
        for fd in child:
            os.close(fd)
    _AHEAD = Ahead(list(argv), cwd, dict(env), popen, (ours[0], ours[1], ours[2]))
    atexit.register(discard)
    return True


def adopt(argv: Sequence[str], *, cwd: str | None, env: Mapping[str, str] | None) -> Ahead | None:
    """The child started ahead, if it is this very command (``cwd`` and
    ``env`` ``None``: the process's own); the caller owns it from now on.
    A child that is not is ended (``None``)."""
    global _AHEAD
    ahead, _AHEAD = _AHEAD, None
    if ahead is None:
        return None
    if ahead.matches(argv, cwd, env):
        return ahead
    ahead.end()
    return None


def discard(*, wait: bool = True) -> None:
    """End the child started ahead if nobody adopted it."""
    global _AHEAD
    ahead, _AHEAD = _AHEAD, None
    if ahead is not None:
        ahead.end(wait=wait)


def pending() -> bool:
    """Whether a child started ahead waits to be adopted."""
    return _AHEAD is not None


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)  # its own session: the group id is its pid


__all__ = ["END_GRACE_S", "Ahead", "adopt", "discard", "pending", "start"]
