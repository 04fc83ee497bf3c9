"""The engine contract suite against the real harness binary, the model
replaced by the kit's scripted model API (harness: ``engine_harness`` below)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from agy_host_harness.engine import HarnessEngine

from agy_host.config import Config
from agy_host.testing.contract import EngineContract, EngineHarness
from agy_host.testing.models.api import ModelApiProcess

_HAPPY = [[{"text": ["HE", "LLO"]}]]
_TICKS = [{"text": "T0"}] + [e for _ in range(600) for e in ({"sleep": 0.1}, {"text": "tick "})]


class RealHarness(EngineHarness):
    engine_name: ClassVar[str] = "harness"
    happy_text: ClassVar[str | None] = "HELLO"
    #: By user request of the conversation (the last repeats): a resumed
    #: conversation's later turns answer happily.
    scenarios: ClassVar[dict[str, Any]] = {
        "happy": {"turns": [_HAPPY]},
        "hang": {"turns": [[[{"hang": True}]]]},
        "endless": {"turns": [[_TICKS], _HAPPY]},
        "park": "built per test (the pause is a knob)",
        "spawn-failure": "/nonexistent/agy-host-contract/localharness",
        "crash": "built per test (the harness is killed once the model streamed)",
    }

    def __init__(self, workdir: Path, binary: str) -> None:
        super().__init__(workdir)
        self.binary = binary
        self.models: list[ModelApiProcess] = []

    def make_engine(self, scenario: str, **knobs: Any) -> HarnessEngine:
        spec = self.scenario(scenario)
        cfg = Config()
        if scenario == "spawn-failure":
            return HarnessEngine(self.context(config=cfg, env={"ANTIGRAVITY_HARNESS_PATH": str(spec)}))
        binary = self.binary
        if scenario == "crash":
            spec, binary = self._crash()
        if scenario == "park":
            pause = float(knobs.get("pause_s", 1.0))
            spec = {"turns": [[[{"text": "P1"}, {"sleep": pause}, {"text": "P2"}]]]}
        model = ModelApiProcess(self.workdir / f"model-{len(self.models)}", spec)
        self.models.append(model)
        cfg.plugins["harness"] = {"base_url": model.url, "cancel_grace_seconds": 2.0}
        env = {"ANTIGRAVITY_HARNESS_PATH": binary, "GEMINI_API_KEY": "contract"}
        return HarnessEngine(self.context(config=cfg, env=env))

    def _crash(self) -> tuple[dict[str, Any], str]:
        """The real harness behind a wrapper that SIGKILLs it the first time
        the model's stream got past its first chunk (the model touches a
        file there); later starts run it untouched."""
        folder = self.workdir / "crash"
        folder.mkdir(parents=True, exist_ok=True)
        streamed, killed = folder / "streamed", folder / "killed"
        wrapper = folder / "localharness"
        wrapper.write_text(
            "#!/bin/sh\n"
            f'[ -e "{killed}" ] && exec "{self.binary}"\n'
            "exec 3<&0\n"  # a background job's stdin would be /dev/null otherwise
            f'"{self.binary}" <&3 & child=$!\n'
            f'while [ ! -e "{streamed}" ]; do sleep 0.02; done\n'
            f'touch "{killed}"; kill -9 $child; exit 1\n'
        )
        wrapper.chmod(0o755)
        first = [{"text": "PARTIAL"}, {"sleep": 0.2}, {"touch": str(streamed)}, {"hang": True}]
        return {"turns": [[first], _HAPPY]}, str(wrapper)

    def close(self) -> None:
        for model in self.models:
            model.close()


@pytest.fixture
def engine_harness(tmp_path: Path, harness_binary: str) -> Any:
    harness = RealHarness(tmp_path / "contract", harness_binary)
    yield harness
    harness.close()


class TestHarnessEngineContract(EngineContract):
    pass
