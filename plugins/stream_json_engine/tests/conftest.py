"""The stream-json engine's harness for the engine contract suite
(:mod:`agy_host.testing.contract`): each abstract scenario is a scenario of
the fake agy (``python -m agy_host.testing.agy_cli.agent``), spawned as a real
subprocess by the real engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from agy_host.config import Config
from agy_host.testing.agy_cli.agent import make_fake_agy
from agy_host.testing.contract import EngineHarness
from agy_host_stream_json.engine import StreamJsonEngine

_HAPPY = [{"say": ["HE", "LLO"]}]


class StreamJsonHarness(EngineHarness):
    engine_name: ClassVar[str] = "stream-json"
    happy_text: ClassVar[str | None] = "HELLO"
    #: Turns are indexed by the conversation's turn number, so "later turns"
    #: of a resumed conversation (after an abort or a crash) answer happily.
    scenarios: ClassVar[dict[str, Any]] = {
        "happy": "happy",
        "hang": "slow",
        "endless": {"turns": [[{"say": ["T0"]}, {"tick": {"every": 0.1}}], _HAPPY]},
        "park": "park",  # P1, a 1 s pause (times sleep_scale), P2
        "crash": {"turns": [[{"say": ["PARTIAL"]}, {"exit": {"code": 1, "stderr": "fake-agy: crash"}}], _HAPPY]},
        "spawn-failure": "/nonexistent/agy-host-contract/agy",
    }
    #: agy's start-up counts against a stream-json turn's deadline (the
    #: process starts inside the turn), so the suite's sub-second deadlines
    #: get room for a Python fake starting on a loaded machine.
    time_scale: ClassVar[float] = 2.0

    def make_engine(self, scenario: str, **knobs: Any) -> StreamJsonEngine:
        spec = self.scenario(scenario)
        cfg = Config()
        cfg.plugins["stream_json"] = {"kill_grace_seconds": 0.3, "exit_grace_seconds": 2.0}
        if scenario == "spawn-failure":
            return StreamJsonEngine(self.context(config=cfg, env={"AGY_BIN": str(spec)}))
        options: dict[str, Any] = {}
        if scenario == "park":
            options["sleep_scale"] = float(knobs.get("pause_s", 1.0))
        fake = make_fake_agy(self.workdir / "agy", spec, **options)
        return StreamJsonEngine(self.context(config=cfg, env=fake.env))


@pytest.fixture
def engine_harness(tmp_path: Path) -> StreamJsonHarness:
    return StreamJsonHarness(tmp_path / "contract")
