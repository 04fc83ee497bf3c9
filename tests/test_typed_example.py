"""docs/examples/typed_program.py, the typed program ``nox -s typecheck``
checks with ``mypy --strict``, runs as written against the kit's fake ACP
agent (a real process); and every public name a program imports from
``agy_host`` is typed for its checker, not the ``Any`` of the lazy
``__getattr__``."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import agy_host
from agy_host.testing.agents import fake_acp_agent_command
from agy_host.testing.isolation import isolated_env

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "typed_program.py"


def test_the_typed_example_runs_against_a_real_agent(tmp_path: Path) -> None:
    answer = '```json\n{"title": "agy-host", "points": ["hosts agents", "in Python"]}\n```'
    agent = fake_acp_agent_command(
        {"prompts": [[{"chunk": "hello"}], [{"chunk": answer}]]}, workdir=tmp_path / "agents"
    )
    project = tmp_path / "project"
    project.mkdir()
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), agent.command_line],
        env=isolated_env(tmp_path / "home", AGY_HOST_TTY="none"),
        cwd=project,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello 0 2 Summary(title='agy-host', points=['hosts agents', 'in Python'])\n", proc.stdout


def test_every_lazy_export_is_typed_for_checkers() -> None:
    """Under ``TYPE_CHECKING`` the package imports each name of its lazy
    table as itself (an explicit re-export), so ``mypy --strict`` checks a
    program's ``agy_host.run(...)`` against the real signature."""
    source = Path(agy_host.__file__).read_text()
    tree = ast.parse(source)
    typed: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom) and stmt.module:
                    for alias in stmt.names:
                        if alias.asname == alias.name:
                            typed[alias.name] = stmt.module
    assert typed == agy_host._EXPORTS


def test_every_public_name_has_a_docstring_of_its_own() -> None:
    """``help(agy_host.X)`` says what X is for, for every export."""
    bare = []
    for name in agy_host.__all__:
        value = getattr(agy_host, name)
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue  # constants and markers
        doc = value.__dict__.get("__doc__") if inspect.isclass(value) else value.__doc__
        if not (doc or "").strip():
            bare.append(name)
    assert bare == []
