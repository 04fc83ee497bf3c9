"""``agy-host`` as a user runs it, against an ACP agent, for the root suites
(questions, the 2026 ACP surface, budgets): a subprocess in a private HOME,
the ACP engine selected, nobody at the terminal (``AGY_HOST_TTY=none``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from agy_host.testing.agents import FakeAgent
from agy_host.testing.isolation import isolated_env


def agy_host(tmp_path: Path, *args: str, tty: str = "none") -> subprocess.CompletedProcess[str]:
    """``agy-host ARGS`` in ``tmp_path`` with its HOME under it; ``tty`` is
    the person's terminal (a :class:`~agy_host.testing.terminal.Pty`'s path),
    ``none`` for nobody."""
    return subprocess.run(
        [sys.executable, "-m", "agy_host.cli.main", *args],
        env=isolated_env(tmp_path / "home", AGY_HOST_ENGINE="acp", AGY_HOST_TTY=tty),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
    )


def run_turn(tmp_path: Path, agent: FakeAgent, *args: str) -> subprocess.CompletedProcess[str]:
    """``agy-host run --agent AGENT ARGS go``."""
    return agy_host(tmp_path, "run", "--agent", agent.command_line, *args, "go")


def asking(params: dict[str, Any]) -> dict[str, Any]:
    """A fake ACP agent's scenario whose prompt asks ``elicitation/create``
    with ``params``, then says what it got (``GOT ACCEPT``, ``GOT DECLINE``, ``GOT CANCEL``)."""
    branches = {action: [{"chunk": f"GOT {action.upper()}"}] for action in ("accept", "decline", "cancel")}
    return {"prompt": [{"request": {"method": "elicitation/create", "params": params, "branches": branches}}]}


__all__ = ["agy_host", "asking", "run_turn"]
