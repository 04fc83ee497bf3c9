"""A long answer through ``agy-host run``: printed and written whole, never
held whole (``contract/answer.py``, ``runtime/answer_spool.py``).

Real ``agy-host`` processes against the fake ACP agent's flood; the plugin
case runs the CLI in-process to register a plugin object of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agy_host import hookimpl
from agy_host.contract.events import HostEvent, TurnEnded
from agy_host.testing.isolation import isolated_env

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine package cannot be imported")
AGY_HOST = Path(sys.executable).with_name("agy-host")

#: 1- to 4-byte characters, JSON escapes and a newline in each chunk.
PIECE = 'a long "answer" \u00e9\u4e2d\U0001f600\n'
#: Past the spill threshold (a mebibyte) twice over.
COUNT = 2 * (1 << 20) // len(PIECE) + 7
WHOLE = PIECE * COUNT

Agent = Any  # agy_host.testing.agents.FakeAgent


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return isolated_env(tmp_path / "home", AGY_HOST_ENGINE="acp")


def _transcript(env: dict[str, str], session: str) -> list[tuple[str, str]]:
    path = Path(env["XDG_STATE_HOME"]) / "agy-host" / "transcripts" / f"{session}.jsonl"
    return [(e["role"], e.get("text", "")) for e in map(json.loads, path.read_text("utf-8").splitlines())]


@pytest.mark.skipif(not AGY_HOST.exists(), reason=f"console script not installed next to {sys.executable}")
@pytest.mark.parametrize("fmt", ["text", "json", "quiet"])
def test_run_prints_and_writes_a_long_answer_whole(
    env: dict[str, str], fake_acp_agent: Callable[..., Agent], fmt: str
) -> None:
    agent = fake_acp_agent("flood", flood_count=COUNT, flood_text=PIECE)
    proc = subprocess.run(
        [str(AGY_HOST), "run", "--agent", agent.command_line, "--format", fmt, "--session", "long", "go"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    if fmt == "json":
        events = [json.loads(line) for line in proc.stdout.splitlines()]
        [end] = [e for e in events if e["type"] == "turn_end"]
        assert end["response"] == WHOLE and "response_elided" not in end
        assert "".join(e["delta"] for e in events if e["type"] == "text") == WHOLE
    else:
        assert proc.stdout == WHOLE
    assert _transcript(env, "long") == [("user", "go"), ("assistant", WHOLE)]


class _Observer:
    """A render plugin; ``optional`` says whether it declared it can do
    without ``TurnEnded.response``."""

    def __init__(self, optional: bool) -> None:
        if optional:
            self.AGY_HOST_RESPONSE_OPTIONAL = True
        self.ends: list[TurnEnded] = []

    @hookimpl
    def agy_host_render_event(self, event: HostEvent) -> None:
        if isinstance(event, TurnEnded):
            self.ends.append(event)


@pytest.mark.parametrize("optional", [False, True])
def test_a_render_plugin_gets_the_response_whole_unless_it_declared_otherwise(
    env: dict[str, str],
    fake_acp_agent: Callable[..., Agent],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    optional: bool,
) -> None:
    from agy_host.cli.main import main

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    observer = _Observer(optional)
    agent = fake_acp_agent("flood", flood_count=COUNT, flood_text=PIECE)
    code = main(["run", "--agent", agent.command_line, "--session", "p", "go"], extra_plugins=[observer])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out == WHOLE
    [end] = observer.ends
    if optional:
        assert (end.response, end.response_elided) == ("", True)
    else:
        assert (end.response, end.response_elided) == (WHOLE, False)
    assert _transcript(env, "p") == [("user", "go"), ("assistant", WHOLE)]
