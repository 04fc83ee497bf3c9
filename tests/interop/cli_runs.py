"""One ``agy-host run --format json`` against a real agent, with the wire
teed: the run's events, what crossed the wire both ways, and a context
string for assertion messages. Shared by the interop tests."""

from __future__ import annotations

import json
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.wire import TeeLog, read_tee_log, tee_argv
from interop.provision import AgentLaunch
from interop.rawacp import communicate_or_fail, kill_all, wait_gone

#: A turn here takes seconds; this only keeps a hung CLI from hanging the suite.
RUN_TIMEOUT = 60.0


@dataclass
class Run:
    returncode: int
    events: list[dict[str, Any]]
    wire: TeeLog
    context: str

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind]

    @property
    def text(self) -> str:
        return "".join(str(e.get("delta", "")) for e in self.of_type("text"))


def argv_for(cli: Path, launch: AgentLaunch, log: Path, prompt: str, extra: list[str]) -> list[str]:
    agent = shlex.join(tee_argv(log, launch.argv))
    return [str(cli), "run", "--agent", agent, "--format", "json", *extra, prompt]


def finish(proc: subprocess.Popen[str], argv: list[str], launch: AgentLaunch, log: Path) -> Run:
    out, err = communicate_or_fail(proc, argv, launch.marker, RUN_TIMEOUT)
    wire = read_tee_log(log) if log.exists() else TeeLog()
    context = (
        f"$ {shlex.join(argv)}\nexit {proc.returncode}\n--- stdout ---\n{out[-5000:]}\n--- stderr ---\n{err[-3000:]}"
        f"\n--- wire ---\n" + "\n".join(f"{w.sender}: {json.dumps(w.frame or w.raw)[:300]}" for w in wire.lines)
    )
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    return Run(proc.returncode, events, wire, context)


def advertised_commands(wire: TeeLog) -> list[str] | None:
    """The command names of the agent's last ``available_commands_update`` on
    the wire (as agy-host shows them: no ``/``); ``None`` when it sent none."""
    found = None
    for frame in wire.frames("agent"):
        update = frame.get("params", {}).get("update", {}) if frame.get("method") == "session/update" else {}
        if isinstance(update, dict) and update.get("sessionUpdate") == "available_commands_update":
            commands = update.get("availableCommands") or []
            found = [str(c["name"]).lstrip("/") for c in commands if isinstance(c, dict) and c.get("name")]
    return found


def shown_commands(events: list[dict[str, Any]]) -> list[str] | None:
    """The names of the run's last ``commands`` event; ``None`` without one."""
    shown = [e for e in events if e.get("type") == "commands"]
    return [c["name"] for c in shown[-1]["commands"]] if shown else None


def no_leftovers(launch: AgentLaunch, context: str) -> None:
    left = wait_gone(launch.marker)
    if left:
        kill_all(launch.marker)
    assert not left, f"agent processes left after agy-host exited: {left}\n{context}"


__all__ = ["RUN_TIMEOUT", "Run", "advertised_commands", "argv_for", "finish", "no_leftovers", "shown_commands"]
