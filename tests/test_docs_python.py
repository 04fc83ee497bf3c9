"""The examples of ``docs/python.md`` run, as written, against real agents.

Each ```python block is executed in this process with only the agent
replaced: ``"gemini --acp"`` becomes the kit's fake ACP agent (a separate
process speaking ACP), scripted to do what the example asks (call the
``add`` tool, ask a permission, fail). ``engine="harness"`` runs the real
Antigravity harness binary against the kit's scripted model API. A block
that defines ``main`` is run under trio and under asyncio.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomli_w
import trio

import agy_host
from agy_host.testing.agents import fake_acp_agent_command
from agy_host.testing.isolation import isolated_env
from agy_host.testing.models.api import ModelApiProcess

DOC = Path(__file__).resolve().parents[1] / "docs" / "python.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)

#: What the fake agent does for each example, by a phrase of the example.
SCRIPTS: dict[str, Any] = {
    "fix the failing test": "happy",
    "use the add tool": {
        "prompt": [{"mcp_call": {"tool": "add", "arguments": {"a": 40}}}, {"stop": "end_turn"}],
    },
    "tidy the imports": "permission",
    "check=True)": "prompt-error",
    "plan the change": {"prompt": [{"chunk": "ok"}, {"prompt_usage": {"totalTokens": 7}}]},
    "list the failing tests": {
        "prompt": [{"chunk": 'Two:\n```json\n{"count": 2, "tests": ["test_a", "test_b"]}\n```'}, {"stop": "end_turn"}]
    },
}


def block(phrase: str) -> str:
    [found] = [b for b in BLOCKS if phrase in b]
    return found


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This process as a user's: a private HOME and XDG dirs, in a project;
    no warm agents (isolated_env's), so no keeper outlives an example."""
    for key, value in isolated_env(tmp_path / "home", AGY_HOST_TTY="none").items():
        monkeypatch.setenv(key, value)
    for key in [k for k in os.environ if k.startswith(("AGY_", "ANTIGRAVITY_"))]:
        if key not in ("AGY_HOST_TTY", "AGY_HOST_KEEP_ALIVE_MINUTES"):
            monkeypatch.delenv(key)
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    yield tmp_path


def execute(source: str, agent: str | None) -> dict[str, Any]:
    if agent is not None:
        assert '"gemini --acp"' in source
        source = source.replace('"gemini --acp"', repr(agent))
    namespace: dict[str, Any] = {"agy_host": agy_host}
    exec(compile(source, str(DOC), "exec"), namespace)
    return namespace


@pytest.mark.parametrize("phrase", sorted(SCRIPTS))
@pytest.mark.parametrize("loop", ["trio", "asyncio"])
def test_the_acp_examples_run(place: Path, phrase: str, loop: str, capsys: pytest.CaptureFixture[str]) -> None:
    agent = fake_acp_agent_command(SCRIPTS[phrase], workdir=place / "agents")
    namespace = execute(block(phrase), agent.command_line)
    main = namespace.get("main")
    if main is not None:
        trio.run(main) if loop == "trio" else asyncio.run(main())
    elif loop == "asyncio":
        pytest.skip("a blocking example: no loop of its own")
    out = capsys.readouterr().out
    if phrase == "fix the failing test":
        assert out == "HELLO" + "stop None\n", out
    elif phrase == "use the add tool":
        assert out == "tool result: 42\n", out
    elif phrase == "tidy the imports":
        assert out == "the agent asks: Run fake_tool?\n", out
    elif phrase == "plan the change":
        assert out == "fake-model-low 2 14\n", out
    elif phrase == "list the failing tests":
        assert out == "2 ['test_a', 'test_b']\n", out
    else:
        assert out.startswith("1 "), out


def test_the_blocking_harness_example_runs(
    place: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.parity.rigs import harness_binary

    try:
        binary = harness_binary()
    except RuntimeError as exc:
        from agy_host_harness.install import platform_problem

        problem = platform_problem()
        if problem:
            pytest.skip(problem)
        raise AssertionError(str(exc)) from exc
    model = ModelApiProcess(place / "model", {"turns": [[[{"text": "A README about agy-host."}]]]})
    try:
        config = Path(os.environ["XDG_CONFIG_HOME"]) / "agy-host" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text(tomli_w.dumps({"harness": {"bin": binary, "base_url": model.url}}))
        monkeypatch.setenv("GEMINI_API_KEY", "test-key")
        execute(block('engine="harness"'), None)
    finally:
        model.close()
    out = capsys.readouterr().out
    assert out.startswith("A README about agy-host. stop 0 py-"), out
