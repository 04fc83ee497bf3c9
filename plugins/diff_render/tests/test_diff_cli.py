"""End to end: ``agy-host run`` against real agent processes shows real diffs
for edits with this plugin, and ``[edit: PATH]`` labels without it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

AGY_HOST = Path(sys.executable).with_name("agy-host")
ENGINES = {ep.name for ep in metadata.entry_points(group="agy_host.engines")}

if not AGY_HOST.exists():
    pytest.skip(f"console script not installed next to {sys.executable}", allow_module_level=True)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    out = {k: v for k, v in os.environ.items() if not k.startswith(("AGY_", "PYTEST", "XDG_", "NO_COLOR"))}
    out.update(
        AGY_HOST_KEEP_ALIVE_MINUTES="0",  # cold: no keeper outlives the test
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_CACHE_HOME=str(home / ".cache"),
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    return out


@pytest.fixture
def repo(tmp_path: Path, env: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def main():\n    print('hi')\n    return 0\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    return root


def run(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(AGY_HOST), "run", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=90, check=False
    )


def acp_edit(path: Path) -> dict[str, Any]:
    """A scenario: the agent reports an edit of ``path`` with its old and new text."""
    old = path.read_text()
    new = old.replace("print('hi')", "print('hello')")
    call = {
        "toolCallId": "e1",
        "title": "Edit app.py",
        "kind": "edit",
        "status": "pending",
        "content": [{"type": "diff", "path": str(path), "oldText": old, "newText": new}],
        "locations": [{"path": str(path)}],
    }
    return {
        "prompt": [
            {"tool_call": call},
            {"tool_call_update": {"toolCallId": "e1", "status": "completed"}},
            {"chunk": "edited"},
            {"stop": "end_turn"},
        ]
    }


@pytest.mark.skipif("acp" not in ENGINES, reason="the ACP engine is not installed")
def test_acp_edit_shows_a_numbered_diff(env: dict[str, str], repo: Path, fake_acp_agent: Callable[..., Any]) -> None:
    agent = fake_acp_agent(acp_edit(repo / "app.py"))
    proc = run(env | {"AGY_HOST_ENGINE": "acp"}, repo, "--agent", agent.command_line, "go")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "edited\n"
    lines = proc.stderr.splitlines()
    assert "  --- a/app.py" in lines and "  +++ b/app.py" in lines
    assert "  -2   │     print('hi')" in lines
    assert "  +  2 │     print('hello')" in lines


@pytest.mark.skipif("acp" not in ENGINES, reason="the ACP engine is not installed")
def test_a_claude_edit_fragment_is_shown_in_its_file(
    env: dict[str, str], tmp_path: Path, fake_acp_agent: Callable[..., Any]
) -> None:
    """claude-agent-acp's diff is the edited line alone, without a final
    newline (the fake's ``claude-edit``, moved to a real file that ends in
    one): the diff shows it at its line, and never "No newline at end of file"."""
    import json

    from agy_host.testing.acp.scenarios import BUILTIN
    from agy_host_diff_render.unified import NO_NEWLINE

    app = tmp_path / "src" / "app.ts"
    app.parent.mkdir()
    app.write_text("line 1\nconst value = 2;\nline 3\n")  # as the agent's edit left it
    scenario = json.loads(json.dumps(BUILTIN["claude-edit"]).replace("/w/src/app.ts", str(app)))
    agent = fake_acp_agent(scenario).command_line
    proc = run(env | {"AGY_HOST_ENGINE": "acp"}, tmp_path, "--agent", agent, "--permissions", "auto", "go")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert "  -2   │ const value = 1;" in lines and "  +  2 │ const value = 2;" in lines, proc.stderr
    assert "   1 1 │ line 1" in lines, proc.stderr
    assert NO_NEWLINE not in proc.stderr


@pytest.mark.skipif("acp" not in ENGINES, reason="the ACP engine is not installed")
def test_without_the_plugin_edits_are_labels(
    env: dict[str, str], repo: Path, fake_acp_agent: Callable[..., Any]
) -> None:
    agent = fake_acp_agent(acp_edit(repo / "app.py"))
    proc = run(
        env | {"AGY_HOST_ENGINE": "acp", "AGY_HOST_DISABLE_PLUGINS": "diff_render"},
        repo,
        "--agent",
        agent.command_line,
        "go",
    )
    assert proc.returncode == 0, proc.stderr
    assert "  [edit: app.py]" in proc.stderr.splitlines()
    assert "print('hello')" not in proc.stderr


@pytest.mark.skipif("stream-json" not in ENGINES, reason="the stream-json engine is not installed")
def test_stream_json_edit_is_diffed_against_git(env: dict[str, str], repo: Path, tmp_path: Path) -> None:
    from agy_host.testing.agy_cli.agent import make_fake_agy

    (repo / "app.py").write_text("def main():\n    print('hi')\n    return 0\n# the user's edit\n")  # dirty before
    new = "def main():\n    print('hello')\n    return 0\n# the user's edit\n"
    scenario = {
        "turns": [
            [
                {
                    "tool": {
                        "name": "write_to_file",
                        "params": {"TargetFile": str(repo / "app.py"), "CodeContent": new},
                        "needs_permission": False,
                    }
                },
                {"say": "edited"},
            ]
        ]
    }
    agy = make_fake_agy(tmp_path / "fake-agy", scenario)
    proc = run(env | agy.env | {"AGY_HOST_ENGINE": "stream-json"}, repo, "go")
    assert proc.returncode == 0, proc.stderr
    changed = [line for line in proc.stderr.splitlines() if line.startswith(("  -", "  +")) and "│" in line]
    assert changed == ["  -2   │     print('hi')", "  +  2 │     print('hello')"], proc.stderr


def logging_git(tmp_path: Path, env: dict[str, str]) -> tuple[dict[str, str], Path]:
    """A ``git`` first on ``PATH`` that logs its arguments, then runs the real one."""
    import shutil

    real = shutil.which("git", path=env.get("PATH"))
    assert real is not None
    bin_dir = tmp_path / "logging-bin"
    bin_dir.mkdir()
    log = tmp_path / "git.log"
    wrapper = bin_dir / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    return env | {"PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"}, log


@pytest.mark.skipif("stream-json" not in ENGINES, reason="the stream-json engine is not installed")
def test_no_baseline_is_taken_when_no_renderer_draws_diffs(env: dict[str, str], repo: Path, tmp_path: Path) -> None:
    """``--format json`` draws no diffs, so the turn start runs no ``git``;
    ``--format plain`` (which draws them) does, on the same turn."""
    from agy_host.testing.agy_cli.agent import make_fake_agy

    scenario = {"turns": [[{"say": "nothing to edit"}]]}
    agy = make_fake_agy(tmp_path / "fake-agy", scenario)
    logged, log = logging_git(tmp_path, env)
    base = logged | agy.env | {"AGY_HOST_ENGINE": "stream-json"}

    as_json = run(base, repo, "--format", "json", "go")
    assert as_json.returncode == 0, as_json.stderr
    assert not log.exists() or "status" not in log.read_text(), log.read_text()

    plain = run(base, repo, "--format", "plain", "go")
    assert plain.returncode == 0, plain.stderr
    assert "status --porcelain=v1" in log.read_text(), "the plain renderer draws diffs: its turn takes a baseline"
