"""The help a newcomer reads first (issue 26 item 12): it names the engines
there are, its placeholders read alike on every command, no summary stops
at an abbreviation's period, and one flag says who answers permission
requests (the old switches are hidden aliases that say what replaces them)."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from agy_host.cli import turn_options
from agy_host.cli.app import build_app
from agy_host.cli.state import CliState

REPO = Path(__file__).resolve().parents[2]
#: A placeholder (``NAME``, ``OS-ARCH``, ``PROMPT...``), or literal choices
#: (``text|json``, ``ID|latest``); never click's ``<str>`` or typer's ``{name}``.
PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z0-9-]*|[A-Za-z0-9-]+(?:\|[A-Za-z0-9-]+)+)(?:\.\.\.)?$")


def full_app() -> typer.Typer:
    """Every command: the core's and the installed plugins'."""
    state = CliState(env={})
    app = build_app(state)
    state.plugins.register_commands(app)
    return app


def commands() -> Iterator[tuple[str, Any]]:
    """``(path, click command)`` for every command and group."""
    todo: list[tuple[str, Any]] = [("agy-host", typer.main.get_command(full_app()))]
    while todo:
        path, cmd = todo.pop()
        yield path, cmd
        todo += [(f"{path} {name}", sub) for name, sub in getattr(cmd, "commands", {}).items()]


def shipped_engines() -> list[str]:
    """The engines this repository's plugins register (their entry points)."""
    names = []
    for project in sorted(REPO.glob("plugins/*/pyproject.toml")):
        points = tomllib.loads(project.read_text())["project"].get("entry-points", {})
        names += list(points.get("agy_host.engines", {}))
    return names


def test_the_root_help_names_every_engine() -> None:
    engines = shipped_engines()
    assert sorted(engines) == ["acp", "harness", "stream-json"]
    out = " ".join(CliRunner().invoke(full_app(), ["--help"], env={"COLUMNS": "200"}).output.split())
    for engine in engines:
        assert f"{engine} for" in out, (engine, out)


def test_every_placeholder_reads_alike() -> None:
    bad = []
    for path, cmd in commands():
        ctx = cmd.context_class(cmd, info_name=path)
        for param in cmd.params:
            if getattr(param, "hidden", False) or getattr(param, "is_flag", False) or param.name == "help":
                continue
            metavar = param.make_metavar(ctx)
            if not PLACEHOLDER.match(metavar):
                bad.append(f"{path} {param.opts[0]}: {metavar}")
    assert bad == []


def test_no_summary_stops_at_an_abbreviation() -> None:
    """click cuts a command's summary at the first word that ends with a
    period: ``Set KEY (dotted, e.g.`` was ``config``'s listing of ``set``."""
    cut = []
    for path, cmd in commands():
        summary = cmd.get_short_help_str(limit=1000)
        if re.search(r"\b(?:e\.g|i\.e|etc|vs|cf)\.$", summary) or summary.count("(") != summary.count(")"):
            cut.append(f"{path}: {summary}")
    assert cut == []


@pytest.mark.parametrize("command", ["run", "chat", "ask"])
def test_permissions_is_one_flag(command: str) -> None:
    out = CliRunner().invoke(full_app(), [command, "--help"], env={"COLUMNS": "200"}).output
    assert "--skip-permissions" not in out and "--ask-permissions" not in out
    assert "skip: the agent runs its tools without asking" in " ".join(out.split())


def test_permissions_skip_and_the_deprecated_switches(capsys: pytest.CaptureFixture[str]) -> None:
    skip = turn_options.common("run", {"permissions": "skip"})
    assert (skip["permissions"], skip["skip_permissions"]) == ("auto", True)
    assert capsys.readouterr().err == ""
    old = turn_options.common("run", {"skip_permissions": True})
    assert (old.get("permissions"), old["skip_permissions"]) == (None, True)
    assert "--skip-permissions is deprecated; use --permissions skip" in capsys.readouterr().err
    asked = turn_options.common("run", {"skip_permissions": False})
    assert asked["skip_permissions"] is False
    assert "--ask-permissions is deprecated" in capsys.readouterr().err
