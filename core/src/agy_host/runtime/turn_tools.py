"""A parked turn's host tool: run it, hand its result back, read on.

A host tool call ends a pass of :meth:`~agy_host.runtime.turn_layer.TurnLayer.run_turn`
with stop reason ``tool_use``. :func:`resolve_tool_use` runs that tool,
hands its result to the first sink that knows the call (the round-trips for
the bridge's calls, the driver for calls it parked itself) and continues
the same agent turn. Split from the turn layer, which keeps the reading.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import trio

from agy_host.contract.events import Notice, QuestionAnswered, ToolUseRequested
from agy_host.contract.tools import HostTool, ToolResult
from agy_host.runtime.tool_gate import check_host_tool

if TYPE_CHECKING:
    from agy_host.contract.turn_result import ToolResultSink, TurnResult
    from agy_host.engine.driver import TurnHandle
    from agy_host.runtime.turn_layer import TurnLayer


async def resolve_tool_use(
    layer: TurnLayer, tools: Mapping[str, HostTool], sinks: Sequence[ToolResultSink]
) -> TurnResult:
    """Run the host tool the parked turn asked for, hand its result to the
    first sink that knows the call, and continue the turn.

    This is where host-side gating happens: the tool gate (the tool lists,
    a program's ``before_tool``) may refuse the call or rewrite its input
    (:func:`~agy_host.runtime.tool_gate.check_host_tool`), a tool may refuse
    by returning an error result, and a tool that raises answers the agent
    with one (the agent decides what to do with it). An abort of the turn cancels
    the tool; nothing is delivered then. A bridge call's tool runs in the
    round-trips (:meth:`~agy_host.service.roundtrips.RoundTrips.run_tool`):
    when its park ends first (its TTL, the agent hanging up) the turn is
    continued at once, without the tool, whose result comes later as a late
    result. When no sink takes a result of a
    call the driver parked itself, that call cannot be answered, so the
    turn is aborted rather than left to hang until its park times out.
    """
    turn = layer._turn
    if turn is None or not turn.parked or turn.handle is None:
        return await layer.continue_turn()
    request = turn.handle_request
    assert request is not None
    tool = tools.get(request.name)
    owned = layer._owned(request.call_id)
    result: ToolResult | None
    refused: ToolResult | None = None
    if tool is not None:
        request, refused = await check_host_tool(layer, turn.session, request)
    if tool is None:
        result = ToolResult(text=f"host tool {request.name!r} is not available in this agy-host", is_error=True)
    elif refused is not None:
        result = refused
    elif owned and layer.roundtrips is not None:
        # A bridge call: its park may end before the tool does (TTL, hang-up).
        # Then the turn reads on and the tool's result comes late.
        ran = await layer.roundtrips.run_tool(
            request.call_id, request.name, turn.handle, functools.partial(call_tool, tool, request)
        )
        if ran == "detached":
            return await layer.continue_turn()
        result = None if ran == "aborted" else ran
    else:
        result = await run_tool(tool, request, turn.handle)
    if result is not None and result.unanswered_question:
        turn.unanswered.append(result.unanswered_question)
        layer.emit(
            QuestionAnswered(
                kind="text",
                message=result.unanswered_question,
                action="cancel",
                by="host",
                reason=result.text,
                unanswered=True,
            )
        )
    if result is None:  # the turn was aborted while the tool ran
        if owned and layer.roundtrips is not None:
            layer.roundtrips.discard(request.call_id)
        return await layer.continue_turn()
    delivered = False
    for sink in sinks:
        try:
            delivered = sink.deliver_tool_result(request.call_id, result)
        except Exception as exc:
            layer._warn(f"delivering the result of {request.name!r} failed: {type(exc).__name__}: {exc}")
        if delivered:
            break
    if not delivered and owned:
        # The park already answered the agent (with an error) and unparked.
        layer.emit(Notice(level="warning", message=f"the result of host tool {request.name!r} was dropped"))
    elif not delivered:
        layer.emit(
            Notice(
                level="error",
                message=f"the result of host tool {request.name!r} could not be delivered to the agent; "
                "aborting the turn",
            )
        )
        turn.handle.abort("host tool result could not be delivered")
    return await layer.continue_turn()


async def call_tool(tool: HostTool, request: ToolUseRequested) -> ToolResult:
    """The tool's answer to ``request``: a tool that raises answers with an
    error result, a value that is not a result becomes its text."""
    try:
        value: object = await tool.call(dict(request.args))
    except Exception as exc:
        return ToolResult(text=f"host tool {request.name!r} failed: {type(exc).__name__}: {exc}", is_error=True)
    return value if isinstance(value, ToolResult) else ToolResult(text=str(value))


async def run_tool(tool: HostTool, request: ToolUseRequested, handle: TurnHandle) -> ToolResult | None:
    """The result of a tool whose call the driver parked itself (no TTL: it
    is waited for); ``None`` when the turn was aborted meanwhile."""
    result: ToolResult | None = None
    async with trio.open_nursery() as nursery:

        async def cancel_on_abort() -> None:
            await handle.abort_requested.wait()
            nursery.cancel_scope.cancel()

        nursery.start_soon(cancel_on_abort)
        result = await call_tool(tool, request)
        nursery.cancel_scope.cancel()
    return result


__all__ = ["call_tool", "resolve_tool_use", "run_tool"]
