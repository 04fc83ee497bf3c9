"""A pseudo-terminal that stands in for the person at the keyboard.

agy-host asks its questions on ``/dev/tty`` (or ``AGY_HOST_TTY``); a test
points ``AGY_HOST_TTY`` at :attr:`Pty.path`, types the answers in advance
with :meth:`Pty.type`, and reads what was shown with :meth:`Pty.screen`::

    with Pty() as tty:
        tty.type("2\\n")
        answer = await ask(..., env={"AGY_HOST_TTY": tty.path})
        assert "Which branch?" in tty.screen()
"""

from __future__ import annotations

import os
import pty


class Pty:
    """One pseudo-terminal pair: agy-host opens :attr:`path`, the test drives the master side."""

    def __init__(self) -> None:
        self.master, self.slave = pty.openpty()
        self.path = os.ttyname(self.slave)
        os.set_blocking(self.master, False)

    def type(self, text: str) -> None:
        """What the person types (ahead of the question is fine: it waits in the terminal)."""
        os.write(self.master, text.encode())

    def screen(self) -> str:
        """Everything written to the terminal since the last call."""
        out = b""
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # BlockingIOError included: nothing more for now
                return out.decode(errors="replace")
            if not chunk:
                return out.decode(errors="replace")
            out += chunk

    def close(self) -> None:
        for fd in (self.master, self.slave):
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self) -> Pty:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["Pty"]
