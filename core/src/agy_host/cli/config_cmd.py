"""``agy-host config show|set|unset|path``: the effective config and its file."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agy_host.cli.common import FormatOption, check_format, fail, print_json

if TYPE_CHECKING:
    from agy_host.cli.state import CliState
    from agy_host.config import Config
    from agy_host.runtime.host import Host

CONFIG_HELP = """Show or change the config file ($XDG_CONFIG_HOME/agy-host/config.toml,
or $AGY_HOST_CONFIG). Environment variables override the file; a bad value
falls back to its default with a warning, and a file that is not TOML is
moved aside (kept) with a warning.
"""


def register(app: typer.Typer, state: CliState) -> None:
    group = typer.Typer(help=CONFIG_HELP, no_args_is_help=True)
    app.add_typer(group, name="config")

    @group.command("show", help="Print the effective config (defaults, file, environment) and the file's path.")
    def show(fmt: FormatOption = "text") -> None:
        from agy_host import config

        check_format(fmt)
        host = state.host()
        exists = host.config_path.exists()
        shown, inactive = effective(host)
        if fmt == "json":
            doc = {"version": 1, "path": str(host.config_path), "exists": exists, "config": shown}
            print_json({**doc, "inactive": inactive} if inactive else doc)
            return
        typer.echo(f"# {host.config_path}{'' if exists else ' (not created yet; these are the defaults)'}")
        overridden = sorted(var for var in config.ENV_OVERRIDES if var in host.env)
        if overridden:
            typer.echo(f"# overridden by the environment: {', '.join(overridden)}")
        for table, why in inactive.items():
            typer.echo(f"# [{table}] is off here: {why}")
        typer.echo(config.to_toml(shown), nl=False)

    @group.command(
        "set",
        help="Set KEY to VALUE in the config file, atomically; KEY is dotted, as in turn.timeout_minutes.",
        # so that ``config set turn.timeout_minutes -4`` reaches the validator
        # (and its clear message) instead of being parsed as an option
        context_settings={"ignore_unknown_options": True},
    )
    def set_(
        key: Annotated[
            str, typer.Argument(help="Dotted key, e.g. engine, model, turn.timeout_minutes, acp.bin.", metavar="KEY")
        ],
        value: Annotated[
            str, typer.Argument(help="The value; parsed by the key's type (true/false, numbers).", metavar="VALUE")
        ],
    ) -> None:
        from agy_host import config, config_writes

        path = config.config_path(state.env)
        try:
            config_writes.set_value(key, value, path=path)
        except config.ConfigError as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"cannot write {path}: {exc}")
        var = next((v for v, k in config.ENV_OVERRIDES.items() if k == key and v in state.env), None)
        typer.echo(f"{key} = {value!s} written to {path}")
        if var is not None:
            typer.echo(f"agy-host: warning: ${var} is set and overrides {key} in this environment", err=True)

    @group.command("unset", help="Remove KEY from the config file, atomically, so it takes its default again.")
    def unset(
        key: Annotated[str, typer.Argument(help="Dotted key, e.g. permissions.policy, model.", metavar="KEY")],
    ) -> None:
        from agy_host import config, config_writes

        path = config.config_path(state.env)
        try:
            _, removed = config_writes.unset_value(key, path=path)
        except config.ConfigError as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"cannot write {path}: {exc}")
        if removed:
            typer.echo(f"{key} removed from {path}; it takes its default again")
        else:
            typer.echo(f"{key} is not set in {path}; nothing changed")
        var = next((v for v, k in config.ENV_OVERRIDES.items() if k == key and v in state.env), None)
        if var is not None:
            typer.echo(f"agy-host: warning: ${var} is set and overrides {key} in this environment", err=True)

    @group.command("path", help="Print the config file's path.")
    def path() -> None:
        from agy_host import config

        typer.echo(str(config.config_path(state.env)))


def effective(host: Host) -> tuple[Config, dict[str, str]]:
    """The config as it takes effect, and why a table is off whatever it
    says: ``[bridge] enabled = true`` with no bridge to enable (not
    installed, failed to load, left out) is shown as ``false``."""
    import msgspec

    from agy_host.runtime.tool_reach import bridge_state

    shown = host.config
    bridge = bridge_state(host)
    if not shown.bridge.enabled or bridge.status == "loaded":
        return shown, {}
    off = msgspec.structs.replace(shown, bridge=msgspec.structs.replace(shown.bridge, enabled=False))
    return off, {"bridge": f"the MCP bridge {bridge.why}"}


__all__ = ["effective", "register"]
