"""``agy-host plugins``, ``engine`` and ``models``: what is installed, which
engine is used and why, what it can run. (``sessions`` lives in
:mod:`agy_host.cli.sessions_cmd`.)"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agy_host.cli.common import FormatOption, check_format, fail, print_json
from agy_host.cli.exit_codes import ExitCode

if TYPE_CHECKING:
    from agy_host.cli.state import CliState
    from agy_host.engine.base import Engine, ModelCatalog
    from agy_host.runtime.host import Host

#: ``models`` may start the agent; past this it is reported as stuck.
MODELS_TIMEOUT_S = 120.0

PLUGINS_HELP = """List plugins: name, version, distribution, the hooks each implements,
and every plugin that failed to load (with the error). Engines are listed
from their entry points without being imported. AGY_HOST_LOAD_PLUGINS=a,b
loads only those plugins; AGY_HOST_DISABLE_PLUGINS=a,b skips them;
AGY_HOST_TRACE_HOOKS=1 prints every hook call.
"""

ENGINE_HELP = """Show which engine is selected and why, or select NAME.

Precedence: --engine, then --agent (an ACP agent command selects the acp
engine), then $AGY_HOST_ENGINE, then `engine` in the config file, then the
only engine installed, then `stream-json` if installed (the default until
Antigravity's ACP server reports usage), then the first installed. With
NAME (which must be installed) it is written to the config file.
"""


def register(app: typer.Typer, state: CliState) -> None:
    @app.command("plugins", help=PLUGINS_HELP)
    def plugins(
        fmt: FormatOption = "text",
        show_all: Annotated[bool, typer.Option("--all", help="Include agy-host's built-in plugins.")] = False,
    ) -> None:
        check_format(fmt)
        host = state.host()
        _print_plugins(host, fmt, show_all)

    @app.command("engine", help=ENGINE_HELP)
    def engine(
        name: Annotated[
            str | None, typer.Argument(help="Engine to select and save in the config.", metavar="NAME")
        ] = None,
        fmt: FormatOption = "text",
    ) -> None:
        check_format(fmt)
        host = state.host()
        if name is None:
            _show_engine(host, fmt)
        else:
            _set_engine(host, name, fmt)

    @app.command("models", help="List the models the selected engine can run (may start the agent).")
    def models(
        fmt: FormatOption = "text",
        engine_name: Annotated[
            str | None, typer.Option("--engine", "-e", help="Engine to ask.", metavar="NAME")
        ] = None,
        agent: Annotated[str | None, typer.Option("--agent", help="Agent command or profile.", metavar="CMD")] = None,
    ) -> None:
        check_format(fmt)
        host = state.host(engine=engine_name, agent=agent)
        catalog = _catalog(engine_or_fail(host))
        if fmt == "json":
            print_json(catalog)
            return
        if not catalog.models:
            typer.echo(f"no models reported (source: {catalog.source})")
            return
        for model in catalog.models:
            mark = "*" if model.current or model.id == catalog.current else " "
            efforts = f"  efforts: {', '.join(model.efforts)}" if model.efforts else ""
            label = f"  {model.name}" if model.name and model.name != model.id else ""
            typer.echo(f"{mark} {model.id}{label}{efforts}")
        typer.echo(f"(source: {catalog.source})", err=True)


def engine_or_fail(host: Host) -> Engine:
    from agy_host.engine.base import EngineError

    try:
        return host.load_engine()
    except EngineError as exc:
        fail(str(exc))


def _catalog(engine: Engine) -> ModelCatalog:
    import trio

    async def ask() -> ModelCatalog | None:
        with trio.move_on_after(MODELS_TIMEOUT_S):
            return await engine.list_models()
        return None

    try:
        catalog = trio.run(ask)
    except Exception as exc:
        fail(f"the {engine.ENGINE_NAME} engine could not list models: {type(exc).__name__}: {exc}")
    if catalog is None:
        fail(f"the {engine.ENGINE_NAME} engine did not list its models within {MODELS_TIMEOUT_S:g}s", ExitCode.TIMEOUT)
    return catalog


def _print_plugins(host: Host, fmt: str, show_all: bool) -> None:
    from agy_host.engine.base import installed_engines

    infos = [i for i in host.plugins.info() if show_all or not i.builtin]
    engines = installed_engines()
    if fmt == "json":
        print_json(
            {
                "version": 1,
                "plugins": infos,
                "engines": engines,
                "disabled": host.plugins.disabled,
                "errors": host.plugins.errors,
            }
        )
        return
    if not infos:
        typer.echo("plugins: none" + ("" if show_all else " (built-ins hidden; --all shows them)"))
    for info in infos:
        origin = f"{info.distribution} {info.version}".strip() or "in-process"
        typer.echo(f"{info.name}  [{origin}]{'  (built-in)' if info.builtin else ''}")
        typer.echo(f"    hooks: {', '.join(info.hooks) or 'none'}")
    typer.echo("engines (entry points, not imported):" if engines else "engines: none installed")
    for entry in engines:
        typer.echo(f"  {entry.name}  [{entry.distribution} {entry.version}]  {entry.value}")
    for name in host.plugins.disabled:
        typer.echo(f"disabled: {name}")
    if host.plugins.errors:
        typer.echo("load errors:")
    for err in host.plugins.errors:
        where = f" ({err.distribution})" if err.distribution else ""
        typer.echo(f"  {err.name}{where}: {err.error}")


def _show_engine(host: Host, fmt: str) -> None:
    from agy_host.engine.base import EngineError

    installed = host.installed_engines()
    try:
        choice = host.engine_choice()
    except EngineError as exc:
        if fmt == "json":
            print_json({"version": 1, "engine": None, "error": str(exc), "installed": installed})
            raise typer.Exit(ExitCode.ERROR) from None
        fail(str(exc))
    if fmt == "json":
        print_json(
            {
                "version": 1,
                "engine": choice.name,
                "source": choice.source,
                "reason": choice.reason,
                "installed": installed,
            }
        )
        return
    typer.echo(f"engine: {choice.name} ({choice.reason})")
    if choice.name not in installed:
        typer.echo(f"  warning: {choice.name!r} is not installed", err=True)
    typer.echo("installed:" if installed else "installed: none")
    summaries = _engine_summaries()
    for name, origin in installed.items():
        typer.echo(f"  {'*' if name == choice.name else ' '} {name}  {origin}")
        if summaries.get(name):
            typer.echo(f"      {summaries[name]}")
    if len(installed) > 1:
        typer.echo("choose one per command with --engine NAME, or keep one with `agy-host engine NAME`")


def _engine_summaries() -> dict[str, str]:
    """Each engine distribution's one-line summary (what it drives), read from
    its metadata without importing it; only this command pays for it."""
    from agy_host import entry_points
    from agy_host.engine.base import ENGINE_GROUP

    out: dict[str, str] = {}
    for ep in entry_points.group(ENGINE_GROUP):
        dist = getattr(ep, "dist", None)
        if dist is not None:
            out.setdefault(ep.name, dist.metadata.get("Summary") or "")
    return out


def _set_engine(host: Host, name: str, fmt: str) -> None:
    from agy_host import config, config_writes

    installed = host.installed_engines()
    if name not in installed:
        listing = ", ".join(installed) or "none"
        fail(f"unknown engine {name!r}; installed engines: {listing}")
    try:
        path = config_writes.set_value("engine", name, path=host.config_path)
    except config.ConfigError as exc:
        fail(str(exc))
    env_value = host.env.get("AGY_HOST_ENGINE", "")
    if env_value and env_value != name:
        host.warn(f"AGY_HOST_ENGINE={env_value} is set and still wins over the config in this environment")
    if fmt == "json":
        print_json({"version": 1, "engine": name, "path": str(path)})
    else:
        typer.echo(f"engine set to {name} in {path}")


__all__ = ["MODELS_TIMEOUT_S", "engine_or_fail", "register"]
