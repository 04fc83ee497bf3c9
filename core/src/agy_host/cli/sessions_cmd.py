"""``agy-host sessions list|show|rm|clear|prune``: host sessions and what they hold
(``agent-list`` and ``agent-rm``, the agent's own: :mod:`agy_host.cli.agent_sessions`).

A host session is a name (``--session NAME``, or one generated for a run
without it). It owns, per engine (and per agent profile on ACP), a binding
to an agent conversation in its file of the session store, and one
transcript of every turn it ran. ``list`` shows both by name (the named
sessions and the latest unnamed runs; ``--all`` every one); ``show`` prints
one session's bindings and turns; ``rm``, ``clear`` and ``prune``
(:mod:`agy_host.cli.sessions_prune`) delete bindings *and* transcripts, so a
removed session really starts from nothing (``rm`` refuses, exit 7, while a
turn runs on the session: that turn would write it back). ``forget`` (kept
for scripts) drops only the selected engine's binding. Finding, reading and
removing are :mod:`agy_host.runtime.sessions_view`'s, which the Python API's
``list_sessions``, ``get_session`` and ``delete_session`` share.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import msgspec
import typer

from agy_host.cli.common import FormatOption, check_format, fail, print_json
from agy_host.cli.exit_codes import ExitCode
from agy_host.runtime.sessions_view import (
    RECENT_UNNAMED,
    every_name,
    listing,
    lookup,
    remove,
    transcript_of,
    turn_running,
    where_to,
)
from agy_host.runtime.store import session_name

if TYPE_CHECKING:
    from agy_host.builtins.transcripts import TranscriptEntry
    from agy_host.cli.state import CliState
    from agy_host.contract.sessions import BoundConversation, SessionInfo
    from agy_host.engine.base import Engine
    from agy_host.runtime.host import Host

SESSIONS_HELP = """Host sessions: their agent conversations (per engine) and transcripts.

`run --session NAME` and `chat --session NAME` continue a session's agent
conversation on the selected engine; `--resume` fails (exit 4) unless it
exists. Switching engine keeps each engine's own conversation.

After a turn of `run --session NAME` the agent stays warm for
turn.keep_alive_minutes (5; `--keep-alive MINUTES`, 0 turns it off): the
next command on the session runs on it with no start-up. `status` shows the
warm agents, `cancel NAME` stops a running turn, `stop NAME|--all` ends them.

A run without --session is an unnamed session (a generated name): `list`
shows the latest few of those, `list --all` every one, and `prune` removes
the ones not used for a while.
"""

LIST_HELP = f"""List host sessions: engines, agent conversations, last use, cwd, turns.

Shows every named session and the {RECENT_UNNAMED} latest unnamed runs (a line on stderr
counts the others); --all shows every one. --cwd and --agent narrow the list.
"""


def resume_note(host: Host, engine: Engine, name: str) -> str | None:
    """Why ``--session NAME`` will start a *new* agent conversation on
    ``engine``, or ``None`` when it continues one (or the name is new).

    A session that exists on another engine, or only as a transcript, must
    never silently become a fresh conversation: the caller shows this note
    (``run`` can call it too). A new name costs one read of its store file
    and one ``stat`` of its transcript, whatever else is on disk."""
    bindings = host.store.bindings_of(name)
    if engine.store_key(name) in bindings:
        return None
    digest = "" if host.config.prompt.digest else " (turn the digest on to pass it the earlier turns)"
    if bindings:
        where = ", ".join(sorted({b.engine or session_name(k) for k, b in bindings.items()}))
        return (
            f"session {name!r} has no {engine.ENGINE_NAME} conversation yet (it has one on {where}); "
            f"starting a new {engine.ENGINE_NAME} conversation" + digest
        )
    info = lookup(host, name) if transcript_of(host, name) is not None else None
    if info is None:
        return None
    return f"session {name!r} has {info.turns} earlier turn(s) but no agent conversation; starting a new one" + digest


def _format_entry(entry: TranscriptEntry) -> list[str]:
    if entry.role == "user":
        return [f"[{entry.ts}] you ({entry.engine}):", *("  " + line for line in entry.text.rstrip("\n").split("\n"))]
    if entry.role == "tool":
        return [f"  host tool {entry.tool} {msgspec.json.encode(entry.args).decode()}"]
    head = f"[{entry.ts}] agent ({entry.engine}, {entry.stop_reason or '?'}):"
    body = [*("  " + line for line in entry.text.rstrip("\n").split("\n"))] if entry.text else []
    if entry.error:
        body.append(f"  error: {entry.error}")
    return [head, *body]


def _print_table(infos: list[SessionInfo]) -> None:
    rows = [("SESSION", "KEY", "CONVERSATION", "LAST USE", "TURNS", "CWD")]
    for info in infos:
        keys: dict[str, BoundConversation | None] = dict(info.bindings) or {"": None}
        for key, binding in keys.items():
            rows.append(
                (
                    info.name,
                    key or "-",
                    binding.conversation_id if binding else "-",
                    (binding.updated_at if binding else info.last_used) or "-",
                    str(info.turns),
                    (binding.cwd if binding else info.cwd) or "-",
                )
            )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        typer.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1])


def register(app: typer.Typer, state: CliState) -> None:
    from agy_host.cli.agent_sessions import register_agent_commands
    from agy_host.cli.sessions_prune import register_prune
    from agy_host.cli.warm_cmds import register_warm_commands

    sessions = typer.Typer(help=SESSIONS_HELP, no_args_is_help=True)
    app.add_typer(sessions, name="sessions")
    register_agent_commands(sessions, state)
    register_warm_commands(sessions, state)

    @sessions.command("list", help=LIST_HELP)
    def sessions_list(
        fmt: FormatOption = "text",
        everything: Annotated[bool, typer.Option("--all", "-a", help="Every session, every unnamed run too.")] = False,
        cwd: Annotated[
            str | None, typer.Option("--cwd", help="Only sessions run in DIR or below it.", metavar="DIR")
        ] = None,
        agent: Annotated[
            str | None,
            typer.Option("--agent", help="Only sessions whose agent or engine contains CMD.", metavar="CMD"),
        ] = None,
    ) -> None:
        check_format(fmt)
        host = state.host()
        shown = listing(host, everything=everything, cwd=where_to(cwd), agent=agent)
        if fmt == "json":
            bindings = {k: b for info in shown.sessions for k, b in info.bindings.items()}
            doc = {"version": 1, "path": str(host.store.path), "bindings": bindings, "sessions": shown.sessions}
            print_json({**doc, "hidden": shown.hidden})
            return
        if not shown.sessions:
            narrowed = cwd is not None or agent is not None
            typer.echo("no sessions match" if narrowed else f"no sessions yet ({host.store.path})")
        else:
            _print_table(shown.sessions)
        if shown.hidden:
            typer.echo(
                f"({shown.hidden} older unnamed run(s) not shown: `sessions list --all` lists them, "
                "`sessions prune` removes them)",
                err=True,
            )

    @sessions.command("show", help="Show one session: its bindings and transcript (exit 4 if unknown).")
    def sessions_show(
        name: Annotated[str, typer.Argument(help="Host session name.", metavar="NAME")],
        fmt: FormatOption = "text",
        last: Annotated[
            int, typer.Option("--last", "-n", help="Show only the last N turns (0: all).", min=0, metavar="N")
        ] = 0,
    ) -> None:
        from agy_host.builtins.transcripts import read_transcript

        check_format(fmt)
        host = state.host()
        info = lookup(host, name)
        if info is None:
            fail(f"no such session {name!r}", ExitCode.NO_SUCH_SESSION)
        entries = read_transcript(name, host.env, warn=host.warn)
        if last:
            ends = [i for i, e in enumerate(entries) if e.role == "assistant"]
            if len(ends) > last:
                entries = entries[ends[-last - 1] + 1 :]
        if fmt == "json":
            print_json({"version": 1, "session": info, "transcript": entries})
            return
        typer.echo(f"session {name}: {info.turns} turn(s), last used {info.last_used or '-'}, cwd {info.cwd or '-'}")
        for key, b in info.bindings.items():
            agent = f" [{b.agent}]" if b.agent and b.agent != b.engine else ""
            typer.echo(f"  {key}: {b.engine}{agent} conversation {b.conversation_id} ({b.updated_at})")
        if not info.bindings:
            typer.echo("  no agent conversation bound")
        for entry in entries:
            for line in _format_entry(entry):
                typer.echo(line)

    @sessions.command(
        "rm", help="Remove a session: its bindings and transcript (exit 4 if unknown, 7 while a turn runs on it)."
    )
    def sessions_rm(
        names: Annotated[list[str], typer.Argument(help="Host session name(s).", metavar="NAME...")],
        engine_name: Annotated[
            str | None,
            typer.Option(
                "--engine", "-e", help="Only drop this engine's binding(s); keep the transcript.", metavar="NAME"
            ),
        ] = None,
    ) -> None:
        host = state.host()
        known = {n: info for n in names if (info := lookup(host, n)) is not None}
        missing = [n for n in names if n not in known]
        if missing:
            fail(f"no such session: {', '.join(missing)}", ExitCode.NO_SUCH_SESSION)
        chosen: dict[str, list[str] | None] = {}
        for name in names:  # every name checked before anything is removed
            keys = [k for k, b in known[name].bindings.items() if engine_name is None or b.engine == engine_name]
            if engine_name is not None and not keys:
                fail(f"session {name!r} has no binding on engine {engine_name!r}", ExitCode.NO_SUCH_SESSION)
            holder = turn_running(host, known[name])
            if holder is not None:
                fail(f"session {name!r} is running a turn ({holder}); remove it once that ends", ExitCode.SESSION_BUSY)
            chosen[name] = keys if engine_name is not None else None
        for name, only in chosen.items():
            count, dropped = remove(host, name, keys=only)
            what = f"{count} binding(s)" + (" and its transcript" if dropped else "")
            typer.echo(f"removed {name}: {what}")

    @sessions.command("clear", help="Remove every session, binding and transcript.")
    def sessions_clear(
        yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    ) -> None:
        host = state.host()
        known = sorted(every_name(host))
        if not known:
            typer.echo("no sessions to remove")
            return
        if not yes:
            if not sys.stdin.isatty():
                fail("sessions clear removes every session; pass --yes to confirm", ExitCode.USAGE)
            if not typer.confirm(f"remove {len(known)} session(s) and their transcripts?"):
                raise typer.Exit(ExitCode.ERROR)
        for name in known:
            remove(host, name)
        typer.echo(f"removed {len(known)} session(s)")

    @sessions.command("forget", help="Forget a session's binding on the selected engine (exit 4 if unknown).")
    def sessions_forget(
        name: Annotated[str, typer.Argument(help="Host session name.", metavar="NAME")],
        engine_name: Annotated[
            str | None, typer.Option("--engine", "-e", help="Engine whose binding to drop.", metavar="NAME")
        ] = None,
    ) -> None:
        from agy_host.cli.info_cmds import engine_or_fail

        host = state.host(engine=engine_name)
        engine_obj = engine_or_fail(host)
        key = engine_obj.store_key(name)
        if not host.store.delete(key):
            fail(f"no such session {name!r} on engine {engine_obj.ENGINE_NAME!r}", ExitCode.NO_SUCH_SESSION)
        typer.echo(f"forgot {name} ({key})")

    register_prune(sessions, state)


__all__ = ["LIST_HELP", "SESSIONS_HELP", "register", "resume_note"]
