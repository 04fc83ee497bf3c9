"""The Python API: drive an agent from a program, under trio or asyncio.

::

    async with agy_host.open_session(agent="gemini --acp", session="work") as s:
        async for event in s.prompt("fix the failing test"):
            if isinstance(event, agy_host.TextDelta):
                print(event.delta, end="")
        print(s.result.stop_reason, s.result.usage)

    r = agy_host.run("summarise README.md", engine="harness")

A :class:`Session` is a front-end of the same
:class:`~agy_host.runtime.session.SessionRuntime` that ``agy-host run``,
``chat`` and ``ask`` use, built from the same config and store: its sessions
are the CLI's (``agy-host sessions list`` shows them) and the reverse;
:mod:`agy_host.api.sessions` lists, reads, deletes and forks them.
Under asyncio the runtime runs as a trio guest on asyncio's loop (see
:mod:`agy_host.api._loops` and ``docs/python.md`` for why).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agy_host.api.errors import (
    AgyHostError,
    EngineUnavailable,
    KeeperLost,
    NotSupported,
    OutputInvalid,
    PermissionDenied,
    SessionBusy,
    SessionNotFound,
    TurnError,
    TurnInterrupted,
    TurnTimeout,
    UsageError,
    error_for,
)
from agy_host.api.status import SessionStatus, add_usage
from agy_host.contract.events import Notice as _Notice

if TYPE_CHECKING:
    from agy_host.api._callbacks import ProgramLoop
    from agy_host.api._loops import Job, Loop
    from agy_host.api._setup import Options, PermissionCallback
    from agy_host.contract.events import HostEvent, ToolCard, UsageCounts
    from agy_host.contract.interactions import Question
    from agy_host.contract.prompt import PromptBlock
    from agy_host.contract.tool_calls import ToolCall
    from agy_host.contract.turn_result import TurnResult
    from agy_host.runtime.host import Host

#: How long an aborted turn may take to settle before it is left behind.
ABORT_GRACE_S = 10.0
_END = object()


class Turn:
    """One prompt's turn: iterate it for its events; ``result`` once it ended.

    A turn that is closed before it ended is aborted the way Ctrl-C aborts
    one: the agent is asked to stop, the session binding is kept, and after
    :data:`ABORT_GRACE_S` an agent that does not stop is left behind (and
    restarted by the next prompt). A turn is closed by a cancelled task, by
    ``async with s.prompt(...) as turn`` ending, by :meth:`aclose`, and, for
    a loop left with ``break``, at the next prompt or when the session closes
    (Python finalizes an abandoned iterator only later)."""

    def __init__(self, session: Session, blocks: list[PromptBlock], *, check: bool) -> None:
        self._session = session
        self._blocks = blocks
        self._check = check
        self._job: Job[TurnResult | None] | None = None
        self._queue: Any = None
        self.result: TurnResult | None = None

    async def _start(self) -> None:
        if self._job is not None:
            return
        session, loop = self._session, self._session._loop_()
        previous, session._current = session._current, self
        if previous is not None and previous is not self:
            await previous.aclose()  # an abandoned turn ends before the next starts
        self._queue = loop.queue()
        opts = session._options
        runtime = loop.runtime
        queue = self._queue
        observers = session._observers

        async def turn() -> TurnResult | None:
            try:
                return await observers.around(
                    lambda: runtime.turn(opts.session, self._blocks, cwd=opts.cwd, settings=opts.settings)
                )
            finally:
                queue.put_nowait(_END)

        self._job = loop.spawn(turn)

    async def __aenter__(self) -> Turn:
        await self._start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _event(self, event: HostEvent) -> None:
        if self._queue is not None:
            self._queue.put_nowait(event)

    def __aiter__(self) -> AsyncIterator[HostEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[HostEvent]:
        await self._start()
        finished = False
        try:
            while True:
                item = await self._queue.get()
                if item is _END:
                    finished = True
                    break
                yield item
        finally:
            if not finished:
                await self.aclose()
        self._settle()

    async def wait(self) -> TurnResult:
        """Run the turn to its end without looking at its events."""
        async for _ in self:
            pass
        assert self.result is not None
        return self.result

    async def aclose(self) -> None:
        """Abort the turn if it still runs, and wait until it settled."""
        job = self._job
        if job is None or self.result is not None:
            return
        loop = self._session._loop_()
        runtime = loop.runtime
        if not job.done:
            loop.soon(lambda: runtime.abort("cancelled by the program"))
            if not await loop.wait(job, ABORT_GRACE_S):
                loop.soon(runtime.stop_waiting)
                await loop.wait(job, None)
        if self.result is None:
            self._settle(check=False)

    def _settle(self, *, check: bool | None = None) -> None:
        assert self._job is not None
        if self._session._current is self:
            self._session._current = None
        result = self._job.unwrap()
        if result is None:
            from agy_host.contract.turn_result import TurnResult
            from agy_host.exit_codes import ExitCode
            from agy_host.runtime.session import STOPPED_WAITING

            result = TurnResult(
                session=self._session.name,
                stop_reason="aborted",
                exit_code=ExitCode.INTERRUPTED,
                duration_s=0.0,
                error=STOPPED_WAITING,
            )
        self.result = self._session.result = result
        self._session._turns += 1
        self._session.usage = add_usage(self._session.usage, result.usage)
        if (self._check if check is None else check) and result.exit_code != 0:
            raise error_for(result)


class Session:
    """A host session opened from Python (see :func:`open_session`)."""

    def __init__(self, options: Options, host: Host) -> None:
        self._options = options
        self.host = host
        #: The host session name (``agy-host run --session NAME`` continues it).
        self.name = options.session
        #: The engine that runs the turns.
        self.engine = host.load_engine().ENGINE_NAME
        #: The last finished turn's result.
        self.result: TurnResult | None = None
        #: The usage of this program's turns on the session, added up
        #: (``None`` until an agent reported some).
        self.usage: UsageCounts | None = None
        self._turns = 0
        self._loop: Loop | None = None
        self._current: Turn | None = None
        self._observers = options.observers(host)

    def _loop_(self) -> Loop:
        if self._loop is None:
            raise AgyHostError("this session is closed; open a new one with agy_host.open_session()")
        return self._loop

    def _sink(self, event: HostEvent) -> None:
        current = self._current
        if current is not None:
            current._event(event)
            self._observers.saw(event)
        if isinstance(event, _Notice) and event.level != "info":
            # A program that only awaits s.run() never sees the events: what
            # the CLI prints on stderr goes to the agy_host logger.
            logging.getLogger("agy_host").log(
                logging.ERROR if event.level == "error" else logging.WARNING, "%s", event.message
            )

    @property
    def info(self) -> SessionStatus:
        """Where the session stands: engine, agent, what the next turn asks
        for (model, effort, mode, permissions), its conversation, whether
        its agent is warm, turns run and whether one runs now."""
        settings, config = self._options.settings, self.host.config
        conversation = self.result.conversation_id if self.result is not None else None
        if conversation is None:
            bound = self.host.store.get(self.host.load_engine().store_key(self.name))
            conversation = bound.conversation_id if bound is not None else None
        runtime = self._loop.runtime if self._loop is not None else None
        current = self._current
        return SessionStatus(
            name=self.name,
            engine=self.engine,
            agent=self._options.agent,
            model=settings.model or config.model or None,
            effort=settings.effort or config.effort or None,
            mode=settings.mode or config.mode or None,
            permissions=self.host.permission_policy().name,
            conversation_id=conversation,
            warm=bool(getattr(runtime, "was_warm", False)),
            turns=self._turns,
            turn_running=current is not None and current._job is not None and not current._job.done,
        )

    async def set_model(self, model: str | None) -> None:
        """Use ``model`` from the next turn on (``None``: the config's). The
        engine applies it to the live agent where it can (ACP's
        ``session/set_config_option``), else reopens the conversation on
        it, as ``chat``'s ``/model`` does."""
        self._loop_()
        self._options.settings.model = model or None

    async def set_effort(self, effort: str | None) -> None:
        """Use ``effort`` (``low``, ``medium``, ``high``...) from the next turn on, as :meth:`set_model`."""
        self._loop_()
        self._options.settings.effort = effort or None

    async def set_mode(self, mode: str | None) -> None:
        """Use the agent's ``mode`` from the next turn on, as :meth:`set_model`."""
        self._loop_()
        self._options.settings.mode = mode or None

    async def interrupt(self) -> bool:
        """Cancel the running turn from another task, as Ctrl-C does: it
        ends with exit code 130 (stop reason ``aborted``), its iterator ends
        normally, and the session goes on. ``False`` when no turn runs."""
        loop, current = self._loop_(), self._current
        if current is None or current._job is None or current._job.done:
            return False
        runtime = loop.runtime
        loop.soon(lambda: runtime.abort("interrupted by the program"))
        return True

    def prompt(
        self,
        prompt: str | Sequence[PromptBlock],
        *,
        files: Iterable[str | Path] = (),
        images: Iterable[str | Path] = (),
        check: bool = False,
    ) -> Turn:
        """Send ``prompt`` (text, where ``@path`` attaches a file as in the
        CLI, or prompt blocks) and return its :class:`Turn`: iterate it for
        the events; ``check=True`` raises a :class:`TurnError` when the turn
        ends with a non-zero exit code."""
        return Turn(self, self._blocks(prompt, files, images), check=check)

    def _blocks(
        self, prompt: str | Sequence[PromptBlock], files: Iterable[str | Path], images: Iterable[str | Path]
    ) -> list[PromptBlock]:
        from agy_host.runtime.prompt_input import PromptInputError, check_blocks, prepare

        engine = self._loop_().runtime.engine
        try:
            if isinstance(prompt, str):
                max_bytes = self.host.config.prompt.max_attachment_bytes
                cwd = self._options.cwd
                return prepare(prompt, engine, cwd=cwd, files=list(files), images=list(images), max_bytes=max_bytes)
            blocks = list(prompt)
            check_blocks(blocks, engine)
            return blocks
        except PromptInputError as exc:
            raise UsageError(str(exc)) from exc

    async def run(
        self,
        prompt: str | Sequence[PromptBlock],
        *,
        check: bool = False,
        output: Any = None,
        files: Iterable[str | Path] = (),
        images: Iterable[str | Path] = (),
    ) -> TurnResult:
        """:meth:`prompt` run to its end; the :class:`TurnResult`.

        ``output`` (a dataclass, a ``msgspec.Struct``, a ``TypedDict`` or a
        JSON Schema dict) asks for structured output: the prompt carries the
        schema, the answer is validated into ``result.output``, a wrong
        answer is sent back once with what was wrong (the result is then the
        second turn's), and a second wrong one raises
        :class:`~agy_host.api._output.OutputInvalid` with the raw answer. A
        turn that fails (a non-zero exit code) is returned as it is, or
        raised with ``check=True``; it has no ``output``."""
        if output is None:
            return await self.prompt(prompt, files=files, images=images, check=check).wait()
        from agy_host.api._output import OutputSpec

        spec = OutputSpec.of(output)
        result = await Turn(self, spec.ask(self._blocks(prompt, files, images)), check=check).wait()
        if result.exit_code != 0:
            return result
        value, reason = spec.read(result.response)
        if reason is not None:
            result = await Turn(self, spec.retry(reason), check=check).wait()
            if result.exit_code != 0:
                return result
            value, reason = spec.read(result.response)
            if reason is not None:
                raise OutputInvalid(reason, result.response, result)
        result.output = value
        return result


class _Opener(contextlib.AbstractAsyncContextManager["Session"]):
    def __init__(self, options: Options) -> None:
        self.options = options
        self.session: Session | None = None
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> Session:
        from agy_host.api._loops import current_library

        library = current_library()
        host = self.options.host(_program_loop(library))
        self._stack.callback(host.close)
        session = Session(self.options, host)
        if library == "trio":
            from agy_host.api._loops import TrioLoop
            from agy_host.api._warm import open_runtime

            runtime = await self._stack.enter_async_context(open_runtime(host, self.options, session._sink))
            session._loop = TrioLoop(runtime)
        elif library == "asyncio":
            from agy_host.api._loops import AsyncioLoop

            loop = AsyncioLoop()
            await loop.open(host, self.options, session._sink)
            self._stack.push_async_callback(loop.close)
            session._loop = loop
        else:
            raise UsageError(f"open_session() runs under trio or asyncio, not {library}")
        self.session = session
        return session

    async def __aexit__(self, *exc_info: object) -> bool | None:
        session = self.session
        try:
            if session is not None and session._current is not None:
                with contextlib.suppress(AgyHostError):
                    await session._current.aclose()
        finally:
            if session is not None:
                session._loop = None
            await self._stack.aclose()
        return None


def _program_loop(library: str) -> ProgramLoop:
    """Where the program's callbacks run: on asyncio's loop under asyncio
    (the runtime is a trio guest there), else in the runtime's trio task."""
    from agy_host.api._callbacks import ProgramLoop

    if library == "asyncio":
        import asyncio

        return ProgramLoop(asyncio.get_running_loop())
    return ProgramLoop()


def open_session(
    *,
    engine: str | None = None,
    agent: str | None = None,
    model: str | None = None,
    effort: str | None = None,
    mode: str | None = None,
    cwd: str | Path | None = None,
    session: str | None = None,
    resume: bool = False,
    wait: bool = True,
    keep_alive: float | None = None,
    system_prompt: str | None = None,
    timeout: float | None = None,
    inactivity: float | None = None,
    permissions: str | PermissionCallback | None = None,
    skip_permissions: bool | None = None,
    tools: Sequence[Callable[..., Any]] = (),
    env: Mapping[str, str] | None = None,
    plugins: Sequence[object] = (),
    on_question: Callable[[Question], Any] | None = None,
    answers: str | Path | Sequence[Mapping[str, Any]] | None = None,
    max_tokens: int | None = None,
    max_cost: float | None = None,
    trace: str | Path | None = None,
    before_tool: Callable[[ToolCall], Any] | None = None,
    after_tool: Callable[[ToolCard], Any] | None = None,
    on_turn_end: Callable[[TurnResult], Any] | None = None,
    allowed_tools: Sequence[str] = (),
    disallowed_tools: Sequence[str] = (),
) -> contextlib.AbstractAsyncContextManager[Session]:
    """Open a session on an agent: ``async with open_session(...) as s``.

    The options are the CLI's (``agy-host run --help``), by keyword, and the
    config file applies as it does there; ``timeout`` and ``inactivity`` are
    seconds (0 disables). ``permissions`` is a policy name or a callback
    ``(PermissionRequest) -> PermissionDecision | option id | bool`` (sync
    or async). Without it the config's policy applies; when nobody chose
    one, a permission request is refused (exit code 5, ``result.error``
    says how to allow): a program is prompted at the terminal only with
    ``permissions="ask"``. ``tools`` are plain functions offered to the agent as host
    tools. ``env`` replaces ``os.environ`` for config and state lookups.
    Questions the agent asks (:class:`~agy_host.contract.interactions.Question`)
    are answered by ``answers`` (a rules file or a list of rule dicts, as
    ``--answers``), then ``on_question`` (sync or async: an ``Answer``, a
    dict of form values, a str, ``True``/``False``, or ``None`` to cancel);
    unanswered, they fail the turn closed (exit code 5). ``max_tokens`` and
    ``max_cost`` stop a turn that crosses them (exit code 6). While another
    command (or session) runs a turn on ``session``, a turn waits for it
    (said once on the ``agy_host`` logger); with ``wait=False`` it ends at
    once with exit code 7 (:class:`SessionBusy` with ``check=True``). ``trace``
    appends every frame to and from the agent to a file, secrets redacted
    (``--trace``; ``AGY_HOST_TRACE`` in ``env`` does the same).

    Hooks (sync or async, on the program's loop, bounded like the
    permission callback): ``before_tool`` gets each
    :class:`~agy_host.contract.tool_calls.ToolCall` before it runs (``True``
    allows, ``False`` or a reason denies, a dict rewrites a host tool's or a
    harness step's input, ``None`` leaves it to the policy); ``after_tool``
    each finished ``ToolCard``; ``on_turn_end`` each ``TurnResult``.
    ``allowed_tools`` and ``disallowed_tools`` are globs over tool names
    (``kind:`` globs over kinds) allowed without the policy, and always
    denied (denied wins); the config's ``[permissions]`` lists apply too.

    A named ``session`` runs on its warm agent, as ``agy-host run --session``
    does: kept alive after each turn for ``keep_alive`` idle minutes (default
    the config's ``turn.keep_alive_minutes``; none for an unnamed session
    unless given; ``0`` turns it off), so the next program or command on the
    session starts no agent. ``tools``, ``permissions`` and ``on_question``
    still run in this program. ``plugins`` cannot cross to the keeper: with
    them the session runs cold (said on the ``agy_host`` logger).
    """
    from agy_host.api._setup import Options

    options = Options(
        engine=engine,
        agent=agent,
        model=model,
        effort=effort,
        mode=mode,
        cwd=cwd,
        session=session,
        resume=resume,
        wait=wait,
        keep_alive=keep_alive,
        system_prompt=system_prompt,
        timeout=timeout,
        inactivity=inactivity,
        permissions=permissions,
        skip_permissions=skip_permissions,
        tools=tools,
        env=env,
        plugins=plugins,
        on_question=on_question,
        answers=answers,
        max_tokens=max_tokens,
        max_cost=max_cost,
        trace=trace,
        before_tool=before_tool,
        after_tool=after_tool,
        on_turn_end=on_turn_end,
        allowed_tools=allowed_tools,
        disallowed_tools=disallowed_tools,
    )
    return _Opener(options)


def run(
    prompt: str | Sequence[PromptBlock],
    *,
    check: bool = False,
    files: Iterable[str | Path] = (),
    images: Iterable[str | Path] = (),
    output: Any = None,
    **options: Any,
) -> TurnResult:
    """One turn, blocking: for scripts and notebooks. Takes
    :func:`open_session`'s options; returns the :class:`TurnResult`
    (``output=`` as :meth:`Session.run` takes it)."""
    import trio

    async def main() -> TurnResult:
        async with open_session(**options) as s:
            return await s.run(prompt, files=files, images=images, check=check, output=output)

    return trio.run(main)


__all__ = [
    "ABORT_GRACE_S",
    "AgyHostError",
    "EngineUnavailable",
    "KeeperLost",
    "NotSupported",
    "OutputInvalid",
    "PermissionDenied",
    "Session",
    "SessionBusy",
    "SessionNotFound",
    "SessionStatus",
    "Turn",
    "TurnError",
    "TurnInterrupted",
    "TurnTimeout",
    "UsageError",
    "open_session",
    "run",
]
