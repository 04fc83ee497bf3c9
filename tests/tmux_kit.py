"""A person at a real terminal, for the tests that read the screen: a tmux
pane running a program, read with ``capture-pane`` and typed into with
``send-keys`` as a person would (``tests/test_terminal_tmux.py``,
``tests/test_terminal_prompts.py``)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

TMUX = shutil.which("tmux")


class Pane:
    """One tmux server (its own socket) running one program in one pane."""

    def __init__(self, command: list[str]) -> None:
        self.socket = f"agy-host-test-{uuid.uuid4().hex[:8]}"
        shell = " ".join(json.dumps(part) for part in command)
        self._tmux("new-session", "-d", "-x", "160", "-y", "60", f"{shell}; sleep 600")

    def _tmux(self, *args: str) -> str:
        assert TMUX is not None
        done = subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True, timeout=10)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-J", "-S", "-200")

    def wait_for(self, pattern: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            shown = self.screen()
            if re.search(pattern, shown):
                return shown
            time.sleep(0.1)
        raise AssertionError(f"{pattern!r} never appeared; the pane shows:\n{self.screen()}")

    def type(self, text: str) -> None:
        """Type ``text`` and press Enter."""
        self._tmux("send-keys", "-t", "0", text, "Enter")

    def keys(self, text: str) -> None:
        """Type ``text`` without pressing Enter (literally: no key names)."""
        self._tmux("send-keys", "-t", "0", "-l", text)

    def close(self) -> None:
        subprocess.run([TMUX or "tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=10)


@pytest.fixture
def pane_for() -> Iterator[list[Pane]]:
    """The panes a test opens (append them), closed after it."""
    panes: list[Pane] = []
    yield panes
    for pane in panes:
        pane.close()


def shell_script(path: Path, env: Mapping[str, str], cwd: Path, body: str) -> Path:
    """A shell script that runs ``body`` in ``cwd`` with exactly ``env``
    exported (a pane's shell starts from tmux's own environment)."""
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items() if k.isidentifier())
    path.write_text(f"{exports}cd {shlex.quote(str(cwd))}\n{body}\n")
    return path


__all__ = ["TMUX", "Pane", "pane_for", "shell_script"]
