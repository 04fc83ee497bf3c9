"""Facts remembered about agents across runs (``acp-agents.json`` in the state dir).

Today that is how aborting worked: ``graceful`` when the agent ended
its prompt with ``stopReason: cancelled`` after ``session/cancel``, or
``kill+reload`` when it did not and the host had to kill it and reload the
session on the next turn. Keyed by agent and version, so an upgraded agent is
probed afresh. Doctor shows it; an unknown agent is ``unprobed``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import msgspec

from agy_host import fsutil

CancelMode = Literal["graceful", "kill+reload", "unprobed"]
FILE_NAME = "acp-agents.json"


class AgentFacts(msgspec.Struct, kw_only=True, omit_defaults=True):
    cancel: CancelMode = "unprobed"
    version: str = ""


class AgentMemory:
    def __init__(self, state_dir: Path, warn: object = None) -> None:
        self.path = state_dir / FILE_NAME
        self._warn = warn

    def _read(self) -> dict[str, AgentFacts]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            return msgspec.json.decode(data, type=dict[str, AgentFacts])
        except (msgspec.DecodeError, RecursionError):
            moved = fsutil.quarantine(self.path)
            if callable(self._warn):
                self._warn(f"{self.path} was unreadable; moved it to {moved}")
            return {}

    @staticmethod
    def key(agent: str, version: str) -> str:
        return f"{agent}@{version}" if version else agent

    def cancel_mode(self, agent: str, version: str) -> CancelMode:
        return self._read().get(self.key(agent, version), AgentFacts()).cancel

    def remember_cancel(self, agent: str, version: str, mode: CancelMode) -> None:
        with fsutil.locked(self.path):
            facts = self._read()
            key = self.key(agent, version)
            current = facts.get(key, AgentFacts(version=version))
            if current.cancel == mode:
                return
            current.cancel = mode
            facts[key] = current
            fsutil.write_atomic(self.path, msgspec.json.encode(facts))


__all__ = ["AgentFacts", "AgentMemory", "CancelMode"]
