"""The typer application: core commands plus whatever plugins register.

Command modules import their heavy dependencies (trio, the host, engines)
inside the command functions, so ``agy-host --help`` and plugin command
registration stay cheap. Plugins add commands through the
``agy_host_register_commands`` hook; a plugin that fails there is reported by
``agy-host plugins`` and ``doctor`` and the rest of the CLI still works.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated

import typer

from agy_host.cli.exit_codes import ExitCode, epilog
from agy_host.cli.state import CliState

if TYPE_CHECKING:
    pass

HELP = """Drive coding agents (Google Antigravity first) from the terminal.

agy-host runs one agent turn per `run` (or many in `chat`, or a one-shot
delegation with `ask`), streams the answer, and keeps each named session
bound to its agent conversation so a later `--session NAME` continues it.
Engines (how agy-host talks to an agent: ACP, stream-json) and plugins are
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


def build_app(state: CliState) -> typer.Typer:
    """The root app with the core commands registered."""
    from agy_host.cli import ask_cmd, chat_cmd, config_cmd, doctor_cmd, info_cmds, run_cmd, sessions_cmd

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

    run_cmd.register(app, state)
    chat_cmd.register(app, state)
    ask_cmd.register(app, state)
    sessions_cmd.register(app, state)
    doctor_cmd.register(app, state)
    info_cmds.register(app, state)
    config_cmd.register(app, state)
    return app


def run_app(args: list[str], *, extra_plugins: Sequence[object] = (), env: Mapping[str, str] | None = None) -> int:
    """Build the app, let plugins add commands, run it; return the exit code."""
    state = CliState(extra_plugins=extra_plugins, env=env)
    app = build_app(state)
    state.plugins.register_commands(app)
    return _run(app, args, state)


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


__all__ = ["HELP", "CliState", "build_app", "run_app"]
