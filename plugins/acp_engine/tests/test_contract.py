"""The engine contract suite (:mod:`agy_host.testing.contract`) against the
ACP engine: each abstract scenario is a scenario of the fake ACP agent
(``python -m agy_host.testing.acp.agent``), spawned as a real
subprocess by the real engine.

The ``engine_harness`` fixture lives here rather than in a ``conftest.py``:
under ``--import-mode=importlib`` a ``plugins/*/tests/conftest.py`` is named
``tests.conftest``, like the repository's ``tests/conftest.py``, and the
two cannot be loaded in one pytest run. (A third-party engine in its own
repository puts the fixture in its ``conftest.py``.)"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agy_host.config import Config
from agy_host.testing.agents import fake_acp_agent_command
from agy_host.testing.contract import EngineContract, EngineHarness
from agy_host_acp.engine import AcpEngine

_TICK_FOREVER = {"repeat": {"steps": [{"sleep": 0.15}, {"chunk": "tick"}]}}
_HAPPY = [{"chunk": "HE"}, {"sleep": 0.02}, {"chunk": "LLO"}, {"stop": "end_turn"}]
#: The built-in ``park`` scenario pauses 2.5 s; ``sleep_scale`` sets the pause.
_PARK_PAUSE_S = 2.5


class AcpHarness(EngineHarness):
    engine_name: ClassVar[str] = "acp"
    happy_text: ClassVar[str | None] = "HELLO"
    scenarios: ClassVar[dict[str, Any]] = {
        "happy": "happy",
        "hang": "slow",
        # first prompt ticks until cancelled (gracefully), later prompts answer
        "endless": {"extends": "cancel-graceful", "prompts": [[{"chunk": "C1"}, _TICK_FOREVER], _HAPPY]},
        "park": "park",
        # the first process crashes mid-turn; the restarted one answers
        "crash": ("crash-mid-turn", "happy"),
        "spawn-failure": "/nonexistent/agy-host-contract-agent --acp",
    }

    def make_engine(self, scenario: str, **knobs: Any) -> AcpEngine:
        spec = self.scenario(scenario)
        if scenario == "spawn-failure":
            agent = str(spec)
        elif scenario == "crash":
            agent = self._first_then(*spec)
        else:
            options: dict[str, Any] = {}
            if scenario == "park":
                options["sleep_scale"] = float(knobs.get("pause_s", _PARK_PAUSE_S)) / _PARK_PAUSE_S
            agent = fake_acp_agent_command(spec, workdir=self.workdir / "agents", **options).command_line
        cfg = Config()
        cfg.acp.cancel_grace_seconds = 1.0
        cfg.acp.kill_grace_seconds = 0.3
        cfg.acp.initialize_timeout_seconds = 10.0
        cfg.acp.session_timeout_seconds = 10.0
        return AcpEngine(self.context(config=cfg, agent=agent))

    def _first_then(self, first: str, then: str) -> str:
        """A command that plays ``first`` on its first start and ``then`` after."""
        agents = self.workdir / "agents"
        one = fake_acp_agent_command(first, workdir=agents).command_line
        two = fake_acp_agent_command(then, workdir=agents).command_line
        marker = agents / f"started-{first}"
        script = agents / f"first-{first}-then-{then}.sh"
        script.write_text(
            "#!/bin/sh\n"
            f"if [ -e {shlex.quote(str(marker))} ]; then exec {two}; fi\n"
            f": > {shlex.quote(str(marker))}\n"
            f"exec {one}\n"
        )
        script.chmod(0o755)
        return shlex.quote(str(script))


@pytest.fixture
def engine_harness(tmp_path: Path) -> AcpHarness:
    return AcpHarness(tmp_path / "contract")


class TestAcpEngineContract(EngineContract):
    pass
