"""The code in the plugin docs runs.

* Every ``@hookimpl`` example under ``docs/plugins/`` is executed as a module,
  registered with a real plugin manager (pluggy validates its hook names and
  arguments) and called through agy-host's own facade: renderers render a
  turn, policies decide, tools are called, doctor rows are added. No example
  may record an error.
* The tutorial (``docs/plugins/tutorial.md``) is built from its ``# file:``
  blocks, installed with pip, and its own tests run; the outputs it shows
  (``agy-host plugins``, a ``--format tally`` run, the ``count_lines`` round
  trip through the bridge) are compared with what the real commands print.
* The minimal engine of ``docs/plugins/engines.md`` runs the engine contract
  suite (the scenarios an in-process engine can play; the others are skipped).
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import trio
from doc_blocks import code_blocks

from agy_host.config import Config
from agy_host.contract.diagnostics import DiagnosticReport
from agy_host.contract.events import (
    FileDiff,
    HostEvent,
    PermissionOption,
    TextDelta,
    ToolCard,
    ToolUseRequested,
    TurnEnded,
    TurnStarted,
    UsageCounts,
    UsageReport,
)
from agy_host.contract.permissions import PermissionDecision, PermissionRequest
from agy_host.contract.prompt_parts import PromptContext, PromptPart
from agy_host.contract.rendering import RenderOptions
from agy_host.contract.run_context import RunContext, TurnContext
from agy_host.plugins import Plugins
from agy_host.testing.contract import EngineContract, EngineHarness
from agy_host.testing.pytest_plugin import CliResult

REPO_ROOT = Path(__file__).resolve().parent.parent
PLUGIN_DOCS = REPO_ROOT / "docs" / "plugins"
TUTORIAL = PLUGIN_DOCS / "tutorial.md"

Cli = Callable[..., CliResult]


def file_blocks(path: Path) -> dict[str, str]:
    """Blocks whose first line is ``# file: NAME``, by NAME."""
    found: dict[str, str] = {}
    for _lang, code in code_blocks(path):
        first, _, _rest = code.partition("\n")
        if first.startswith("# file: "):
            found[first.removeprefix("# file: ").strip()] = code + "\n"
    return found


def load_module(name: str, code: str, origin: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = origin
    exec(compile(code, origin, "exec"), module.__dict__)
    return module


# ---------------------------------------------------------------------------
# every @hookimpl example
# ---------------------------------------------------------------------------

EXAMPLES = [
    (path, n, code)
    for path in sorted(PLUGIN_DOCS.rglob("*.md"))
    for n, (lang, code) in enumerate(code_blocks(path))
    if lang == "python" and "@hookimpl" in code and not code.startswith("# file:")
]


def _sample_turn() -> list[HostEvent]:
    diff = FileDiff(path="a.txt", old_text="one\n", new_text="two\n")
    return [
        TurnStarted(session="docs", engine="acp", agent="fake", model="m"),
        TextDelta(delta="Hello "),
        ToolCard(call_id="c1", name="edit", status="started", kind="edit", diff=diff),
        ToolCard(call_id="c1", name="edit", status="done", kind="edit", diff=diff, duration_s=0.1),
        UsageReport(turn=UsageCounts(input_tokens=3, output_tokens=2)),
        ToolUseRequested(call_id="h1", name="host_tool"),
        TextDelta(delta="world."),
        TurnEnded(stop_reason="stop", duration_s=1.0, response="Hello world."),
        TurnStarted(session="docs", engine="acp"),
        TurnEnded(stop_reason="error", duration_s=0.5, error="boom", error_kind="agent"),
    ]


def _request(*, question: bool = False) -> PermissionRequest:
    return PermissionRequest(
        session="docs",
        call_id="interaction_1" if question else "p1",
        title="Run ls?",
        tool_kind="read",
        options=[
            PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
            PermissionOption(option_id="no", name="Reject", kind="reject_once"),
        ],
        is_question=question,
    )


@pytest.mark.parametrize(("path", "index", "code"), EXAMPLES, ids=[f"{p.stem}-{n}" for p, n, _ in EXAMPLES])
async def test_a_documented_hook_implementation_loads_and_runs(  # noqa: PLR0917 - fixtures and parameters
    path: Path, index: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agy_host_home: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("hello\n")
    baseline = Plugins(env={}, load_entry_points=False)
    module = load_module(f"docs_example_{path.stem}_{index}", code, f"{path}#block{index}")
    plugins = Plugins(env={}, load_entry_points=False)
    plugins.register(module, name="docs-example")
    plugins.check()
    implemented = {caller.name for caller in plugins.pm.get_hookcallers(module) or []}
    assert implemented, f"{path.name} block {index} implements no hook"

    for name in set(plugins.renderers()) - set(baseline.renderers()):
        out = io.StringIO()
        renderer = plugins.renderers()[name](RenderOptions(stream=out))
        for event in _sample_turn():
            renderer.handle(event)
        renderer.close()
        assert out.getvalue(), f"renderer {name!r} wrote nothing for a whole turn"
    for name, policy in plugins.permission_policies().items():
        if name in baseline.permission_policies():
            continue
        for question in (False, True):
            decision = await policy.decide(_request(question=question))
            assert isinstance(decision, PermissionDecision) and decision.policy == policy.name
            assert decision.option_id in {None, "yes", "no"}
            if question:
                assert decision.option_id is None, "a policy must never answer a question"
    old_tools = {t.name for t in baseline.tools()}
    for tool in plugins.tools():
        if tool.name not in old_tools:
            for args in ({}, {"name": "a.md"}):
                result = await tool.call(args)
                assert isinstance(result.text, str)
    plugins.configure(RunContext(config=Config(), env={}, state_dir=tmp_path / "state"))
    turn = TurnContext(
        session="docs",
        engine="acp",
        cwd=str(tmp_path),
        user_text="deploy",
        new_conversation=True,
        config=Config(),
        env={},
    )
    plugins.turn_started(turn)
    ctx = PromptContext(session="docs", engine="acp", cwd=str(tmp_path), new_conversation=True, user_text="deploy")
    assert all(isinstance(p, PromptPart) for p in plugins.prompt_parts(ctx))
    plugins.mcp_servers("acp")
    for event in _sample_turn():
        plugins.render_event(event)
    plugins.diagnostics(DiagnosticReport())
    plugins.services(Config())
    card = _sample_turn()[3]
    assert isinstance(card, ToolCard)
    diff = plugins.render_diff(card, str(tmp_path))
    assert diff is None or isinstance(diff, str)
    import typer

    plugins.register_commands(typer.Typer())
    errors = [e for e in plugins.errors if e.name == "docs-example"]
    assert not errors, f"{path.name} block {index}: {errors}"


def test_the_examples_cover_every_family() -> None:
    names = {m for _, _, code in EXAMPLES for m in re.findall(r"def (agy_host_\w+)\(", code)}
    from agy_host import hookspecs

    hooks = {n for n in dir(hookspecs) if n.startswith("agy_host_")}
    assert hooks <= names, f"hooks without a runnable example in docs/plugins: {sorted(hooks - names)}"


# ---------------------------------------------------------------------------
# the tutorial, built and installed
# ---------------------------------------------------------------------------


@dataclass
class Tally:
    project: Path
    site: Path

    @property
    def env(self) -> dict[str, str]:
        return {"PYTHONPATH": os.pathsep.join(filter(None, [str(self.site), os.environ.get("PYTHONPATH", "")]))}


@pytest.fixture(scope="module")
def tally(tmp_path_factory: pytest.TempPathFactory) -> Tally:
    """The tutorial's plugin, written from its ``# file:`` blocks and
    installed with pip into a directory that subprocesses put on their path."""
    root = tmp_path_factory.mktemp("tutorial")
    project = root / "agy-host-tally"
    files = file_blocks(TUTORIAL)
    expected = {
        "pyproject.toml",
        "src/agy_host_tally/__init__.py",
        "src/agy_host_tally/hooks.py",
        "tests/test_tally.py",
        "count-lines.toml",
    }
    assert set(files) == expected, sorted(files)
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    site = root / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(site), str(project)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"pip install of the tutorial plugin failed:\n{proc.stdout}\n{proc.stderr}"
    return Tally(project=project, site=site)


def _require_acp() -> None:
    if not any(ep.name == "acp" for ep in metadata.entry_points(group="agy_host.engines")):
        pytest.skip("the ACP engine (agy-host-acp) is not installed")


def test_the_tutorials_own_tests_pass(tally: Tally) -> None:
    _require_acp()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}, **tally.env}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider"],
        cwd=tally.project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"the tutorial's tests failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
    assert "4 passed" in proc.stdout, proc.stdout


def test_the_tutorial_shows_what_agy_host_plugins_prints(tally: Tally, agy_host_cli: Cli) -> None:
    result = agy_host_cli("plugins", env=tally.env)
    lines = result.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("tally  ["))
    shown = "\n".join(lines[at : at + 2])
    assert shown == "tally  [agy-host-tally 0.1.0]\n    hooks: agy_host_register_renderers, agy_host_register_tools"
    assert shown in TUTORIAL.read_text("utf-8")


def _tally_line(text: str) -> str:
    """The ``[tally]`` line with its time left out."""
    match = re.search(r"^\[tally\] (.*?), [\d.]+s, (\w+)$", text, re.M)
    assert match, text
    return f"{match.group(1)} ... {match.group(2)}"


def test_the_tutorials_tally_run_prints_what_it_shows(tally: Tally, agy_host_cli: Cli) -> None:
    _require_acp()
    agent = f"{sys.executable} -m agy_host.testing.acp.agent --scenario happy"
    result = agy_host_cli("run", "--engine", "acp", "--agent", agent, "--format", "tally", "hi", env=tally.env)
    assert result.returncode == 0, result
    doc = TUTORIAL.read_text("utf-8")
    shown = doc.split('--scenario happy" --format tally "hi"\n', 1)[1]
    assert result.stdout.splitlines()[0] == shown.splitlines()[0] == "HELLO"
    assert _tally_line(result.stdout) == _tally_line(shown.split("```", 1)[0])


def test_the_tutorials_count_lines_round_trip_prints_what_it_shows(tally: Tally, agy_host_cli: Cli) -> None:
    _require_acp()
    if not any(ep.name == "bridge_mcp" for ep in metadata.entry_points(group="agy_host")):
        pytest.skip("the MCP bridge (agy-host-bridge-mcp) is not installed")
    scenario = tally.project / "count-lines.toml"
    agent = f"{sys.executable} -m agy_host.testing.acp.agent --scenario {scenario}"
    result = agy_host_cli(
        "run", "--engine", "acp", "--agent", agent, "--format", "tally", "count", env=tally.env, cwd=tally.project
    )
    assert result.returncode == 0, result
    lines = (tally.project / "pyproject.toml").read_text().count("\n")
    first = f"tool result: pyproject.toml: {lines} lines"
    assert result.stdout.splitlines()[0] == first, result
    doc = TUTORIAL.read_text("utf-8")
    shown = doc.split('--scenario count-lines.toml" --format tally "count"\n', 1)[1].split("```", 1)[0]
    assert shown.splitlines()[0] == first, "the tutorial shows another line count than the real run"
    assert _tally_line(result.stdout) == _tally_line(shown)


# ---------------------------------------------------------------------------
# the minimal engine of engines.md, against the contract
# ---------------------------------------------------------------------------

_ENGINE_CODE = file_blocks(PLUGIN_DOCS / "engines.md")["agy_host_words/engine.py"]
WORDS = load_module("agy_host_words_engine", _ENGINE_CODE, str(PLUGIN_DOCS / "engines.md"))


class WordsHarness(EngineHarness):
    """An in-process engine has no agent process: only ``happy`` applies."""

    engine_name = "words"
    scenarios = {"happy": None}  # noqa: RUF012 - read-only by convention

    def make_engine(self, scenario: str, **knobs: Any) -> Any:
        self.scenario(scenario)
        return WORDS.WordsEngine(self.context())


@pytest.fixture
def engine_harness(tmp_path: Path) -> WordsHarness:
    return WordsHarness(tmp_path / "words")


class TestTheDocumentedEngineMeetsTheContract(EngineContract):
    pass


async def test_the_documented_engine_times_out_and_parks() -> None:
    """What the contract cannot ask of it (no ``endless`` scenario): its
    deadline fires visibly, and a park stops it."""
    from agy_host.contract.events import BridgeCallActivity
    from agy_host.testing.contract import collect, outcome_of, text_of

    harness = WordsHarness(Path(os.environ.get("TMPDIR", "/tmp")) / "agy-host-words")
    words = " ".join(f"w{i}" for i in range(60))  # ~0.6 s of output
    async with harness.make_engine("happy").open_driver() as driver:
        out = outcome_of(await collect(await driver.run(harness.request(words, timeout_s=0.2)), seconds=10))
        assert (out.status, out.error_kind) == ("error", "timeout"), out
        handle = await driver.run(harness.request(words, timeout_s=0.4))
        seen = []
        with trio.fail_after(10):
            async for act in handle:
                seen.append(act)
                if len(seen) == 1:
                    assert handle.push_external(BridgeCallActivity(call_id="b1", name="tool"))
                elif isinstance(act, BridgeCallActivity):
                    assert driver.reentry() is handle
                    await trio.sleep(0.5)
                    driver.kick_idle()
        out = outcome_of(seen)
    assert out.status == "ok" and out.response == text_of(seen), out
