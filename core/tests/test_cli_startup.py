"""Start-up: a command line pays for its own command only.

* the root help, built from stand-ins (agy_host.cli.listing), is the full
  build's text, plugins' commands included, at any width;
* the table of core commands says what their modules register;
* typer builds only the command that runs;
* what ``--help``, a command's help and an unnamed ``run`` import (counted in
  subprocesses: load-independent)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
import typer
import typer.main
from typer._click.utils import make_default_short_help

from agy_host import hookimpl
from agy_host.cli import app as cli_app
from agy_host.cli.listing import CORE
from agy_host.cli.state import CliState
from agy_host.plugins import BUILTIN_PLUGINS, Plugins


class CommandsPlugin:
    """Commands of every shape a plugin may register."""

    @hookimpl
    def agy_host_register_commands(self, app: typer.Typer) -> None:
        @app.command()
        def docstring_only(count: int = typer.Option(1, "--count")) -> None:
            """Help from the docstring. Second sentence."""

        @app.command("hidden-one", hidden=True)
        def hidden_one() -> None:
            """Never listed."""

        @app.command("old-one", deprecated=True, short_help="A short help of its own.")
        def old_one(name: str = typer.Argument(...)) -> None:
            """A long help that the short help replaces."""

        named = typer.Typer(name="grouped", help="A group named by its own Typer.")

        @named.command("inner")
        def inner(flag: bool = typer.Option(False, "--flag")) -> None:
            """An inner command."""

        app.add_typer(named)
        other = typer.Typer()

        @other.callback()
        def other_callback() -> None:
            """A group whose help is its callback's docstring."""

        @other.command("leaf")
        def leaf() -> None:
            """A leaf."""

        app.add_typer(other, name="by-name")


def _outcome(capsys: pytest.CaptureFixture[str], make: Callable[[CliState], typer.Typer], args: list[str]) -> Any:
    state = CliState(extra_plugins=[CommandsPlugin()], env={})
    code = cli_app._run(make(state), args, state)
    out, err = capsys.readouterr()
    return code, out, err


def _full(state: CliState) -> typer.Typer:
    app = cli_app.build_app(state)
    state.plugins.register_commands(app)
    return app


@pytest.mark.parametrize("columns", ["80", "46", "200"])
@pytest.mark.parametrize("args", [[], ["--help"], ["-h"], ["runn"], ["no-such-command"], ["-V"]])
def test_the_root_help_is_the_full_builds_text(
    args: list[str], columns: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    listed = _outcome(capsys, lambda state: cli_app.app_for(list(args), state), args)
    full = _outcome(capsys, _full, args)
    assert listed == full
    assert listed[1] or listed[2]


def test_the_listing_shows_every_command_and_runs_none(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = _outcome(capsys, lambda state: cli_app.app_for(["--help"], state), ["--help"])
    assert code == 0
    listed = [line.split()[0] for line in out.split("Commands:")[1].split("Exit codes")[0].splitlines() if line.strip()]
    assert listed[: len(CORE)] != []
    for name in [*CORE, "docstring-only", "old-one", "grouped", "by-name"]:
        assert name in listed, name
    assert "hidden-one" not in listed


@pytest.mark.parametrize("name", list(CORE))
def test_the_core_table_says_what_each_module_registers(name: str) -> None:
    core = CORE[name]
    app = cli_app.build_app(CliState(env={}), only=name)
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    command = group.commands[name]
    assert isinstance(command, typer.core.TyperGroup) == core.group
    assert command.help is not None
    assert make_default_short_help(command.help, 10**6) == core.summary
    assert (command.short_help, command.hidden, command.deprecated) == (None, False, False)


def test_the_core_table_lists_every_core_command_in_registration_order() -> None:
    app = cli_app.build_app(CliState(env={}))
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    in_table = [n for n, c in CORE.items() if not c.group] + [n for n, c in CORE.items() if c.group]
    assert list(group.commands) == in_table


def test_no_builtin_registers_commands() -> None:
    # Plugins.register_commands does not import the built-ins.
    plugins = Plugins({}, load_entry_points=False)
    impls = plugins.pm.hook.agy_host_register_commands.get_hookimpls()
    assert not [impl.plugin_name for impl in impls if impl.plugin_name in BUILTIN_PLUGINS]


@pytest.mark.parametrize(
    ("args", "built"),
    [
        (["run", "--help"], {"run"}),
        (["config", "path"], {"show", "set", "unset", "path"}),
        (["docstring-only", "--count", "2"], {"docstring-only"}),
    ],
)
def test_typer_builds_only_the_command_that_runs(
    args: list[str], built: set[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[str] = []
    real = typer.main.get_command_from_info

    def spy(command_info: Any, **kwargs: Any) -> Any:
        command = real(command_info, **kwargs)
        seen.append(command.name)
        return command

    monkeypatch.setattr(typer.main, "get_command_from_info", spy)
    code, _out, err = _outcome(capsys, lambda state: cli_app.app_for(list(args), state), args)
    assert code == 0, err
    assert set(seen) == built


IMPORTS = (
    "import sys; from agy_host.cli.main import main; rc = main(sys.argv[1:]);"
    "mods = set(sys.modules); print(); print(rc, sorted(m for m in mods if m in WATCH or m.endswith('.engine')))"
)
WATCH = [
    "trio",
    "msgspec",
    "importlib.metadata",
    "email",
    "stevedore",
    "ctypes",
    *(f"agy_host.cli.{core.module}" for core in CORE.values()),
]


def _imports(env: dict[str, str], *args: str) -> tuple[str, str]:
    code = f"WATCH = {sorted(set(WATCH))!r}; " + IMPORTS
    proc = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=60)
    return proc.stdout.splitlines()[-1], proc.stderr


@pytest.fixture
def env(tmp_path: Any) -> dict[str, str]:
    from agy_host.testing.isolation import isolated_env

    return isolated_env(tmp_path / "home")


def test_the_root_help_imports_no_command_engine_trio_msgspec_or_metadata(env: dict[str, str]) -> None:
    for args in (["--help"], [], ["no-such-command"]):
        line, stderr = _imports(env, *args)
        assert line.split(" ", 1)[1] == "[]", (args, line, stderr)


@pytest.mark.parametrize(("args", "module"), [(["run", "--help"], "run_cmd"), (["config", "path"], "config_cmd")])
def test_a_command_imports_its_own_module_alone(env: dict[str, str], args: list[str], module: str) -> None:
    line, stderr = _imports(env, *args)
    code, imported = line.split(" ", 1)
    assert code == "0", stderr
    ours = [m for m in ast.literal_eval(imported) if m.startswith(("agy_host.cli.", "trio"))]
    assert ours == [f"agy_host.cli.{module}"]


def test_an_unnamed_run_does_not_try_the_thin_client(env: dict[str, str]) -> None:
    # The thin client serves `run --session NAME` only; the console script's
    # process ends in os._exit, after its exit handlers ran.
    code = (
        "import atexit, sys; "
        "atexit.register(lambda: print('thin' if 'agy_host.keeper.thin' in sys.modules else 'no thin', flush=True)); "
        "sys.argv = ['agy-host', 'run', '--no-such-flag', 'hi']; "
        "from agy_host.cli.main import main; raise SystemExit(main())"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout.strip() == "no thin"
    named = code.replace("'run', '--no-such-flag'", "'run', '--session', 's', '--no-such-flag'")
    proc = subprocess.run([sys.executable, "-c", named], env=env, capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "thin"
