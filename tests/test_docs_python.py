"""The examples of ``docs/python.md`` run, as written, against real agents.

Each ```python block is executed in this process with only the agent
replaced: ``"gemini --acp"`` becomes the kit's fake ACP agent (a separate
process speaking ACP), scripted to do what the example asks (call the
``add`` tool, ask a permission, fail). ``engine="harness"`` runs the real
Antigravity harness binary against the kit's scripted model API. A block
that defines ``main`` is run under trio and under asyncio, and its output
is compared exactly. Every block must be one of them
(``test_every_example_is_run``). The warm-session example runs with warm
agents on, and its keeper is stopped after it.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomli_w
import trio
from doc_blocks import code_blocks
from warm_kit import stop_keeper

import agy_host
from agy_host.testing.agents import fake_acp_agent_command
from agy_host.testing.isolation import isolated_env
from agy_host.testing.models.api import ModelApiProcess

DOC = Path(__file__).resolve().parents[1] / "docs" / "python.md"
BLOCKS = [code for _lang, code in code_blocks(DOC, "python")]

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
    "sort the imports": {
        "prompt": [
            {"permission": {"branches": {"allow": [{"chunk": "Sorted."}], "reject": [{"chunk": "DENIED"}]}}},
            {"prompt_usage": {"totalTokens": 7}},
            {"stop": "end_turn"},
        ]
    },
    "read the failing test": "happy",
    "clean the build folder": {
        "prompt": [
            {
                "permission": {
                    "tool_call": {"toolCallId": "rm-1", "title": "Run run_shell_command?", "kind": "execute"},
                    "branches": {"allow": [{"chunk": "removed"}], "reject": [{"chunk": "not allowed"}]},
                }
            },
            {"tool_call": {"toolCallId": "ls-1", "title": "Run list_directory?", "kind": "read"}},
            {"tool_call_update": {"toolCallId": "ls-1", "status": "completed"}},
            {"stop": "end_turn"},
        ]
    },
    "find where the config is read": {
        "prompt": [
            {"permission": {"tool_call": {"toolCallId": "r-1", "title": "Run read_file?", "kind": "read"}}},
            {"permission": {"tool_call": {"toolCallId": "x-1", "title": "Run run_shell_command?", "kind": "execute"}}},
            {"stop": "end_turn"},
        ]
    },
    "ask me for my favourite colour": "question",
    "summarise the design notes": {
        "agent_capabilities": {"sessionCapabilities": {"fork": {}}},
        "prompt": [{"chunk": "Three notes."}, {"prompt_usage": {"totalTokens": 12}}],
    },
    "write a very long story": {
        "cancel": "graceful",
        "prompts": [
            [{"chunk": "C1"}, {"repeat": {"steps": [{"sleep": 0.15}, {"chunk": "tick"}]}}],
            [{"chunk": "C1"}, {"repeat": {"steps": [{"sleep": 0.15}, {"chunk": "tick"}]}}],
            [{"chunk": "THE END"}, {"stop": "end_turn"}],
        ],
    },
}

#: What each example prints, exactly (the ``check=True`` one: its exit code first).
OUTPUTS: dict[str, str] = {
    "fix the failing test": "HELLO" + "stop None\n",
    "use the add tool": "tool result: 42\n",
    "tidy the imports": "the agent asks: Run fake_tool?\n",
    "plan the change": "fake-model-low 2 14\n",
    "list the failing tests": "2 ['test_a', 'test_b']\n",
    "sort the imports": "Sorted.\n0 7\n",
    "read the failing test": "HELLO False\nHELLO True\n",
    "clean the build folder": "before permission run_shell_command execute\nafter list_directory done\nend 5\n",
    "find where the config is read": (
        "Run read_file? allow allowed_tools\nRun run_shell_command? deny disallowed_tools\n"
    ),
    "ask me for my favourite colour": "the agent asks: Do you prefer red or blue? ['Red', 'Blue']\nBlue\n",
    "write a very long story": "130 aborted\n130\nTHE END 0\n",
    "summarise the design notes": (
        "notes ['acp'] 1 12\nsummarise the design notes -> Three notes. 12\nforked: notes-b 1\n['notes-b']\n"
    ),
}

#: Examples that need warm agents on: the test stops the keeper they start.
WARM = {"read the failing test"}


def test_every_example_is_run() -> None:
    """Each ```python block of the page is one of the examples run below
    (found by a phrase of its own), so no example goes untested."""
    phrases = [*SCRIPTS, *HARNESS]
    unrun = [b.splitlines()[0] for b in BLOCKS if not any(p in b for p in phrases)]
    assert not unrun, f"examples no test runs (add a phrase of each to SCRIPTS or HARNESS): {unrun}"
    for phrase in phrases:
        block(phrase)  # exactly one block each


def block(phrase: str) -> str:
    [found] = [b for b in BLOCKS if phrase in b]
    return found


def example(phrase: str, loop: str) -> str:
    """The block with ``phrase``; a blocking one (no ``main``) runs once, as the trio case."""
    source = block(phrase)
    if "async def main" not in source and loop == "asyncio":
        pytest.skip("a blocking example: no loop of its own")
    return source


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


def execute(source: str, agent: str | None, loop: str) -> None:
    """Run the example as written, on ``agent`` instead of ``"gemini --acp"``:
    a blocking one as it is executed, one with ``main`` under ``loop``."""
    if agent is not None:
        assert '"gemini --acp"' in source
        source = source.replace('"gemini --acp"', repr(agent))
    namespace: dict[str, Any] = {"agy_host": agy_host}
    exec(compile(source, str(DOC), "exec"), namespace)
    main = namespace.get("main")
    if main is not None:
        trio.run(main) if loop == "trio" else asyncio.run(main())


@pytest.mark.parametrize("phrase", sorted(SCRIPTS))
@pytest.mark.parametrize("loop", ["trio", "asyncio"])
def test_the_acp_examples_run(
    place: Path, phrase: str, loop: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = example(phrase, loop)
    if phrase in WARM:
        monkeypatch.setenv("AGY_HOST_KEEP_ALIVE_MINUTES", "5")
        # a keeper slow to start on a loaded machine (10 s) would leave the
        # example cold, with a warning; the example is about the warm agent
        monkeypatch.setattr("agy_host.keeper.client.START_TIMEOUT_S", 60.0)
    agent = fake_acp_agent_command(SCRIPTS[phrase], workdir=place / "agents")
    try:
        execute(source, agent.command_line, loop)
    finally:
        if phrase in WARM:
            stop_keeper([sys.executable, "-m", "agy_host.cli.main"], os.environ)
    out = capsys.readouterr().out
    if phrase in OUTPUTS:
        assert out == OUTPUTS[phrase], out
    else:
        assert out.startswith("1 "), out


#: What the scripted model API answers for each harness example, and what
#: the example prints (a callable checks what varies).
HARNESS: dict[str, tuple[dict[str, Any], Any]] = {
    "summarise README.md": (
        {"turns": [[[{"text": "A README about agy-host."}]]]},
        lambda out: out.startswith("A README about agy-host. stop 0 py-"),
    ),
    "order 5 apples": (
        {
            "turns": [
                [
                    [{"call": {"name": "lookup_sku", "args": {"fruit": "apple"}}}],
                    [
                        {"text": '```json\n{"sku": "SKU-APP-123", "count": 5}\n```'},
                        {"usage": {"input": 30, "output": 12}},
                    ],
                ]
            ]
        },
        "Order(sku='SKU-APP-123', count=5) 42\nTrue\n",
    ),
}


@pytest.mark.parametrize("phrase", sorted(HARNESS))
@pytest.mark.parametrize("loop", ["trio", "asyncio"])
def test_the_harness_examples_run(
    place: Path, phrase: str, loop: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real Antigravity harness binary, against the scripted model API."""
    from tests.parity.rigs import harness_binary

    source = example(phrase, loop)
    try:
        binary = harness_binary()
    except RuntimeError as exc:
        from agy_host_harness.install import platform_problem

        problem = platform_problem()
        if problem:
            pytest.skip(problem)
        raise AssertionError(str(exc)) from exc
    script, expected = HARNESS[phrase]
    model = ModelApiProcess(place / "model", script)
    try:
        config = Path(os.environ["XDG_CONFIG_HOME"]) / "agy-host" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text(tomli_w.dumps({"harness": {"bin": binary, "base_url": model.url}}))
        monkeypatch.setenv("GEMINI_API_KEY", "test-key")
        execute(source, None, loop)
    finally:
        model.close()
    out = capsys.readouterr().out
    assert expected(out) if callable(expected) else out == expected, out
