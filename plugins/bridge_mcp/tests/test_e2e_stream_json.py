"""End to end on the stream-json engine, what is particular to it: the
bridge is found by the CLI through the host's entry in
``~/.gemini/config/mcp_config.json``, which exists, carries the token and is
mode 0600 while the CLI runs, and is gone afterwards with the user's own
entries kept. The round trip itself, on every engine, is
``test_e2e_bridge.py``."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from ._e2e import AGY_HOST, Run, e2e_env, run_cli

if not any(ep.name == "stream-json" for ep in metadata.entry_points(group="agy_host.engines")):
    pytest.skip("the stream-json engine (agy-host-stream-json) is not installed", allow_module_level=True)
if not AGY_HOST.exists():
    pytest.skip(f"console script not installed next to {sys.executable}", allow_module_level=True)

Agy = Any  # agy_host.testing.agy_cli.agent.FakeAgyBin


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return e2e_env(tmp_path, "stream-json")


def run(env: dict[str, str], agy: Agy, *args: str, timeout: float = 90) -> Run:
    return run_cli({**env, **agy.env}, *args, timeout=timeout)


def turn(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"turns": [[{"say": "calling. "}, *steps, {"say": " done."}]]}


def mcp_config(env: dict[str, str]) -> Path:
    return Path(env["HOME"]) / ".gemini" / "config" / "mcp_config.json"


def test_the_registration_exists_only_while_the_host_runs(env: dict[str, str], fake_agy: Callable[..., Agy]) -> None:
    path = mcp_config(env)
    path.parent.mkdir(parents=True)
    foreign = {"mcpServers": {"theirs": {"serverUrl": "http://127.0.0.1:1/mcp", "disabled": False}}}
    path.write_text(json.dumps(foreign))
    # the fake logs the entry it found in the file when it made the call
    agy = fake_agy(turn({"mcp_call": {"tool": "host_echo", "arguments": {}}}))
    result = run(env, agy, "go")
    assert result.proc.returncode == 0, result.context()
    assert "tool result: echo {}" in result.text
    # while the CLI ran: the host's own entry (named for its pid, the CLI's parent), with the token, 0600
    [seen] = agy.events("mcp-server")
    [argv_note] = agy.events("argv")
    assert seen["entry"].startswith("agy-host-bridge-") and seen["headers"] == [
        "x-agy-host-started",
        "x-bridge-token",
    ], seen
    assert seen["mode"] == 0o600 and seen["all"] == sorted(["theirs", seen["entry"]]), seen
    assert argv_note["pid"] != int(seen["entry"].rsplit("-", 1)[1])
    # afterwards: our entry removed, the user's entry kept as it was
    assert json.loads(path.read_text()) == foreign
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_python_session_registers_the_bridge_in_its_own_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_agy: Callable[..., Agy]
) -> None:
    """``env=`` is the session's whole environment: the ``agy`` CLI it runs
    finds the bridge in that HOME's MCP config, and the program's own HOME
    is never written."""
    import agy_host

    own_home = tmp_path / "program-home"
    monkeypatch.setenv("HOME", str(own_home))
    env = e2e_env(tmp_path, "stream-json")
    agy = fake_agy(turn({"mcp_call": {"tool": "shout", "arguments": {"text": "hi"}}}))
    project = tmp_path / "project"
    project.mkdir()

    def shout(text: str) -> str:
        """Say it louder."""
        return text.upper()

    result = agy_host.run("go", env={**env, **agy.env}, cwd=project, tools=[shout], permissions="auto")
    assert result.exit_code == 0, result
    [seen] = agy.events("mcp-server")
    assert seen["entry"].startswith("agy-host-bridge-"), seen
    assert "HI" in result.response, result.response
    assert not (own_home / ".gemini").exists(), "the program's own HOME was written"
