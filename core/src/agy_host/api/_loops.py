"""The two loops a program may await a Session from.

Under trio the runtime runs in the caller's loop and everything is called
directly. Under asyncio the runtime is a trio *guest* on asyncio's loop
(:func:`trio.lowlevel.start_guest_run`): trio's steps run as callbacks of
asyncio's loop on the caller's thread, so trio code may complete asyncio
futures and fill asyncio queues directly, and asyncio code reaches trio
through the trio token.

Either way the session's turns run on a :class:`Runtime`: a local
:class:`~agy_host.runtime.session.SessionRuntime`, or the session's warm
agent in the keeper (:mod:`agy_host.api._warm`).

Trio runs one guest per thread, so a one-off piece of trio work under
asyncio (:func:`in_trio`: ``fork_session`` asking the agent) runs in the
guest of a session open on that loop when there is one, else in a short
guest run of its own.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from agy_host.api.errors import AgyHostError, UsageError

if TYPE_CHECKING:
    import trio

    from agy_host.api._setup import Options
    from agy_host.contract.events import HostEvent
    from agy_host.contract.prompt import PromptBlock
    from agy_host.contract.turn_result import TurnResult
    from agy_host.engine.base import Engine
    from agy_host.runtime.host import Host
    from agy_host.runtime.session import TurnSettings

_T = TypeVar("_T")


class Job(Generic[_T]):
    """A task running in the runtime's nursery, awaited from the caller's loop."""

    def __init__(self) -> None:
        self.done = False
        self.value: _T | None = None
        self.error: BaseException | None = None

    def finish(self, value: _T | None, error: BaseException | None) -> None:
        self.value, self.error, self.done = value, error, True

    def unwrap(self) -> _T:
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]  # set by finish() with the error unset


class Runtime(Protocol):
    """What a Session's turns run on (a local runtime or a warm agent's)."""

    @property
    def engine(self) -> Engine: ...
    @property
    def nursery(self) -> trio.Nursery: ...
    async def turn(
        self, session: str, blocks: Sequence[PromptBlock], *, cwd: str, settings: TurnSettings | None = None
    ) -> TurnResult | None: ...
    def abort(self, reason: str = ...) -> bool: ...
    def stop_waiting(self) -> bool: ...


class Loop(Protocol):
    """What the public Session needs from the loop it is awaited in."""

    runtime: Runtime

    def queue(self) -> Any: ...
    def soon(self, fn: Callable[[], object]) -> None: ...
    def spawn(self, fn: Callable[[], Awaitable[_T]]) -> Job[_T]: ...
    async def wait(self, job: Job[Any], timeout: float | None) -> bool: ...


class TrioQueue:
    def __init__(self) -> None:
        import math

        import trio

        self._send, self._recv = trio.open_memory_channel[object](math.inf)

    def put_nowait(self, item: object) -> None:
        self._send.send_nowait(item)

    async def get(self) -> object:
        return await self._recv.receive()


class TrioLoop(Loop):
    """The caller is a trio task: everything is called directly."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._finished: dict[int, trio.Event] = {}

    def queue(self) -> TrioQueue:
        return TrioQueue()

    def soon(self, fn: Callable[[], object]) -> None:
        fn()

    def spawn(self, fn: Callable[[], Awaitable[_T]]) -> Job[_T]:
        import trio

        job: Job[_T] = Job()
        event = self._finished[id(job)] = trio.Event()

        async def task() -> None:
            try:
                job.finish(await fn(), None)
            except BaseException as exc:  # handed to the awaiting caller
                job.finish(None, exc)
                if not isinstance(exc, Exception):
                    raise
            finally:
                event.set()

        self.runtime.nursery.start_soon(task)
        return job

    async def wait(self, job: Job[Any], timeout: float | None) -> bool:
        import trio

        event = self._finished[id(job)]
        with trio.CancelScope(shield=True), trio.move_on_after(timeout if timeout is not None else float("inf")):
            await event.wait()
        if job.done:
            self._finished.pop(id(job), None)
        return job.done


class AsyncioQueue:
    def __init__(self) -> None:
        import asyncio

        self._queue: asyncio.Queue[object] = asyncio.Queue()

    def put_nowait(self, item: object) -> None:
        self._queue.put_nowait(item)

    async def get(self) -> object:
        return await self._queue.get()


class AsyncioLoop(Loop):
    """The caller is an asyncio task; the runtime is a trio guest on its loop.

    Trio's steps run as callbacks of asyncio's loop, on the same thread, so
    trio code may complete asyncio futures and fill asyncio queues directly;
    asyncio code reaches trio through the trio token (``soon``)."""

    def __init__(self) -> None:
        import asyncio

        self.loop = asyncio.get_running_loop()
        self.token: Any = None
        self.closing: Any = None
        self.main_scope: Any = None
        self.started: asyncio.Future[None] = self.loop.create_future()
        self.ready: asyncio.Future[None] = self.loop.create_future()
        self.finished: asyncio.Future[Any] = self.loop.create_future()

    async def open(self, host: Host, opts: Options, sink: Callable[[HostEvent], None]) -> None:
        import asyncio

        import trio

        from agy_host.api._warm import open_runtime

        async def main() -> None:
            self.token = trio.lowlevel.current_trio_token()
            self.closing = trio.Event()
            self.started.set_result(None)
            with trio.CancelScope() as self.main_scope:
                async with open_runtime(host, opts, sink) as runtime:
                    self.runtime = runtime
                    if not self.ready.done():
                        self.ready.set_result(None)
                    await self.closing.wait()

        def done(outcome: Any) -> None:
            if not self.finished.done():
                self.finished.set_result(outcome)

        trio.lowlevel.start_guest_run(
            main,
            run_sync_soon_threadsafe=self.loop.call_soon_threadsafe,
            run_sync_soon_not_threadsafe=self.loop.call_soon,
            done_callback=done,
            host_uses_signal_set_wakeup_fd=True,
        )
        try:
            await asyncio.wait([self.ready, self.finished], return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            await self.close(cancel=True)
            raise
        if not self.ready.done():
            self.finished.result().unwrap()
            raise AgyHostError("the session runtime ended before it started")
        _GUESTS[self.loop] = self

    async def close(self, *, cancel: bool = False) -> None:
        import asyncio

        if _GUESTS.get(self.loop) is self:
            del _GUESTS[self.loop]
        if self.token is None and not self.finished.done():
            # the guest has not run its first step yet
            await asyncio.wait([self.started, self.finished], return_when=asyncio.FIRST_COMPLETED)
        if not self.finished.done():
            scope, closing = self.main_scope, self.closing
            self.token.run_sync_soon(scope.cancel if cancel else closing.set)
        outcome = await asyncio.shield(self.finished)
        if not cancel:
            outcome.unwrap()

    def queue(self) -> AsyncioQueue:
        return AsyncioQueue()

    def soon(self, fn: Callable[[], object]) -> None:
        self.token.run_sync_soon(fn)

    def spawn(self, fn: Callable[[], Awaitable[_T]]) -> Job[_T]:
        job: Job[_T] = Job()
        future = self.loop.create_future()

        async def task() -> None:
            try:
                job.finish(await fn(), None)
            except BaseException as exc:
                job.finish(None, exc)
                if not isinstance(exc, Exception):
                    raise
            finally:
                if not future.done():
                    future.set_result(None)

        setattr(job, "future", future)  # noqa: B010 - the job type is shared with trio
        self.soon(lambda: self.runtime.nursery.start_soon(task))
        return job

    async def wait(self, job: Job[Any], timeout: float | None) -> bool:
        import asyncio

        future: asyncio.Future[None] = getattr(job, "future")  # noqa: B009
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(future), timeout)
        return job.done


#: The trio guest of the session open on each asyncio loop, for :func:`in_trio`.
_GUESTS: weakref.WeakKeyDictionary[Any, AsyncioLoop] = weakref.WeakKeyDictionary()


async def in_trio(fn: Callable[[], Awaitable[_T]], what: str) -> _T:
    """Await the trio code ``fn`` from the program's loop: directly under
    trio; under asyncio in the trio guest of a session open on this loop
    (trio runs one guest per thread), else in a guest run of its own.
    Cancelling the caller cancels ``fn`` and waits for it to end. ``what``
    names the call for a program that awaits it from another library."""
    if current_library(what) == "trio":
        return await fn()
    import asyncio

    import trio

    scope = trio.CancelScope()

    async def guarded() -> _T:
        with scope:
            return await fn()
        raise AgyHostError("cancelled by the program")

    guest = _GUESTS.get(asyncio.get_running_loop())
    job = guest.spawn(guarded) if guest is not None else _guest_run(guarded)
    ended: asyncio.Future[None] = getattr(job, "future")  # noqa: B009
    try:
        await asyncio.shield(ended)
    except asyncio.CancelledError:
        token = guest.token if guest is not None else getattr(job, "token", None)
        if token is not None:
            token.run_sync_soon(scope.cancel)
        else:
            scope.cancel()  # its guest run has not taken a step yet: it starts cancelled
        await asyncio.shield(ended)
        raise
    if isinstance(job.error, trio.Cancelled):
        raise AgyHostError(f"{what} was cut short: the session it ran in closed")
    return job.unwrap()


def _guest_run(fn: Callable[[], Awaitable[_T]]) -> Job[_T]:
    """``fn`` in a trio guest run of its own on the running asyncio loop."""
    import asyncio

    import trio

    loop = asyncio.get_running_loop()
    job: Job[_T] = Job()
    future = loop.create_future()
    setattr(job, "future", future)  # noqa: B010 - as AsyncioLoop.spawn's

    async def main() -> None:
        setattr(job, "token", trio.lowlevel.current_trio_token())  # noqa: B010
        try:
            job.finish(await fn(), None)
        except Exception as exc:  # handed to the awaiting caller
            job.finish(None, exc)

    def done(outcome: Any) -> None:
        if not job.done:
            job.finish(None, outcome.error if hasattr(outcome, "error") else AgyHostError("trio ended early"))
        if not future.done():
            future.set_result(None)

    trio.lowlevel.start_guest_run(
        main,
        run_sync_soon_threadsafe=loop.call_soon_threadsafe,
        run_sync_soon_not_threadsafe=loop.call_soon,
        done_callback=done,
        host_uses_signal_set_wakeup_fd=True,
    )
    return job


def current_library(what: str = "open_session()") -> str:
    import sniffio

    try:
        return sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        raise UsageError(f"{what} must be awaited inside trio or asyncio; for a blocking call use run()") from None
