"""``agy-host sessions agent-list|agent-rm``: the agent's own sessions.

Host sessions (``sessions list``) are agy-host's names bound to agent
conversations. An agent may keep more than those: every conversation it ever
had, from any client. An ACP agent that offers ``session/list`` and
``session/delete`` (``sessionCapabilities``) lets agy-host show them, marked
with the host session bound to each, and delete them; an engine or agent
that cannot is told plainly (exit 1), never an empty list.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from agy_host.cli.common import FormatOption, check_format, fail, print_json
from agy_host.cli.turn_options import Agent, Engine

if TYPE_CHECKING:
    from agy_host.cli.state import CliState
    from agy_host.engine.base import AgentSession
    from agy_host.engine.base import Engine as EngineT
    from agy_host.runtime.host import Host

T = TypeVar("T")

#: How long asking the agent may take (it is started for the question).
AGENT_TIMEOUT_S = 60.0


def register_agent_commands(sessions: typer.Typer, state: CliState) -> None:
    @sessions.command(
        "agent-list",
        help="List the agent's own sessions (ACP session/list), with the host session bound to each.",
    )
    def agent_list(
        engine: Engine = None,
        agent: Agent = None,
        cwd: Annotated[
            Path | None, typer.Option("--cwd", help="Only sessions of this directory (default: all).", metavar="DIR")
        ] = None,
        fmt: FormatOption = "text",
    ) -> None:
        check_format(fmt)
        host = state.host(engine=engine, agent=agent)
        where = str(cwd.resolve()) if cwd is not None else None
        found = _ask(host, lambda e: e.list_agent_sessions(where))
        bound = {b.conversation_id: key.partition("@")[0] for key, b in host.store.all().items()}
        if fmt == "json":
            print_json({"version": 1, "sessions": [{**_plain(x), "host_session": bound.get(x.id)} for x in found]})
            return
        if not found:
            typer.echo("the agent lists no sessions" + (f" for {where}" if where else ""))
            return
        rows = [("ID", "HOST SESSION", "UPDATED", "TITLE", "CWD")]
        rows += [(x.id, bound.get(x.id) or "-", x.updated_at or "-", x.title or "-", x.cwd or "-") for x in found]
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
        for row in rows:
            typer.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1])

    @sessions.command("agent-rm", help="Delete one of the agent's own sessions (ACP session/delete).")
    def agent_rm(
        session_id: Annotated[str, typer.Argument(help="The agent's session id (see agent-list).", metavar="ID")],
        engine: Engine = None,
        agent: Agent = None,
    ) -> None:
        host = state.host(engine=engine, agent=agent)
        _ask(host, lambda e: e.delete_agent_session(session_id))
        bound = [key for key, b in host.store.all().items() if b.conversation_id == session_id]
        for key in bound:
            host.store.delete(key)  # a binding to a deleted conversation would fail its next resume
        typer.echo(f"deleted {session_id}" + (f" (and its binding {', '.join(bound)})" if bound else ""))


def _plain(session: AgentSession) -> dict[str, str]:
    import msgspec

    return dict(msgspec.to_builtins(session))


def _ask(host: Host, call: Callable[[EngineT], Awaitable[T]]) -> T:
    """Run ``call(engine)`` on the selected engine, bounded; an engine that cannot is exit 1."""
    import trio

    from agy_host.cli.info_cmds import engine_or_fail
    from agy_host.engine.base import EngineError

    engine = engine_or_fail(host)

    async def run() -> T:
        with trio.fail_after(AGENT_TIMEOUT_S):
            return await call(engine)

    try:
        return trio.run(run)
    except EngineError as exc:
        fail(str(exc))
    except trio.TooSlowError:
        fail(f"the agent did not answer within {AGENT_TIMEOUT_S:g}s")
    except Exception as exc:
        fail(f"asking the agent failed: {type(exc).__name__}: {exc}")


__all__ = ["register_agent_commands"]
