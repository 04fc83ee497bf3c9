"""Handles on the kit's agent executables: the command to spawn, and the log to read.

A :class:`FakeAgent` is what the pytest fixtures return and what a plugin
author passes to the host as ``--agent``: everything is on the command line
(no environment needed), so the agent behaves the same whether the test
spawns it, the host spawns it, or a developer pastes ``command_line`` into
a shell. Stdlib only: this module is imported by the pytest plugin.
"""

from __future__ import annotations

import itertools
import json
import logging
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

FAKE_MODULE = "agy_host.testing.acp.agent"
REPLAY_MODULE = "agy_host.testing.replay.agent"


@dataclass
class FakeAgent:
    """A spawnable agent plus what it recorded about its stdin."""

    command: list[str]
    log_path: Path
    #: Scenario name, scenario file, or recording this agent plays (for messages).
    source: str = ""

    @property
    def command_line(self) -> str:
        """The command as one shell-quoted string (for ``--agent`` / config)."""
        return shlex.join(self.command)

    def log_entries(self) -> list[dict[str, Any]]:
        """Every log line, parsed; a torn or non-JSON line is reported and kept as ``_unparsed``."""
        try:
            text = self.log_path.read_text("utf-8")
        except FileNotFoundError:
            return []
        entries: list[dict[str, Any]] = []
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError:
                log.warning("%s:%d: log line is not JSON, kept as _unparsed", self.log_path, number)
                value = {"_unparsed": line}
            entries.append(value if isinstance(value, dict) else {"_value": value})
        return entries

    def received(self) -> list[dict[str, Any]]:
        """The messages the agent received, in order (its own ``_fake`` notes left out)."""
        return [e for e in self.log_entries() if "_fake" not in e]

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        """The agent's own notes (``permission-answer``, ``cancel``, ``sigterm``, ``mismatch``...)."""
        return [e for e in self.log_entries() if "_fake" in e and (name is None or e["_fake"] == name)]

    def methods(self) -> list[str]:
        """The ``method`` of every received request and notification, in order."""
        return [e["method"] for e in self.received() if isinstance(e.get("method"), str)]

    def requests(self, method: str) -> list[dict[str, Any]]:
        """Received messages with this method (requests and notifications)."""
        return [e for e in self.received() if e.get("method") == method]


def _option_arg(key: str, value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return f"{key}={text}"


_counter = itertools.count(1)


def fake_acp_agent_command(
    scenario: str | Path | Mapping[str, Any] = "happy",
    *,
    workdir: Path,
    python: str | None = None,
    **options: Any,
) -> FakeAgent:
    """A :class:`FakeAgent` for the fake ACP agent; a mapping scenario is
    written to a file in ``workdir``; ``options`` become ``--set key=value``."""
    n = next(_counter)
    workdir.mkdir(parents=True, exist_ok=True)
    if isinstance(scenario, Mapping):
        path = workdir / f"fake-acp-scenario-{n}.json"
        path.write_text(json.dumps(dict(scenario), indent=2), "utf-8")
        spec = str(path)
    else:
        spec = str(scenario)
    log_path = workdir / f"fake-acp-{n}.log"
    command = [python or sys.executable, "-m", FAKE_MODULE, "--scenario", spec, "--log", str(log_path)]
    for key, value in options.items():
        command += ["--set", _option_arg(key, value)]
    return FakeAgent(command=command, log_path=log_path, source=spec)


def replay_agent_command(
    recording: str | Path,
    *,
    workdir: Path,
    python: str | None = None,
    handshake: str | Path | None = None,
) -> FakeAgent:
    """A :class:`FakeAgent` that serves ``recording`` with the replay agent."""
    path = Path(recording)
    if not path.is_file():
        raise FileNotFoundError(f"recording not found: {path}")
    n = next(_counter)
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / f"replay-{n}-{path.stem}.log"
    command = [python or sys.executable, "-m", REPLAY_MODULE, str(path), "--log", str(log_path)]
    if handshake is not None:
        command += ["--handshake", str(handshake)]
    return FakeAgent(command=command, log_path=log_path, source=str(path))


__all__ = ["FAKE_MODULE", "REPLAY_MODULE", "FakeAgent", "fake_acp_agent_command", "replay_agent_command"]
