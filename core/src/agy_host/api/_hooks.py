"""The program's hooks: ``before_tool=``, ``after_tool=`` and ``on_turn_end=``.

They are the program's code, so they run where its other callbacks run
(:mod:`agy_host.api._callbacks`: on asyncio's loop under asyncio, in the
runtime's task under trio), sync or async, each call bounded by
``turn.permission_timeout_seconds`` and cancelled past it.

* ``before_tool(call)`` is the tool gate's program step
  (:mod:`agy_host.runtime.tool_gate`): :func:`before_tool` makes it a
  verdict. ``True`` allows, ``False`` or a reason (str) denies, ``None``
  leaves the call to the policy, a dict allows it with that input. Anything
  else, an exception or no answer in time is a denial that names the
  callback (fail closed: a broken hook never lets a tool through).
* ``after_tool(card)`` sees each tool card once, when it is finished (done,
  failed or denied), and ``on_turn_end(result)`` each turn's result, after
  the turn's cards. :class:`Observers` calls them from the turn's own task,
  in order, while the turn goes on; the turn's result is given back once
  they returned. What they return is ignored; one that raises or runs past
  the bound is said on the ``agy_host`` logger, naming it, and the turn is
  not affected.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import msgspec

from agy_host.api._callbacks import failed, label
from agy_host.contract.tool_calls import ToolCall, ToolVerdict

if TYPE_CHECKING:
    import trio

    from agy_host.api._callbacks import ProgramLoop
    from agy_host.contract.events import HostEvent, ToolCard
    from agy_host.contract.turn_result import TurnResult

log = logging.getLogger("agy_host")

#: What ``before_tool`` may return, for the error that names another type.
BEFORE_RETURNS = "True, False, None, a reason (str) or a dict (the new input)"
#: The statuses of a finished tool card (``after_tool`` sees each card once, in one of them).
FINISHED = ("done", "failed", "denied")


class BeforeTool:
    """The program's ``before_tool`` as the tool gate's step (see the module docstring)."""

    def __init__(self, callback: Callable[[ToolCall], Any], program: ProgramLoop) -> None:
        self.callback = callback
        self.program = program
        #: How a reason names it (``the before_tool callback check()``).
        self.label = label("before_tool", callback)

    async def __call__(self, call: ToolCall) -> ToolVerdict:
        who = self.label

        def deny(reason: str) -> ToolVerdict:
            return ToolVerdict(allow=False, by="before_tool", reason=reason)

        try:
            given = await self.program.call(lambda: self.callback(call))
        except Exception as exc:
            return deny(f"{failed(who, exc)}; refused")
        if given is None:
            return ToolVerdict()
        if given is True:
            return ToolVerdict(allow=True, by="before_tool", reason=f"allowed by {who}")
        if given is False:
            return deny(f"denied by {who}")
        if isinstance(given, str):
            return deny(f"denied by {who}: {given}")
        if isinstance(given, dict):
            try:
                new = msgspec.json.decode(msgspec.json.encode(given))
            except (TypeError, msgspec.EncodeError) as exc:
                return deny(f"{who} returned an input that is not JSON ({exc}); refused")
            return ToolVerdict(allow=True, by="before_tool", reason=f"input rewritten by {who}", input=new)
        return deny(f"{who} returned {type(given).__name__}, not {BEFORE_RETURNS}; refused")


class Observers:
    """``after_tool`` and ``on_turn_end`` around one session's turns (see the
    module docstring). :meth:`saw` is the session's event sink's share;
    :meth:`around` runs a turn with them."""

    def __init__(
        self,
        after_tool: Callable[[ToolCard], Any] | None,
        on_turn_end: Callable[[TurnResult], Any] | None,
        program: ProgramLoop,
        bound_s: Callable[[], float],
    ) -> None:
        self.after_tool = after_tool
        self.on_turn_end = on_turn_end
        self.program = program
        self.bound_s = bound_s
        self._cards: trio.MemorySendChannel[ToolCard] | None = None
        self._finished: set[str] = set()

    def saw(self, event: HostEvent) -> None:
        """A turn's event: a tool card finished for the first time goes to ``after_tool``."""
        from agy_host.contract.events import ToolCard

        cards = self._cards
        if cards is None or not isinstance(event, ToolCard) or event.status not in FINISHED:
            return
        if event.call_id in self._finished:
            return
        self._finished.add(event.call_id)
        cards.send_nowait(event)

    async def around(self, turn: Callable[[], Awaitable[TurnResult | None]]) -> TurnResult | None:
        """``turn()``, with ``after_tool`` called for its cards as they finish
        and ``on_turn_end`` with its result, before the result is given back."""
        if self.after_tool is None and self.on_turn_end is None:
            return await turn()
        import trio

        self._finished = set()
        send, receive = trio.open_memory_channel["ToolCard"](math.inf)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._each_card, receive)
            self._cards = send if self.after_tool is not None else None
            try:
                result = await turn()
            finally:
                self._cards = None
                send.close()
        if result is not None and self.on_turn_end is not None:
            await self._call("on_turn_end", self.on_turn_end, result)
        return result

    async def _each_card(self, cards: trio.MemoryReceiveChannel[ToolCard]) -> None:
        async with cards:
            async for card in cards:
                if self.after_tool is not None:
                    await self._call("after_tool", self.after_tool, card)

    async def _call(self, option: str, callback: Callable[[Any], Any], value: object) -> None:
        import trio

        who = label(option, callback)
        bound = self.bound_s()
        try:
            with trio.move_on_after(bound) as scope:
                await self.program.call(lambda: callback(value))
        except Exception as exc:
            log.warning("agy-host: %s", failed(who, exc))
            return
        if scope.cancelled_caught:
            log.warning("agy-host: %s did not return within %gs; cancelled", who, bound)


def checked_callable(option: str, given: object) -> Callable[..., Any] | None:
    """``given`` when it is callable (or ``None``), else the usage error's message."""
    from agy_host.api.errors import UsageError

    if given is not None and not callable(given):
        raise UsageError(f"{option} is not callable")
    return given


def patterns(option: str, given: object) -> list[str]:
    """``allowed_tools=``/``disallowed_tools=``: a list of patterns (one str is one pattern)."""
    from agy_host.api.errors import UsageError

    if given is None:
        return []
    if isinstance(given, str):
        return [given]
    if isinstance(given, list | tuple | set | frozenset) and all(isinstance(p, str) for p in given):
        return list(given)
    raise UsageError(f"{option} must be a list of tool patterns (str), not {type(given).__name__}")


__all__ = ["BEFORE_RETURNS", "FINISHED", "BeforeTool", "Observers", "checked_callable", "patterns"]
