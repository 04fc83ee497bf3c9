"""The host's tool gate: the tool lists and a program's ``before_tool``,
before the permission policy (docs/permissions.md, "Tool lists";
docs/python.md, "Hooks").

Every tool call agy-host sees before it runs (:class:`ToolCall`: a permission
request, a host tool, a harness step) is checked here, in this order:

1. ``disallowed_tools``: a matching pattern denies it, whatever else says;
2. the program's ``before_tool`` (when it has one): ``False`` or a reason
   denies, ``True`` allows, a dict allows with that input (where the call
   can take one), ``None`` goes on;
3. ``allowed_tools``: a matching pattern allows it;
4. otherwise the permission policy decides (a permission request), or the
   call runs (a host tool, a harness step: nothing asked about them before).

A tool whose name or kind is too long for the lists to match
(:meth:`~agy_host.service.tool_lists.ToolLists.unmatchable`) is allowed by
no list, and refused outright where ``disallowed_tools`` has patterns (one
might have named it).

The program's hook is bounded by ``turn.permission_timeout_seconds`` and
always answered: one that runs past it, raises or returns another type is a
denial naming it (fail closed), never an allow.

One call is checked once: the harness asks about a step through its
pre-tool hook and then, for a tool that needs permission, through its policy;
the second question takes the first verdict (:attr:`ToolGate.seen`, by
session and call id), so ``before_tool`` is called once per call.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import msgspec

from agy_host.contract.events import Notice
from agy_host.contract.permissions import PermissionDecision, choose_allow, choose_reject
from agy_host.contract.rendering import clip_quoted
from agy_host.contract.tool_calls import ToolCall, ToolVerdict
from agy_host.contract.tools import ToolResult
from agy_host.service.tool_lists import ALLOWED, DISALLOWED, ToolLists

if TYPE_CHECKING:
    from agy_host.contract.events import ToolUseRequested
    from agy_host.contract.permissions import PermissionRequest
    from agy_host.runtime.turn_layer import TurnLayer

#: The program's hook: a call in, a verdict out (``allow=None``: go on).
BeforeTool = Callable[[ToolCall], Awaitable[ToolVerdict]]
#: Verdicts kept for a second question about the same call.
SEEN_MAX = 256


class ToolGate:
    """The lists (``lists()``, asked per call: a command may set them after the
    host was built) and the program's hook, bounded by ``bound_s()``."""

    def __init__(
        self, lists: Callable[[], ToolLists], before: Callable[[], BeforeTool | None], bound_s: Callable[[], float]
    ) -> None:
        self._lists = lists
        self._before = before
        self._bound_s = bound_s
        self.seen: OrderedDict[tuple[str, str], ToolVerdict] = OrderedDict()

    @property
    def active(self) -> bool:
        return self._lists().active or self._before() is not None

    def listed(self, name: str, kind: str) -> bool | None:
        return self._lists().listed(name, kind)

    async def check(self, call: ToolCall) -> ToolVerdict:
        """The verdict (see the module docstring); never raises, never waits
        past the bound (except trio's own cancellation of the caller)."""
        key = (call.session, call.call_id)
        if call.call_id and key in self.seen:
            return self.seen[key]
        verdict = await self._decide(call)
        if call.call_id:
            self.seen[key] = verdict
            while len(self.seen) > SEEN_MAX:
                self.seen.popitem(last=False)
        return verdict

    async def _decide(self, call: ToolCall) -> ToolVerdict:
        lists = self._lists()
        too_long = lists.unmatchable(call.name, call.kind)
        if too_long is not None and lists.disallowed:
            why = f"{clip_quoted(call.name)} refused: {too_long}, and a {DISALLOWED} pattern might name it"
            return ToolVerdict(allow=False, reason=why, by=DISALLOWED)
        found = None if too_long is not None else lists.match(call.name, call.kind)
        if found is not None and found.list == DISALLOWED:
            return ToolVerdict(allow=False, reason=found.reason(call.name, call.kind), by=DISALLOWED)
        before = self._before()
        if before is not None:
            verdict = await self._ask(before, call)
            if verdict.allow is not None:
                return verdict
        if found is not None and found.list == ALLOWED:
            return ToolVerdict(allow=True, reason=found.reason(call.name, call.kind), by=ALLOWED)
        return ToolVerdict()

    async def _ask(self, before: BeforeTool, call: ToolCall) -> ToolVerdict:
        import trio

        from agy_host.engine.timers import minutes

        bound = self._bound_s()
        who = str(getattr(before, "label", "before_tool"))
        try:
            with trio.move_on_after(bound) as scope:
                verdict = await before(call)
        except Exception as exc:  # the API's wrapper answers for the program's failures; this is a last guard
            return ToolVerdict(
                allow=False, by="before_tool", reason=f"{who} failed ({type(exc).__name__}: {exc}); refused"
            )
        if scope.cancelled_caught:
            return ToolVerdict(
                allow=False, by="before_tool", reason=f"{who} gave no answer within {minutes(bound)}; refused"
            )
        if verdict.input is not None and verdict.input != call.input and not call.rewritable:
            return ToolVerdict(
                allow=False,
                by="before_tool",
                reason=f"{who} returned a new input for {call.name!r}, which cannot be rewritten here "
                f"(an agent's permission request: the agent runs its tool with its own input); refused",
            )
        if verdict.input == call.input:
            verdict = msgspec.structs.replace(verdict, input=None)
        return verdict

    async def permission(self, request: PermissionRequest) -> PermissionDecision | None:
        """The gate's answer to a permission request (the option it allows or
        rejects), or ``None`` to leave it to the policy. Questions are not
        tool calls: they pass."""
        if request.is_question:
            return None
        verdict = await self.check(permission_call(request))
        if verdict.allow is None:
            return None
        option = choose_allow(request.options) if verdict.allow else choose_reject(request.options)
        return PermissionDecision(
            option_id=option.option_id if option is not None else None, policy=verdict.by, reason=verdict.reason
        )


def permission_call(request: PermissionRequest) -> ToolCall:
    """A permission request as the gate sees it. Its name is the agent's
    tool name, or its title when the engine knew no name but the call's kind
    (the Gemini CLI's ``add (agy-host-bridge MCP Server)``): a list must be
    able to name the call, and a kind is matched with ``kind:`` already."""
    named = request.tool_name if request.tool_name and request.tool_name != request.tool_kind else ""
    return ToolCall(
        name=named or request.title or request.tool_name,
        kind=request.tool_kind,
        title=request.title,
        input=dict(request.args),
        origin="permission",
        session=request.session,
        call_id=request.call_id,
    )


async def check_host_tool(
    layer: TurnLayer, session: str, request: ToolUseRequested
) -> tuple[ToolUseRequested, ToolResult | None]:
    """A host tool call through the gate: the call to run (its input
    rewritten when the program's hook said so), or the error result the
    agent gets for a refused one (a ``tool-denied`` notice says so)."""
    gate = layer.engine.ctx.tool_gate
    if not gate.active:
        return request, None
    call = ToolCall(
        name=request.name,
        kind="other",
        title=request.name,
        input=dict(request.args),
        origin="host_tool",
        session=session,
        call_id=request.call_id,
        rewritable=True,
    )
    verdict = await gate.check(call)
    if verdict.allow is False:
        why = verdict.reason or "refused"
        layer.emit(Notice(level="warning", message=f"host tool {request.name!r} refused: {why}", code="tool-denied"))
        return request, ToolResult(text=f"host tool {request.name!r} was refused by agy-host: {why}", is_error=True)
    if verdict.input is not None:
        return msgspec.structs.replace(request, args=verdict.input), None
    return request, None


__all__ = ["SEEN_MAX", "BeforeTool", "ToolGate", "check_host_tool", "permission_call"]
