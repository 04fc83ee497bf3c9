"""The plugin's hooks (entry point ``usage_ledger`` in the ``agy_host`` group).

This module is imported on every ``agy-host`` start, ``--help`` included, so
it imports only what the hooks need to be *defined*; typer, trio, the event
types and the ledger (both msgspec) are imported inside the functions that
use them.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from agy_host import hookimpl

if TYPE_CHECKING:
    from collections.abc import Callable

    import typer

    from agy_host.contract.diagnostics import DiagnosticReport
    from agy_host.contract.events import HostEvent, TurnEnded, TurnStarted, UsageCounts
    from agy_host.contract.tools import HostTool, ToolResult


# ---------------------------------------------------------------------------
# agy_host_render_event: observe each turn, write it when it ends
# ---------------------------------------------------------------------------


class _Turn:
    __slots__ = ("agent", "cards", "engine", "host_tools", "model", "session", "usage")

    def __init__(self, started: TurnStarted | None) -> None:
        self.session = started.session if started else ""
        self.engine = started.engine if started else ""
        self.agent = started.agent if started else ""
        self.model = started.model if started else ""
        self.cards: set[str] = set()
        self.host_tools = 0
        self.usage: UsageCounts | None = None


class LedgerObserver:
    """Follows one turn at a time, as a host runs them: events between a
    ``TurnStarted`` and its ``TurnEnded`` belong to that turn."""

    def __init__(self, path: Callable[[], os.PathLike[str] | str] | None = None) -> None:
        self._path = path
        self._turn: _Turn | None = None

    def path(self) -> str:
        from agy_host_usage_ledger import ledger

        return os.fspath(self._path()) if self._path is not None else str(ledger.ledger_path())

    def event(self, event: HostEvent) -> None:
        from agy_host.contract import events as ev
        from agy_host_usage_ledger import ledger

        match event:
            case ev.TurnStarted():
                self._turn = _Turn(event)
            case ev.ToolCard(call_id=call_id):
                if self._turn is not None:
                    self._turn.cards.add(call_id)
            case ev.UsageReport():
                if self._turn is not None:
                    self._turn.usage = ledger.merge_usage(self._turn.usage, event.turn)
            case ev.ToolUseRequested():
                if self._turn is not None:
                    self._turn.host_tools += 1
            case ev.TurnEnded():
                turn, self._turn = self._turn or _Turn(None), None
                self.write(turn, event)
            case _:
                pass  # new event types may appear: ignore what we do not know

    def write(self, turn: _Turn, ended: TurnEnded) -> None:
        from pathlib import Path

        from agy_host_usage_ledger import ledger

        entry = ledger.LedgerEntry(
            ts=ledger.utc_now(),
            session=turn.session,
            engine=turn.engine,
            agent=turn.agent,
            model=turn.model,
            conversation_id=ended.conversation_id,
            stop_reason=ended.stop_reason,
            agent_stop_reason=ended.agent_stop_reason,
            error_kind=ended.error_kind,
            duration_s=round(ended.duration_s, 3),
            tool_calls=len(turn.cards),
            host_tool_calls=turn.host_tools,
            usage=ledger.merge_usage(turn.usage, ended.usage),
        )
        # An OSError (disk full, read-only state dir) propagates: agy-host
        # reports the plugin's failure once and the turn goes on.
        ledger.append(entry, Path(self.path()))


OBSERVER = LedgerObserver()

#: The ledger counts usage, never reads ``TurnEnded.response``: agy-host may
#: leave a long answer out of memory while this plugin is registered
#: (``agy_host.contract.answer``).
AGY_HOST_RESPONSE_OPTIONAL = True


@hookimpl
def agy_host_render_event(event: HostEvent) -> None:
    OBSERVER.event(event)


# ---------------------------------------------------------------------------
# agy_host_register_commands: `agy-host ledger show` and `agy-host ledger path`
# ---------------------------------------------------------------------------

LEDGER_HELP = """The usage ledger: one line per finished turn (usage, duration, stop reason).

Written by the agy-host-usage-ledger plugin to
$XDG_STATE_HOME/agy-host/usage-ledger.jsonl (AGY_HOST_USAGE_LEDGER names
another file).
"""


@hookimpl
def agy_host_register_commands(app: typer.Typer) -> None:
    import typer

    sub = typer.Typer(name="ledger", help=LEDGER_HELP, no_args_is_help=True, add_completion=False)

    @sub.command("show")
    def show(
        session: str | None = typer.Option(None, "--session", "-s", metavar="NAME", help="Only this host session."),
        last: int | None = typer.Option(None, "--last", "-n", min=1, metavar="N", help="Only the last N turns."),
        fmt: str = typer.Option("text", "--format", "-f", metavar="text|json", help="Output format."),
    ) -> None:
        """Show the recorded turns and their totals (unreadable lines are skipped and counted)."""
        import sys

        import msgspec

        from agy_host_usage_ledger import ledger

        if fmt not in ("text", "json"):
            typer.echo(f"agy-host: error: unknown --format {fmt!r}; choose one of: text, json", err=True)
            raise typer.Exit(2)
        found = ledger.read(ledger.ledger_path())
        entries = ledger.select(found.entries, session=session, last=last)
        if fmt == "json":
            doc = {
                "version": 1,
                "path": found.path,
                "entries": entries,
                "totals": ledger.summarize(entries),
                "skipped": found.skipped,
            }
            sys.stdout.write(msgspec.json.format(msgspec.json.encode(doc), indent=2).decode() + "\n")
        elif not entries:
            typer.echo(f"no turns recorded{f' for session {session!r}' if session else ''} ({found.path})")
        else:
            typer.echo(ledger.format_table(entries))
        for why in found.skipped:
            typer.echo(f"agy-host: warning: {found.path}: skipped an unreadable {why}", err=True)

    @sub.command("path")
    def path() -> None:
        """Print the ledger file's path."""
        from agy_host_usage_ledger import ledger

        typer.echo(str(ledger.ledger_path()))

    app.add_typer(sub, name="ledger")


# ---------------------------------------------------------------------------
# agy_host_diagnostics: a doctor section
# ---------------------------------------------------------------------------


@hookimpl
def agy_host_diagnostics(report: DiagnosticReport) -> None:
    from agy_host_usage_ledger import ledger

    sec = report.section("usage ledger")
    path = ledger.ledger_path()
    sec.add("file", str(path))
    found = ledger.read(path)
    if found.entries:
        last = found.entries[-1]
        sec.add("turns", len(found.entries), "ok")
        sec.add("last turn", f"{last.ts} {last.session or '?'} ({last.stop_reason})")
    else:
        sec.add("turns", "none recorded yet")
    if found.skipped:
        sec.add("unreadable lines", len(found.skipped), "warn", found.skipped[:3])
    existing = next((p for p in (path.parent, *path.parents) if p.exists()), None)
    if existing is not None and not os.access(existing, os.W_OK):
        sec.add("writable", f"no: {existing} is not writable; turns are not recorded", "error")


# ---------------------------------------------------------------------------
# agy_host_register_tools: the `usage_summary` host tool
# ---------------------------------------------------------------------------

USAGE_SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "session": {"type": "string", "description": "Only turns of this agy-host session."},
        "last": {"type": "integer", "minimum": 1, "description": "Only the last N turns."},
    },
    "additionalProperties": False,
}


async def usage_summary(args: dict[str, Any]) -> ToolResult:
    """The totals of the ledger (optionally one session's, or the last N turns)."""
    import trio

    from agy_host.contract.tools import ToolResult
    from agy_host_usage_ledger import ledger

    session = args.get("session")
    last = args.get("last")
    if session is not None and not isinstance(session, str):
        return ToolResult(text="`session` must be a string", is_error=True)
    if last is not None and (not isinstance(last, int) or isinstance(last, bool) or last < 1):
        return ToolResult(text="`last` must be a positive integer", is_error=True)
    found = await trio.to_thread.run_sync(ledger.read, ledger.ledger_path())
    entries = ledger.select(found.entries, session=session, last=last)
    scope = f"session {session!r}" if session else "all sessions"
    if last:
        scope += f", last {last} turns"
    return ToolResult(text=f"agy-host usage ({scope}): {ledger.summary_line(ledger.summarize(entries))}")


@hookimpl
def agy_host_register_tools(register: Callable[[HostTool], None]) -> None:
    from agy_host.contract.tools import HostTool

    register(
        HostTool(
            name="usage_summary",
            description="Token usage, durations and stop reasons of this machine's agy-host turns (from the "
            "usage ledger): totals over all sessions, one session, or the last N turns.",
            input_schema=USAGE_SUMMARY_SCHEMA,
            call=usage_summary,
        )
    )


__all__ = [
    "AGY_HOST_RESPONSE_OPTIONAL",
    "OBSERVER",
    "USAGE_SUMMARY_SCHEMA",
    "LedgerObserver",
    "agy_host_diagnostics",
    "agy_host_register_commands",
    "agy_host_register_tools",
    "agy_host_render_event",
    "usage_summary",
]
