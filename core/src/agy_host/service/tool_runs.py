"""Host tools running for parked calls, and the ones that outlive their park.

The turn layer runs the host tool of a bridge call while the call's park
lives. A park can end before its tool does: its TTL (or an escalated call's
longer TTL) runs out, the agent hangs up, or the agent's turn settles. The
agent then has its answer (an error, or the escalation's "still running"),
so the turn must go on: read the agent's reply, with its clocks running
again. It used to wait for the tool instead, for good when the tool never
ended, with the deadline and inactivity clocks of no use.

So a tool runs here, in the command's round-trip nursery, not in the turn
layer's task. :meth:`ToolRuns.run` waits for it while the park lives and
hands back its result; when the park ends first it **detaches** the tool and
returns: the tool runs on, and its result, when it comes, goes to the
round-trips as any result whose park died does, a late result the next
fresh turn carries (``agy-host run``: a follow-up turn, after
:meth:`ToolRuns.wait_detached`). A detached tool ends by its turn's
deadline at the latest (the remaining budget of the turn it was called in,
:meth:`~agy_host.engine.driver.TurnHandle.remaining_s`; the clock runs on
once the park ended), and it is cancelled when its turn is aborted, when
the person stops waiting for it (:meth:`ToolRuns.cancel_detached`), when
no follow-up turn will carry its result (its turn failed: :meth:`ToolRuns.drop_detached`),
or when the command ends. Each of those is said with a notice: nothing is
dropped silently.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal

import trio

from agy_host.contract.tools import ToolResult

if TYPE_CHECKING:
    from agy_host.engine.driver import TurnHandle

Level = Literal["info", "warning", "error"]
#: What :meth:`ToolRuns.run` gives when there is no result for the turn.
NoResult = Literal["aborted", "detached"]


class _Run:
    """One host tool running for call ``call_id`` of the turn behind ``handle``."""

    def __init__(self, call_id: str, name: str, handle: TurnHandle) -> None:
        self.call_id = call_id
        self.name = name
        self.handle = handle
        self.scope = trio.CancelScope()
        self.done = trio.Event()
        self.result: ToolResult | None = None
        #: The park ended first: the turn went on, the result will be late.
        self.detached = False
        #: Why it was cancelled, when someone cancelled it ("" for its deadline).
        self.why = ""


class ToolRuns:
    """The host tools of one command's bridge calls; see the module docstring.

    ``deliver`` takes a detached tool's result (the round-trips'
    ``deliver_tool_result``: a late result), ``notice`` tells the person.
    """

    def __init__(
        self,
        nursery: trio.Nursery,
        *,
        deliver: Callable[[str, ToolResult], bool],
        notice: Callable[[Level, str], None],
    ) -> None:
        self._nursery = nursery
        self._deliver = deliver
        self._notice = notice
        self._runs: dict[str, _Run] = {}

    @property
    def detached(self) -> list[str]:
        """Names of the detached tools still running."""
        return [run.name for run in self._runs.values() if run.detached]

    async def run(
        self,
        call_id: str,
        name: str,
        handle: TurnHandle,
        call: Callable[[], Awaitable[ToolResult]],
        *,
        park_ended: trio.Event | None,
    ) -> ToolResult | NoResult:
        """Run ``call`` for call ``call_id`` and wait for it while its park
        lives (``park_ended`` not set; ``None``: the park is gone already).

        Its result when it finishes first. ``"aborted"`` when the turn is
        aborted: the tool is cancelled, and is over when this returns.
        ``"detached"`` when the park ends first or the agent's turn settles:
        the tool runs on, bounded by the turn's remaining deadline."""
        run = _Run(call_id, name, handle)
        self._runs[call_id] = run
        self._nursery.start_soon(self._task, run, call)
        async with trio.open_nursery() as waiters:

            async def wake_on(event: trio.Event) -> None:
                await event.wait()
                waiters.cancel_scope.cancel()

            for event in (run.done, handle.abort_requested, handle.settled, park_ended):
                if event is None:
                    waiters.cancel_scope.cancel()  # no park left to wait in
                else:
                    waiters.start_soon(wake_on, event)
        if run.done.is_set() and run.result is not None:
            return run.result
        if handle.abort_requested.is_set() or run.done.is_set():
            self._cancel(run, "as its turn was aborted")
            await run.done.wait()
            return "aborted"
        run.detached = True
        # The clock runs again: what is left of the turn's deadline bounds it.
        run.scope.deadline = trio.current_time() + handle.remaining_s()
        self._notice(
            "info",
            f"host tool {name!r} is still running; the turn goes on without it, and its result "
            "goes to the agent as a late result",
        )
        return "detached"

    def cancel(self, call_id: str, why: str) -> None:
        """Cancel the tool of ``call_id`` if it still runs."""
        run = self._runs.get(call_id)
        if run is not None:
            self._cancel(run, why)

    def cancel_detached(self, why: str) -> bool:
        """Cancel every detached tool (the person stopped waiting for them);
        ``False`` when none runs."""
        runs = [run for run in self._runs.values() if run.detached]
        for run in runs:
            self._cancel(run, why)
        return bool(runs)

    async def drop_detached(self, why: str) -> None:
        """Cancel every detached tool at once, no turn being left to carry its
        result (``why`` says so in each one's notice), and wait until each is over."""
        runs = [run for run in self._runs.values() if run.detached]
        self.cancel_detached(why)
        for run in runs:
            await run.done.wait()

    async def wait_detached(self) -> None:
        """Until no detached tool runs: each has given its result (now a late
        result), or was cancelled (its turn's deadline at the latest)."""
        runs = [run for run in self._runs.values() if run.detached]
        if not runs:
            return
        names = ", ".join(sorted({repr(run.name) for run in runs}))
        self._notice(
            "info",
            f"waiting for host tool {names}, still running after its call ended, to send its result to the "
            "agent (at most until its turn's deadline; Ctrl-C to stop waiting)",
        )
        for run in runs:
            await run.done.wait()

    def close(self) -> None:
        """The command ends: every tool still running is cancelled, and a
        detached one is said to be (now: nobody hears a notice later)."""
        for run in list(self._runs.values()):
            if run.detached:
                run.detached = False
                self._notice(
                    "warning",
                    f"host tool {run.name!r} was cancelled as agy-host ended; its result will not reach the agent",
                )
            self._cancel(run, "as agy-host ended")

    # -- internals -----------------------------------------------------------------------

    def _cancel(self, run: _Run, why: str) -> None:
        if not run.done.is_set():
            run.why = run.why or why
            run.scope.cancel()

    async def _task(self, run: _Run, call: Callable[[], Awaitable[ToolResult]]) -> None:
        try:
            with run.scope:
                async with trio.open_nursery() as nursery:

                    async def cancel_on_abort() -> None:
                        await run.handle.abort_requested.wait()
                        self._cancel(run, "as its turn was aborted")

                    nursery.start_soon(cancel_on_abort)
                    run.result = await call()
                    nursery.cancel_scope.cancel()
        finally:
            self._runs.pop(run.call_id, None)
            run.done.set()
        if run.detached:
            self._detached_over(run)

    def _detached_over(self, run: _Run) -> None:
        if run.result is None:
            why = run.why or "at its turn's deadline"
            self._notice("warning", f"host tool {run.name!r} was cancelled {why}; its result will not reach the agent")
        elif not self._deliver(run.call_id, run.result):
            self._notice("warning", f"the result of host tool {run.name!r} was dropped (its call is forgotten)")


__all__ = ["NoResult", "ToolRuns"]
