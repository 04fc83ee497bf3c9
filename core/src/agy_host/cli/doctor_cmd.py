"""``agy-host doctor``: is everything in place to run a turn? Spends no tokens.

Rows come from four places: core (which engine and why, sessions, the last
run's driver snapshot and the slash commands its agent advertised), the selected engine's own probe
(:meth:`~agy_host.engine.base.Engine.diagnose`: binary resolution with every path
tried, handshake, server version, auth), every plugin's
``agy_host_diagnostics`` hook, and the plugin manager (what loaded, what
failed to). Exit 1 when any row is an error, so scripts can gate on it.
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import typer

from agy_host.cli.common import FormatOption, check_format, print_json
from agy_host.cli.exit_codes import ExitCode

if TYPE_CHECKING:
    from agy_host.cli.state import CliState
    from agy_host.contract.diagnostics import DiagnosticReport, DiagnosticSection
    from agy_host.contract.events import AgentCommand
    from agy_host.engine.base import Engine
    from agy_host.engine.driver import DriverSnapshot
    from agy_host.keeper import wire
    from agy_host.runtime.host import Host

#: An engine probe that takes longer is reported as stuck, not waited for.
DIAGNOSE_TIMEOUT_S = 90.0

DOCTOR_HELP = """Check the selected engine, its agent, config, sessions and plugins.

Shows which engine is selected and why, how the agent binary was resolved
(every path tried), the agent's version, handshake time and sign-in state,
the last run's driver state, session id, stats and lifecycle, and every
plugin with its load errors. Spends no tokens. Exit 1 when a check failed.
"""


def register(app: typer.Typer, state: CliState) -> None:
    @app.command("doctor", help=DOCTOR_HELP)
    def doctor(
        fmt: FormatOption = "text",
        engine: Annotated[
            str | None, typer.Option("--engine", "-e", help="Check this engine instead.", metavar="NAME")
        ] = None,
        agent: Annotated[
            str | None, typer.Option("--agent", help="Check this agent command or profile.", metavar="CMD")
        ] = None,
    ) -> None:
        check_format(fmt)
        host = state.host(engine=engine, agent=agent)
        report = build_report(host)
        if fmt == "json":
            print_json(
                {
                    "version": 1,
                    "status": report.worst,
                    "sections": report.sections,
                    "plugins": host.plugins.info(),
                    "errors": host.plugins.errors,
                }
            )
        else:
            typer.echo(report.format())
        raise typer.Exit(ExitCode.ERROR if report.worst == "error" else ExitCode.OK)


def build_report(host: Host) -> DiagnosticReport:
    from agy_host import __version__
    from agy_host.contract.diagnostics import DiagnosticReport

    report = DiagnosticReport()
    core = report.section("agy-host")
    core.add("version", f"{__version__} (Python {platform.python_version()})")
    engine = _engine_rows(host, report)
    if engine is not None:
        _probe(engine, report)
        _capability_rows(engine, report)
    _session_rows(host, engine, report)
    if engine is not None:
        host_tool_rows(host, engine, report)
    _warm_rows(host, report)
    _last_run_rows(host, report)
    rendering_rows(host, report)
    host.plugins.diagnostics(report)
    _plugin_rows(host, report)
    if host.warnings:
        sec = report.section("warnings")
        for message in host.warnings:
            sec.add("warning", message, "warn")
    return report


def _engine_rows(host: Host, report: DiagnosticReport) -> Engine | None:
    from agy_host.engine.base import EngineError

    sec = report.section("engine")
    installed = host.installed_engines()
    sec.add(
        "installed",
        ", ".join(installed) or "none",
        "ok" if installed else "error",
        detail=[f"{name}: {origin}" for name, origin in installed.items()],
    )
    try:
        choice = host.engine_choice()
    except EngineError as exc:
        sec.add("selected", str(exc), "error")
        return None
    sec.add("selected", f"{choice.name} ({choice.reason})", "ok")
    try:
        engine = host.load_engine()
    except EngineError as exc:
        sec.add("load", str(exc), "error")
        return None
    sec.add("agent", engine.agent_label())
    if engine.sandbox:
        sec.add("sandbox", "no real agent installed; turns run on the bundled sandbox agent", "warn")
    return engine


def _capability_rows(engine: Engine, report: DiagnosticReport) -> None:
    """What the agent can do: as it advertised it when the probe asked
    (an ACP agent's ``initialize`` and modes), else the engine's own word."""
    advertised = engine.advertised_capabilities()
    caps = advertised or engine.capabilities
    flags = [
        name for name in ("reports_usage", "plan_mode", "images", "resources", "load_session") if getattr(caps, name)
    ]
    source = f" (as {engine.agent_label()} advertised them)" if advertised is not None else ""
    report.section("engine").add("capabilities", f"{', '.join(flags) or 'none'}{source}")


def _probe(engine: Engine, report: DiagnosticReport) -> None:
    import trio

    async def probe() -> bool:
        with trio.move_on_after(DIAGNOSE_TIMEOUT_S):
            await engine.diagnose(report)
            return True
        return False

    try:
        finished = trio.run(probe)
    except Exception as exc:
        report.section("engine").add("probe", f"the engine's probe failed: {type(exc).__name__}: {exc}", "error")
        return
    if not finished:
        report.section("engine").add(
            "probe", f"the engine's probe did not finish within {DIAGNOSE_TIMEOUT_S:g}s", "error"
        )


def _session_rows(host: Host, engine: Engine | None, report: DiagnosticReport) -> None:
    sec = report.section("sessions")
    try:
        bindings = host.store.all()
    except Exception as exc:
        sec.add("store", f"unreadable: {type(exc).__name__}: {exc}", "error")
        return
    sec.add("store", str(host.store.path))
    sec.add("bound", f"{len(bindings)} session(s)")
    if engine is not None:
        names = host.session_names(engine)
        sec.add(f"on {engine.ENGINE_NAME}", ", ".join(names[-5:]) + (" ..." if len(names) > 5 else "") or "none")


def host_tool_rows(host: Host, engine: Engine, report: DiagnosticReport) -> None:
    """Whether host tools (a program's ``tools=``, plugins') can reach the
    agent: an error when installed plugins' tools cannot (every run would
    refuse to start), a warning when a program's would not."""
    from agy_host.runtime.tool_reach import tool_reach, tools_problem

    sec = report.section("host tools")
    names = [t.name for t in host.plugins.tools()]
    sec.add("registered", ", ".join(names) if names else "none by plugins")
    reach = tool_reach(host, engine)
    if reach.reaches:
        sec.add("reach the agent", reach.how)
        return
    problem = tools_problem(host, engine)
    sec.add("reach the agent", f"no: {reach.how}", "error" if problem else "warn")


def _warm_rows(host: Host, report: DiagnosticReport) -> None:
    """The keeper and its warm agents (asked, never started: doctor starts nothing)."""
    import trio

    from agy_host.keeper import wire
    from agy_host.keeper.client import request

    sec = report.section("warm agents")
    minutes = host.config.turn.keep_alive_minutes
    sec.add("keep alive", f"{minutes:g} min after a named session's turn" if minutes > 0 else "off (0)")
    try:
        reply = trio.run(request, host, wire.Status())
    except Exception as exc:
        sec.add("keeper", f"could not be asked: {type(exc).__name__}: {exc}", "warn")
        return
    if not isinstance(reply, wire.StatusReply):
        sec.add("keeper", "not running (nothing is warm)")
        return
    sec.add("keeper", f"pid {reply.keeper_pid}, build {reply.build}")
    for info in reply.sessions:
        sec.add(info.session, warm_line(info))


def warm_line(info: wire.WarmInfo) -> str:
    """One warm session: engine, agent, its process, what it does."""
    doing = "running a turn" if info.turn_running else f"idle {info.idle_s:.0f}s of {info.keep_alive_s:.0f}s"
    shared = f" (shared with {', '.join(info.shared_with)})" if info.shared_with else ""
    return f"{info.engine} ({info.agent}), agent pid {info.agent_pid or '-'}{shared}, {doing}"


def _last_run_rows(host: Host, report: DiagnosticReport) -> None:
    from agy_host.runtime.last_run import read_last_run

    sec = report.section("last run")
    last = read_last_run(host)
    if last is None:
        sec.add("driver", "no run recorded yet")
        return
    if isinstance(last, str):
        sec.add("driver", last, "warn")
        return
    sec.add("when", f"{last.written_at} (session {last.session}, exit {last.exit_code})")
    snapshot_rows(sec, last.snapshot)
    command_rows(sec, last.commands)


def command_rows(sec: DiagnosticSection, commands: Sequence[AgentCommand]) -> None:
    """The slash commands the agent advertised, one detail line each."""
    from agy_host.builtins.render_common import command_line

    if not commands:
        sec.add("agent commands", "none advertised")
        return
    names = ", ".join(f"/{c.name}" for c in commands[:8]) + (", ..." if len(commands) > 8 else "")
    sec.add("agent commands", f"{len(commands)}: {names}", detail=[command_line(c) for c in commands])


def snapshot_rows(sec: DiagnosticSection, snap: DriverSnapshot) -> None:
    """A driver snapshot as doctor rows (the last run's, or ``chat``'s live one)."""
    sec.add("driver", f"{snap.engine}: {snap.state}" + (f" pid={snap.pid}" if snap.pid else ""))
    sec.add("session id", snap.conversation_id or "(none)")
    if snap.stats:
        sec.add("stats", " ".join(f"{k}={v}" for k, v in snap.stats.items()))
    if snap.last_recycle_reason:
        sec.add("last recycle", snap.last_recycle_reason)
    for key, value in snap.extra.items():
        sec.add(str(key), value if isinstance(value, str) else _compact(value))
    entries = snap.lifecycle[-5:]
    if entries:
        sec.add("lifecycle", f"last {len(entries)}", detail=[entry.format() for entry in entries])


def rendering_rows(host: Host, report: DiagnosticReport) -> None:
    """Which renderer ``--format text`` picks here, and whether edits get diffs."""
    import importlib.util
    import sys

    from agy_host.engine.install_hint import install_hint

    sec = report.section("rendering")
    reasons = []
    if not sys.stdout.isatty():
        reasons.append("stdout is not a terminal")
    if host.env.get("NO_COLOR"):
        reasons.append("NO_COLOR is set")
    if host.env.get("TERM") == "dumb":
        reasons.append("TERM=dumb")
    if importlib.util.find_spec("rich") is None:
        sec.add("text format", "plain (rich is not installed)", "warn")
    else:
        sec.add("text format", f"plain ({', '.join(reasons)})" if reasons else "rich (colour terminal)")
    diff = [i.plugin_name for i in host.plugins.pm.hook.agy_host_render_diff.get_hookimpls()]
    sec.add(
        "diffs",
        f"rendered by {', '.join(diff)}" if diff else f"labels only (diffs: {install_hint('agy-host-diff-render')})",
    )


def _compact(value: object) -> str:
    import msgspec

    try:
        return msgspec.json.encode(value).decode()
    except TypeError:
        return str(value)


def _plugin_rows(host: Host, report: DiagnosticReport) -> None:
    sec = report.section("plugins")
    for info in host.plugins.info():
        if info.builtin:
            continue
        origin = f"{info.distribution} {info.version}".strip()
        sec.add(info.name, f"{origin or 'in-process'}; hooks: {', '.join(info.hooks) or 'none'}", "ok")
    for name in host.plugins.disabled:
        sec.add(name, "disabled by AGY_HOST_LOAD_PLUGINS / AGY_HOST_DISABLE_PLUGINS")
    for err in host.plugins.errors:
        sec.add(
            err.name,
            f"failed: {err.error}",
            "error",
            detail=[f"distribution: {err.distribution}"] if err.distribution else None,
        )
    if not sec.rows:
        sec.add("external", "none installed")


__all__ = [
    "DIAGNOSE_TIMEOUT_S",
    "build_report",
    "command_rows",
    "host_tool_rows",
    "register",
    "rendering_rows",
    "snapshot_rows",
]
