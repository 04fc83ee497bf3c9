"""``agy-host sessions status|cancel|stop``: warm agents, seen and steered
from any terminal (the keeper's side: :mod:`agy_host.keeper.server`).

``status`` lists the warm sessions (or says none is warm), ``cancel NAME``
aborts the running turn of a session (its command ends as on Ctrl-C, exit
130), ``stop NAME`` / ``stop --all`` ends warm agents gracefully. None of
them starts a keeper: with none running there is nothing warm.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agy_host.cli.common import FormatOption, check_format, fail, print_json
from agy_host.cli.exit_codes import ExitCode

if TYPE_CHECKING:
    from agy_host.cli.state import CliState
    from agy_host.keeper import wire


def _ask(state: CliState, frame: wire.Status | wire.Stop | wire.Cancel) -> wire.ToClient | None:
    import trio

    from agy_host.keeper.client import request

    return trio.run(request, state.host(), frame)


def register_warm_commands(sessions: typer.Typer, state: CliState) -> None:
    @sessions.command("status", help="Warm agents: pid, engine, agent, idle time, running turn, who is attached.")
    def sessions_status(
        name: Annotated[str | None, typer.Argument(help="Only this session.", metavar="NAME")] = None,
        fmt: FormatOption = "text",
    ) -> None:
        from agy_host.keeper import wire

        check_format(fmt)
        reply = _ask(state, wire.Status(session=name))
        found = reply.sessions if isinstance(reply, wire.StatusReply) else []
        if fmt == "json":
            keeper = {"pid": reply.keeper_pid, "build": reply.build} if isinstance(reply, wire.StatusReply) else None
            print_json({"keeper": keeper, "sessions": found})
            return
        if not found:
            which = f" for session {name!r}" if name else ""
            typer.echo(f"no warm agent{which}" + (" (no keeper running)" if reply is None else ""))
            return
        assert isinstance(reply, wire.StatusReply)
        typer.echo(f"keeper pid {reply.keeper_pid} (build {reply.build})")
        for info in found:
            state_word = (
                "running a turn" if info.turn_running else f"idle {info.idle_s:.0f}s of {info.keep_alive_s:.0f}s"
            )
            typer.echo(
                f"  {info.session}: {'warm' if info.warm else 'not started'}, {info.engine} ({info.agent}), "
                f"agent pid {info.agent_pid or '-'}, {state_word}, {info.turns} turn(s)"
                + (f", attached: {info.attached}" if info.attached else "")
                + (f", its agent shared with {', '.join(info.shared_with)}" if info.shared_with else "")
            )

    @sessions.command(
        "cancel",
        help="Cancel the running turn of a warm session (its command exits 130). An idle warm session has "
        "nothing to cancel (exit 0); a session that is not warm exits 4.",
    )
    def sessions_cancel(name: Annotated[str, typer.Argument(help="Host session name.", metavar="NAME")]) -> None:
        from agy_host.keeper import wire

        reply = _ask(state, wire.Cancel(session=name))
        if isinstance(reply, wire.Done):
            typer.echo(reply.message)  # cancelled, or an idle warm session: nothing to cancel (exit 0)
            return
        reason = reply.reason if isinstance(reply, wire.Refused) else f"no warm session {name!r} (no keeper running)"
        fail(reason, ExitCode.NO_SUCH_SESSION)

    @sessions.command("stop", help="End warm agents gracefully: one session, or --all.")
    def sessions_stop(
        name: Annotated[str | None, typer.Argument(help="Host session name.", metavar="NAME")] = None,
        every: Annotated[bool, typer.Option("--all", help="Every warm agent.")] = False,
    ) -> None:
        from agy_host.keeper import wire

        if (name is None) == (not every):
            fail("give a session NAME or --all", ExitCode.USAGE)
        reply = _ask(state, wire.Stop(session=None if every else name))
        if not isinstance(reply, wire.Done):
            typer.echo("no warm agent (no keeper running)")
            return
        typer.echo(reply.message)


__all__ = ["register_warm_commands"]
