"""Settings changes re-open a conversation on its own id, against the real harness."""

from __future__ import annotations

from pathlib import Path

import pytest
from agy_host_harness.engine import HarnessEngine

from agy_host.config import Config
from agy_host.testing.contract import EngineHarness, collect, open_driver, outcome_of
from agy_host.testing.models.api import ModelApiProcess


class _Kit(EngineHarness):
    engine_name = "harness"

    def make_engine(self, scenario: str, **knobs: object) -> HarnessEngine:
        raise NotImplementedError


@pytest.mark.trio
async def test_every_model_switch_reopens_the_same_conversation(tmp_path: Path, harness_binary: str) -> None:
    """The harness releases a closed conversation's id asynchronously: a
    re-open right after the close can find it "already in use", and must wait
    for it rather than fail the turn."""
    kit = _Kit(tmp_path)
    with ModelApiProcess(tmp_path / "model", {"turns": [[[{"echo": True}]]]}) as model:
        cfg = Config()
        cfg.plugins["harness"] = {"base_url": model.url, "models": ["m-a", "m-b"]}
        env = {"ANTIGRAVITY_HARNESS_PATH": harness_binary, "GEMINI_API_KEY": "k"}
        engine = HarnessEngine(kit.context(config=cfg, env=env))
        conversation = None
        async with open_driver(engine) as driver:
            for i in range(12):
                request = kit.request(f"turn {i}", model=("m-a", "m-b")[i % 2], conversation_id=conversation)
                outcome = outcome_of(await collect(await driver.run(request), seconds=60))
                assert outcome.status == "ok", (i, outcome)
                conversation = conversation or outcome.conversation_id
                assert outcome.conversation_id == conversation
            snapshot = driver.snapshot()
        assert snapshot.stats["reopens"] == 11, snapshot.stats
        models = [r["model"] for r in model.requests()]
        assert models == ["m-a", "m-b"] * 6
