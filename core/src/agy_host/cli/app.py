"""The typer application: core commands plus whatever plugins register.

A command line pays only for the command it runs (docs/ARCHITECTURE.md,
"Start-up"): :func:`app_for` imports and registers that command's module
alone and lets typer build nothing else; the root help is built from
stand-ins (:mod:`agy_host.cli.listing`). Command modules import their heavy
dependencies (trio, the host, engines) inside the command functions.
Plugins add commands through the ``agy_host_register_commands`` hook; a
plugin that fails there is reported by ``agy-host plugins`` and ``doctor``
and the rest of the CLI still works.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping, Sequence
from typing import Annotated

import typer

from agy_host.cli import listing
from agy_host.cli.exit_codes import ExitCode, epilog
from agy_host.cli.state import CliState

#: Root options that run no command: with only these (or nothing), the help is all that can be shown.
ROOT_FLAGS = frozenset({"-h", "--help", "-V", "--version"})

HELP = """Drive coding agents (Google Antigravity first) from the terminal.

agy-host runs one agent turn per `run` (or many in `chat`, or a one-shot
delegation with `ask`), streams the answer, and keeps each named session
bound to its agent conversation so a later `--session NAME` continues it.
Engines (how agy-host talks to an agent: acp for any ACP agent, stream-json
for the agy CLI, harness for Google's Antigravity harness) and plugins are
separate packages; `agy-host plugins` lists what is installed and
`agy-host doctor` checks that it works, without spending tokens.

Config: $XDG_CONFIG_HOME/agy-host/config.toml (`agy-host config path`);
environment variables AGY_HOST_* override it, command-line flags override both.
"""


def _version(value: bool) -> None:
    if value:
        from agy_host import __version__

        typer.echo(f"agy-host {__version__}")
        raise typer.Exit(ExitCode.OK)


def build_app(state: CliState, only: str | None = None) -> typer.Typer:
    """The root app with the core commands registered: all of them, or with
    ``only``, just the module that registers that command (none when it is
    not a core command)."""
    app = _root()
    for module in listing.modules(only):
        importlib.import_module(f"agy_host.cli.{module}").register(app, state)
    return app


def _root() -> typer.Typer:
    app = typer.Typer(
        name="agy-host",
        help=HELP,
        epilog=epilog(),
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )

    @app.callback()
    def _root(
        version: Annotated[
            bool,
            typer.Option("--version", "-V", help="Print the version and exit.", callback=_version, is_eager=True),
        ] = False,
    ) -> None:
        """Drive coding agents from the terminal."""

    return app


def run_app(args: list[str], *, extra_plugins: Sequence[object] = (), env: Mapping[str, str] | None = None) -> int:
    """Build the app for ``args``, let plugins add commands, run it; return the exit code."""
    state = CliState(extra_plugins=extra_plugins, env=env)
    try:
        app = app_for(args, state)
    except KeyboardInterrupt:  # Ctrl-C while the commands and plugins load
        print("agy-host: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    return _run(app, args, state)


def app_for(args: list[str], state: CliState) -> typer.Typer:
    """The app ``args`` need: the command they name alone; the root help's
    stand-ins when they name none (no arguments, ``--help``, a word that is
    no command); the whole app for anything else (a root option typer will
    refuse)."""
    word = args[0] if args and not args[0].startswith("-") else None
    if word is not None:
        app = build_app(state, word)
        state.plugins.register_commands(app)
        if listing.keep_only(app, word):
            return app
    elif not all(arg in ROOT_FLAGS for arg in args):
        app = build_app(state)
        state.plugins.register_commands(app)
        return app
    app = _root()
    listing.add_core(app)
    state.plugins.register_commands(app)
    return listing.listing(app)


def _run(app: typer.Typer, args: list[str], state: CliState) -> int:
    try:
        app(args=args, prog_name="agy-host", standalone_mode=True)
    except SystemExit as exc:
        return _code(exc.code)
    except KeyboardInterrupt:
        print("agy-host: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except Exception as exc:
        from agy_host.fsutil import LockTimeout
        from agy_host.runtime.store import StoreError

        if isinstance(exc, (LockTimeout, StoreError)):
            # The state on disk is busy or unreadable: the user's to resolve, not a bug.
            print(f"agy-host: error: {exc}", file=sys.stderr)
            return ExitCode.ERROR
        # A bug in agy-host or a plugin command: say so plainly; the traceback
        # is there when asked for.
        print(f"agy-host: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        if state.env.get("AGY_HOST_DEBUG", "") not in {"", "0"}:
            import traceback

            traceback.print_exc()
        else:
            print("agy-host: set AGY_HOST_DEBUG=1 for the traceback", file=sys.stderr)
        return ExitCode.ERROR
    return ExitCode.OK


def _code(code: object) -> int:
    if code is None:
        return ExitCode.OK
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return ExitCode.ERROR


__all__ = ["HELP", "ROOT_FLAGS", "CliState", "app_for", "build_app", "run_app"]
