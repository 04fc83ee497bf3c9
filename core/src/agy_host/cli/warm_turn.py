"""A command's turns on a warm agent (docs/sessions.md), the same for
``run``, ``ask`` and ``chat``.

:func:`keep_alive_s` says whether (and how long) a command keeps its
session's agent warm: ``--keep-alive``, else the config's for a named
session, nothing for an unnamed one, and never for an engine registered in
this process only (a keeper could not load it).

:class:`WarmRuntime` stands where the command's
:class:`~agy_host.runtime.session.SessionRuntime` stands: ``turn()`` with
the same arguments, ``interrupt()`` for the command's signals, ``engine``
and ``agent_commands`` for the chat. Each turn goes to the keeper
(:class:`~agy_host.keeper.client.RemoteRuntime`) with this command's host
(its environment, engine, agent and overrides), so a per-turn setting
(``/model``, ``/effort``, ``/mode``) reaches the live agent the way it
reaches a local one, and a different host starts cold. What needs the
agent in this process (its driver's snapshot) is not there: ``snapshot()``
is ``None`` and :meth:`WarmRuntime.status` asks the keeper instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from agy_host.contract.events import CommandsUpdated
from agy_host.keeper.keep_alive import keep_alive_s as keep_alive_rule

if TYPE_CHECKING:
    import signal

    from agy_host.cli.turn_options import TurnOptions
    from agy_host.contract.events import AgentCommand, HostEvent
    from agy_host.contract.prompt import PromptBlock
    from agy_host.contract.rendering import DiffSource
    from agy_host.engine.base import Engine
    from agy_host.engine.driver import DriverSnapshot
    from agy_host.keeper import wire
    from agy_host.runtime.host import Host
    from agy_host.runtime.session import TurnSettings
    from agy_host.runtime.signals import CommandSignals, Interruptible
    from agy_host.runtime.turn_layer import TurnResult


class WarmOptions(Protocol):
    """What :func:`keep_alive_s` and :class:`WarmRuntime` read of a command's
    options (:class:`~agy_host.cli.turn_options.TurnOptions`)."""

    generated_session: bool
    keep_alive_min: float | None
    no_wait: bool
    system_prompt: str | None
    digest: bool | None
    trace: str | None


def keep_alive_s(host: Host, opts: WarmOptions) -> float:
    """How long the session's agent stays warm after this command (seconds);
    0: the turn runs cold, in this process."""
    if host.engine_choice().name in host.plugins.engines():
        return 0.0  # an engine registered in this process only: a keeper could not load it
    return keep_alive_rule(opts.keep_alive_min, host.config.turn.keep_alive_minutes, named=not opts.generated_session)


def unavailable(exc: BaseException) -> str:
    """The warning when no keeper can be reached or started."""
    return f"warm agents are not available ({exc}); this turn runs without one"


def failure(exc: BaseException) -> tuple[str, int | None]:
    """A keeper's refusal or end, for the user: the message and the exit code
    (``None``: the command's usual code for an error)."""
    from agy_host.keeper.attached import lost
    from agy_host.keeper.client import KeeperRefused

    if isinstance(exc, KeeperRefused):
        return str(exc), exc.code
    return lost(exc), None


class Attached:
    """The runtime a command's signals reach (:class:`CommandSignals`' callable):
    the warm one, or the command's own when it runs cold."""

    def __init__(self) -> None:
        self.runtime: Interruptible | None = None

    def __call__(self) -> Interruptible | None:
        return self.runtime


async def one_turn(
    host: Host,
    opts: TurnOptions,
    blocks: Sequence[PromptBlock],
    *,
    attached: Attached,
    signals: CommandSignals,
    sink: Callable[[HostEvent], None] | None = None,
    diffs: DiffSource | None = None,
    keep_answer: bool = True,
) -> tuple[TurnResult | None, str, int | None]:
    """A one-turn command's turn (``run``, ``ask``) on its ``--session``: on
    the session's warm agent when the command keeps one (no keeper to be
    had: a warning, and it runs cold), else on a runtime of its own, closed
    after it. The result (``None``: interrupted), the keeper's error and its
    exit code. ``keep_answer=False``: the command does not read
    ``result.response`` (``run``), so a long answer is not kept in memory."""
    from agy_host.keeper.client import KeeperGone, KeeperRefused, KeeperUnavailable
    from agy_host.runtime.session import SessionRuntime, say_stderr

    session, cwd, settings = opts.session, opts.cwd, opts.settings()
    keep = keep_alive_s(host, opts)
    if keep > 0:
        warm = attached.runtime = WarmRuntime(host, opts, sink=sink, say=say_stderr, keep_alive_s=keep, diffs=diffs)
        try:
            return await warm.turn(session, blocks, cwd=cwd, settings=settings), "", None
        except KeeperUnavailable as exc:
            host.warn(unavailable(exc))
            attached.runtime = None
        except (KeeperRefused, KeeperGone) as exc:
            return (None, *failure(exc))
        finally:
            signals.leaving = attached.runtime is not None
    if not opts.generated_session:
        from agy_host.keeper.client import end_warm

        await end_warm(host, session)  # --keep-alive 0: the session's warm agent, if any, ends first
    async with SessionRuntime.open(
        host, cwd=cwd, sink=sink, diffs=diffs, exit_on_third_interrupt=True, keep_answer=keep_answer
    ) as local:
        attached.runtime = local
        result: TurnResult | None = None
        try:
            result = await local.turn(session, blocks, cwd=cwd, settings=settings)
        finally:
            signals.leaving = True
            local.write_last_run(session, result)
        return result, "", None


class WarmRuntime:
    """One command's turns through the keeper (see the module docstring)."""

    def __init__(
        self,
        host: Host,
        opts: WarmOptions,
        *,
        sink: Callable[[HostEvent], None] | None,
        say: Callable[[str], None],
        keep_alive_s: float,
        diffs: DiffSource | None = None,
    ) -> None:
        from agy_host.keeper.client import RemoteRuntime
        from agy_host.keeper.rebuild import AnswerRebuilder

        self.host = host
        self.engine: Engine = host.load_engine()
        self.opts = opts
        self.keep_alive_s = keep_alive_s
        self.diffs = diffs
        self._sink = sink
        # turn_end's answer comes once, as the text events (keeper/rebuild.py)
        self.remote = RemoteRuntime(host, sink=AnswerRebuilder(self._event), say=say, diffs=diffs)
        #: The slash commands the agent advertised during this command.
        self.agent_commands: list[AgentCommand] = []
        self.result: TurnResult | None = None
        self._started = False

    def _event(self, event: HostEvent) -> None:
        if isinstance(event, CommandsUpdated):
            self.agent_commands = list(event.commands)
        if self._sink is not None:
            self._sink(event)

    @property
    def running(self) -> bool:
        return self.remote.running

    def interrupt(self, sig: signal.Signals | None = None) -> bool:
        """As :meth:`SessionRuntime.interrupt`: abort, stop waiting, leave."""
        return self.remote.interrupt(sig)

    async def start(self) -> None:
        """Make sure a keeper listens (one is started when none does), once;
        raises :class:`~agy_host.keeper.client.KeeperUnavailable` when none can be."""
        from agy_host.keeper.client import connect

        if not self._started:
            frames = await connect(self.host, command="probe")
            await frames.aclose()
            self._started = True

    async def turn(
        self,
        session: str,
        blocks: Sequence[PromptBlock],
        *,
        cwd: str,
        settings: TurnSettings | None = None,
    ) -> TurnResult | None:
        """The turn on the session's warm agent; ``None`` when the keeper
        stopped waiting for it (the second Ctrl-C). Raises the keeper's
        ``KeeperUnavailable``, ``KeeperRefused`` and ``KeeperGone``."""
        from agy_host.keeper.client import run_request
        from agy_host.runtime.session import TurnSettings

        opts = self.opts
        request = run_request(
            self.host,
            session,
            list(blocks),
            cwd=cwd,
            settings=settings or TurnSettings(),
            keep_alive_s=self.keep_alive_s,
            no_wait=opts.no_wait,
            system_prompt=opts.system_prompt,
            digest=opts.digest,
            draws_diffs=self.diffs is not None and self.diffs.wanted,
            trace=opts.trace,
            rebuild_answer=True,
        )
        self.result = await self.remote.turn(session, request)
        return self.result

    async def switch(self, host: Host) -> None:
        """Continue on ``host``'s engine: its agent starts warm with the next
        turn (the keeper ends this session's other agent then)."""
        if keep_alive_s(host, self.opts) <= 0:
            raise RuntimeError(
                f"engine {host.engine_choice().name!r} is registered in this process only and cannot run warm"
            )
        self.engine = host.load_engine()
        self.host = self.remote.host = host
        self.agent_commands = []

    def snapshot(self) -> DriverSnapshot | None:
        """The agent runs in the keeper: no driver here (see :meth:`status`)."""
        return None

    def write_last_run(self, session: str, result: TurnResult | None) -> None:
        """The keeper writes doctor's last run, next to the agent."""

    async def status(self, session: str) -> wire.StatusReply | None:
        """The keeper's account of ``session``'s warm agent; ``None`` with no keeper."""
        from agy_host.keeper import wire
        from agy_host.keeper.client import request

        reply = await request(self.host, wire.Status(session=session))
        return reply if isinstance(reply, wire.StatusReply) else None


__all__ = ["Attached", "WarmOptions", "WarmRuntime", "failure", "keep_alive_s", "one_turn", "unavailable"]
