"""What the warm-agent suites share: a HOME with warm agents on, real
``agy-host`` commands in it, and the checks that nothing is left running.

Each test lives in its own HOME (so its own keeper directory) with warm
agents on; :meth:`Warm.close` stops its keeper (``sessions stop --all``,
then SIGTERM) and waits until the keeper is gone, so a test leaves no
keeper and no warm agent behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agy_host.testing.agents import FakeAgent
from agy_host.testing.isolation import isolated_env

RUN_TIMEOUT = 60


class Warm:
    """One test's HOME with warm agents on, and its commands."""

    def __init__(self, tmp_path: Path, engine: str = "acp", **env: str) -> None:
        self.tmp = tmp_path
        self.home = tmp_path / "home"
        self.env = isolated_env(
            self.home, AGY_HOST_ENGINE=engine, AGY_HOST_TTY="none", AGY_HOST_KEEP_ALIVE_MINUTES="5", **env
        )
        self.cwd = tmp_path / "project"
        self.cwd.mkdir(exist_ok=True)

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "agy_host.cli.main", *args]

    def cli(self, *args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args),
            env={**self.env, **env},
            cwd=self.cwd,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )

    def run(
        self, agent: FakeAgent, session: str, prompt: str, *args: str, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return self.cli(
            "run", "--agent", agent.command_line, "--session", session, "--format", "json", *args, prompt, **env
        )

    def start_run(self, agent: FakeAgent, session: str, prompt: str, *args: str) -> subprocess.Popen[str]:
        """:meth:`run` in the background."""
        return self.start("run", "--agent", agent.command_line, "--session", session, "--format", "json", *args, prompt)

    def start(self, *args: str, stdin: int | None = subprocess.DEVNULL) -> subprocess.Popen[str]:
        """``agy-host ARGS`` in the background (its output piped)."""
        return subprocess.Popen(
            self.argv(*args),
            env=self.env,
            cwd=self.cwd,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def status(self) -> dict[str, Any]:
        proc = self.cli("sessions", "status", "--format", "json")
        assert proc.returncode == 0, proc.stderr
        data: dict[str, Any] = json.loads(proc.stdout)
        return data

    def sessions(self) -> dict[str, dict[str, Any]]:
        """The warm sessions by name."""
        return {s["session"]: s for s in self.status()["sessions"]}

    def keeper_pid(self) -> int | None:
        keeper = self.status()["keeper"]
        return int(keeper["pid"]) if keeper else None

    def runtime_dir(self) -> Path:
        from agy_host.keeper.place import runtime_dir

        return runtime_dir(self.env, self.home / ".local" / "state" / "agy-host")

    def close(self) -> None:
        stop_keeper(self.argv(), self.env)


def stop_keeper(agy_host: list[str], env: Mapping[str, str]) -> None:
    """Stop the keeper ``agy-host`` (its argv) reaches with ``env``, and its
    warm agents (``sessions stop --all``, then SIGTERM); wait until it is gone."""

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*agy_host, *args], env=dict(env), capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False
        )

    status = cli("sessions", "status", "--format", "json")
    assert status.returncode == 0, status.stderr
    keeper = json.loads(status.stdout)["keeper"]
    cli("sessions", "stop", "--all")
    if keeper:
        pid = int(keeper["pid"])
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        assert wait_gone(pid, 10), f"keeper {pid} outlived its test"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return not alive(pid)


def until(check: Callable[[], object], what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def events(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def of(proc: subprocess.CompletedProcess[str], kind: str) -> list[dict[str, Any]]:
    return [e for e in events(proc) if e.get("type") == kind]


def methods(agent: FakeAgent) -> list[str]:
    """The methods the fake ACP agent was called with, in order (across its processes)."""
    return [str(m["method"]) for m in agent.received() if "method" in m]


def read_until(proc: subprocess.Popen[str], needle: str, seconds: float = RUN_TIMEOUT) -> str:
    """Lines of ``proc``'s stdout up to the one containing ``needle``."""
    assert proc.stdout is not None
    seen = ""
    deadline = time.monotonic() + seconds
    while needle not in seen:
        assert time.monotonic() < deadline, f"{needle!r} never came; so far:\n{seen}"
        line = proc.stdout.readline()
        assert line, f"the command ended before {needle!r}: {seen}\n{proc.communicate()[1][-3000:]}"
        seen += line
    return seen


__all__ = [
    "RUN_TIMEOUT",
    "Warm",
    "alive",
    "events",
    "methods",
    "of",
    "read_until",
    "stop_keeper",
    "until",
    "wait_gone",
]
