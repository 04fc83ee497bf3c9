"""The command's side of a warm session: find (or start) the keeper, run a
turn through it, and answer what only this command can answer.

:class:`RemoteRuntime` stands where a
:class:`~agy_host.runtime.session.SessionRuntime` stands in a cold command:
``turn()`` runs one turn and returns its result, and Ctrl-C (SIGTERM,
SIGHUP) reaches it through :meth:`RemoteRuntime.interrupt` exactly as it
reaches a local runtime (abort, then stop waiting, then leave). Meanwhile the
keeper's events go to this command's renderer, and its permission requests
and questions to this command's broker: the policy, the ``--answers`` rules,
the terminal and the program's callbacks of the command that runs the turn.
A program's own tools (``tools=`` of the Python API) run here too: the keeper
knows only their specs and asks for each call (``call_tool``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from agy_host.keeper import attached, place, wire
from agy_host.service.unattended import chosen_policy

if TYPE_CHECKING:
    from agy_host.contract.events import HostEvent
    from agy_host.contract.rendering import DiffSource
    from agy_host.contract.tools import HostTool, ToolResult
    from agy_host.runtime.host import Host
    from agy_host.runtime.session import TurnSettings
    from agy_host.runtime.turn_layer import TurnResult

#: How long a command waits for a keeper it started to listen.
START_TIMEOUT_S = 10.0


class KeeperUnavailable(Exception):
    """No keeper could be reached or started (the command runs cold)."""


class KeeperRefused(Exception):
    """The keeper would not serve the request; ``code`` is the exit code."""

    def __init__(self, reason: str, code: int) -> None:
        super().__init__(reason)
        self.code = code


class KeeperGone(Exception):
    """The keeper ended while this command's turn ran."""


def _where(env: dict[str, str] | os._Environ[str], state_dir: Path, *, create: bool = True) -> tuple[Path, str]:
    try:
        directory = place.runtime_dir(env, state_dir, create=create)
    except (place.PlaceError, OSError) as exc:
        raise KeeperUnavailable(str(exc)) from exc
    return directory, place.build_stamp()


def _spawn(directory: Path, build: str, state_dir: Path) -> None:
    """Start a keeper, detached: its own session, no terminal, output to the log."""
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    log = open(place.log_path(state_dir), "ab")  # noqa: SIM115 - handed to the child
    try:
        subprocess.Popen(
            [sys.executable, "-m", "agy_host.keeper", "--dir", str(directory), "--build", build],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            cwd="/",
        )
    except OSError as exc:
        raise KeeperUnavailable(f"could not start the keeper: {exc}") from exc
    finally:
        log.close()


async def connect(host: Host, *, start: bool = True, command: str = "") -> wire.FrameStream:
    """A greeted connection to this build's keeper; one is started when
    none listens (unless ``start`` is false: then :class:`KeeperUnavailable`)."""
    directory, build = _where(dict(host.env), host.state_dir, create=start)
    path = place.socket_path(directory, build)
    try:
        stream = await trio.open_unix_socket(str(path))
    except OSError:
        if not start:
            raise KeeperUnavailable("no keeper is running") from None
        _spawn(directory, build, host.state_dir)
        stream = await _wait_for(path)
    frames = wire.FrameStream(stream)
    await frames.send(wire.Hello(wire=wire.WIRE_VERSION, build=build, pid=os.getpid(), command=command))
    raw = await frames.receive_raw()
    answer = wire.decode_for_client(raw) if raw is not None else None
    if isinstance(answer, wire.Refused):
        await frames.aclose()
        raise KeeperUnavailable(answer.reason)
    if not isinstance(answer, wire.Welcome):
        await frames.aclose()
        raise KeeperUnavailable("the keeper did not greet back")
    return frames


async def _wait_for(path: Path) -> trio.SocketStream:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            return await trio.open_unix_socket(str(path))
        except OSError as exc:
            if time.monotonic() >= deadline:
                raise KeeperUnavailable(
                    f"the keeper did not start listening within {START_TIMEOUT_S:g}s: {exc}"
                ) from exc
            await trio.sleep(0.02)


async def request(host: Host, frame: wire.Status | wire.Stop | wire.Cancel) -> wire.ToClient | None:
    """One control request to a running keeper; ``None`` when none runs."""
    try:
        frames = await connect(host, start=False, command="sessions")
    except KeeperUnavailable:
        return None
    try:
        await frames.send(frame)
        raw = await frames.receive_raw()
        return wire.decode_for_client(raw) if raw is not None else None
    finally:
        await frames.aclose()


async def end_warm(host: Host, session: str) -> None:
    """Before a turn runs cold on a named session: end the session's warm
    agent, if a keeper holds one, so two agents never hold one conversation
    (the warm one would not have this turn's exchange). Starts nothing; a
    keeper that cannot be asked is no reason to stop the command."""
    try:
        await request(host, wire.Stop(session=session, only_idle=True))
    except (wire.FrameError, OSError, trio.BrokenResourceError):
        pass


class RemoteRuntime:
    """One command's turns on a warm session (see the module docstring)."""

    def __init__(
        self,
        host: Host,
        *,
        sink: Callable[[HostEvent], None] | None,
        say: Callable[[str], None],
        tools: Sequence[HostTool] = (),
        diffs: DiffSource | None = None,
    ) -> None:
        self.host = host
        self.sink = sink
        #: Where the keeper's rendered diffs go (the command's renderers draw them).
        self.diffs = diffs
        self.say = say
        #: The program's own tools, run here when the keeper asks (by name).
        self.tools = {tool.name: tool for tool in tools}
        self._frames: wire.FrameStream | None = None
        self._nursery: trio.Nursery | None = None
        self._interrupts = 0
        self._queued = False
        #: The last turn ran on an agent that was already warm.
        self.was_warm = False

    @property
    def running(self) -> bool:
        return self._frames is not None

    def interrupt(self, sig: signal.Signals | None = None) -> bool:
        """Ctrl-C (or ``sig``): the keeper aborts the turn, then stops waiting;
        a third leaves at once. ``False`` when no turn is running."""
        frames, nursery = self._frames, self._nursery
        if frames is None or nursery is None:
            return False
        frame = wire.Interrupt(signal=sig.name if sig is not None else "")
        try:
            nursery.start_soon(self._send_quietly, frame)
        except RuntimeError:  # the turn's nursery is closing: the turn has just ended
            return False
        self._interrupts += 1
        notice = attached.interrupt_notice(self._interrupts, sig, queued=self._queued)
        if notice is None:
            attached.leave_at_once(attached.exit_code_of(sig))
        self.say(notice)
        return True

    async def _send_quietly(self, frame: wire.Interrupt) -> None:
        frames = self._frames
        if frames is not None:
            try:
                await frames.send(frame)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass

    async def turn(
        self,
        session: str,
        request: wire.RunTurn,
    ) -> TurnResult | None:
        """Run ``request`` on the keeper; the result, or ``None`` when the
        keeper stopped waiting for the agent (the second Ctrl-C)."""
        frames = await connect(self.host, command=" ".join(sys.argv[:2]))
        return await self.follow(frames, request)

    async def follow(
        self, frames: wire.FrameStream, request: wire.RunTurn | None = None, *, interrupts: int = 0
    ) -> TurnResult | None:
        """Send ``request`` on the greeted connection ``frames`` and follow
        the turn to its end (as :meth:`turn`). ``request`` is ``None`` when
        the turn was sent already: the thin client hands its connection over
        here when a frame needs this command's host (a permission request, a
        question), with the interrupts its user gave so far."""
        self._interrupts = interrupts
        self._queued = False
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self._frames = frames
                if request is not None:
                    await frames.send(request)
                done = await self._read(frames, nursery)
                self._nursery = None  # the turn is over: a signal from now on finds none running
                nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            raise _single(group) from None
        finally:
            self._frames = None
            self._nursery = None
            await frames.aclose()
        if done.error and done.result is None:
            raise KeeperGone(done.error)
        self.was_warm = done.warm
        return done.result

    async def _read(self, frames: wire.FrameStream, nursery: trio.Nursery) -> wire.TurnDone:
        while True:
            try:
                raw = await frames.receive_raw()
            except (wire.FrameError, trio.BrokenResourceError, OSError) as exc:
                raise KeeperGone(attached.broken(exc)) from exc
            if raw is None:
                raise KeeperGone(attached.KEEPER_ENDED)
            frame = wire.decode_for_client(raw)
            if isinstance(frame, wire.Event):
                self._queued = attached.still_queued(self._queued, frame.event)
                if self.sink is not None:
                    self.sink(frame.event)
            elif isinstance(frame, wire.DiffText):
                if self.diffs is not None:
                    self.diffs.give(frame.call_id, frame.text)
            elif isinstance(frame, wire.Warning_):
                self.host.warn(frame.message)
            elif isinstance(frame, wire.AskPermission):
                nursery.start_soon(self._permission, frames, frame)
            elif isinstance(frame, wire.AskQuestion):
                nursery.start_soon(self._question, frames, frame)
            elif isinstance(frame, wire.CallTool):
                nursery.start_soon(self._tool, frames, frame)
            elif isinstance(frame, wire.CheckTool):
                nursery.start_soon(self._check, frames, frame)
            elif isinstance(frame, wire.TurnDone):
                return frame
            elif isinstance(frame, wire.Refused):
                raise KeeperRefused(frame.reason, frame.code)

    async def _permission(self, frames: wire.FrameStream, ask: wire.AskPermission) -> None:
        decision = await self.host.decide_permission(ask.request)
        await frames.send(wire.PermissionAnswer(id=ask.id, decision=decision))

    async def _question(self, frames: wire.FrameStream, ask: wire.AskQuestion) -> None:
        answer = await self.host.ask_question(ask.question)
        await frames.send(wire.QuestionAnswer(id=ask.id, answer=answer))

    async def _check(self, frames: wire.FrameStream, ask: wire.CheckTool) -> None:
        verdict = await self.host.check_tool(ask.call)
        await frames.send(wire.ToolChecked(id=ask.id, verdict=verdict))

    async def _tool(self, frames: wire.FrameStream, call: wire.CallTool) -> None:
        await frames.send(wire.ToolAnswer(id=call.id, result=await self._run_tool(call.name, call.arguments)))

    async def _run_tool(self, name: str, arguments: dict[str, object]) -> ToolResult:
        """The tool's result, as the turn layer would make it of a local call."""
        from agy_host.contract.tools import ToolResult

        tool = self.tools.get(name)
        if tool is None:
            return ToolResult(text=f"host tool {name!r} is not offered by this program", is_error=True)
        try:
            value: object = await tool.call(dict(arguments))
        except Exception as exc:
            return ToolResult(text=f"host tool {name!r} failed: {type(exc).__name__}: {exc}", is_error=True)
        return value if isinstance(value, ToolResult) else ToolResult(text=str(value))


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The keeper's own failure out of trio's exception group (``KeeperGone``,
    ``KeeperRefused``), else the group as it is."""
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            found = _single(exc)
            if found is not exc:
                return found
        elif isinstance(exc, KeeperGone | KeeperRefused):
            return exc
    return group


def run_request(
    host: Host,
    session: str,
    prompt: list,  # type: ignore[type-arg]
    *,
    cwd: str,
    settings: TurnSettings,
    keep_alive_s: float,
    no_wait: bool = False,
    system_prompt: str | None = None,
    digest: bool | None = None,
    draws_diffs: bool = False,
    trace: str | None = None,
    tools: Sequence[HostTool] = (),
    rebuild_answer: bool = False,
) -> wire.RunTurn:
    """The ``run`` frame for this command's host and turn; ``tools`` are the
    ones this command runs itself (:class:`RemoteRuntime`'s);
    ``rebuild_answer``: the sink is an :class:`~agy_host.keeper.rebuild.AnswerRebuilder`."""
    spec = wire.HostSpec(
        env=dict(host.env),
        engine=host.engine_flag,
        agent=host.agent,
        # the policy by name, as resolved here: `--permissions ask` and the
        # default ask are one setting for the warm agent (the command's own
        # broker decides how it asks)
        permissions=chosen_policy(host.permissions_flag, host.config.permissions.policy)[0],
        trace=trace,
        system_prompt=system_prompt,
        digest=digest,
        draws_diffs=draws_diffs,
        tools=[wire.ToolSpec(name=t.name, description=t.description, input_schema=t.input_schema) for t in tools],
        allowed_tools=list(host.allowed_tools),
        disallowed_tools=list(host.disallowed_tools),
        before_tool=host.before_tool is not None,
    )
    fields = {f: getattr(settings, f) for f in wire.Settings.__struct_fields__}
    return wire.RunTurn(
        session=session,
        prompt=prompt,
        cwd=cwd,
        host=spec,
        settings=wire.Settings(**fields),
        keep_alive_s=keep_alive_s,
        no_wait=no_wait,
        rebuild_answer=rebuild_answer,
    )


__all__ = [
    "KeeperGone",
    "KeeperRefused",
    "KeeperUnavailable",
    "RemoteRuntime",
    "connect",
    "end_warm",
    "request",
    "run_request",
]
