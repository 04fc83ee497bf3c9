"""What the agent reads about host tool round-trips: the early acknowledgement
of a slow call, the answers of the poll tool, and the late-delivery prompt.

Kept apart from :mod:`agy_host.service.roundtrips` (the state machine) because these
are wording the agent acts on: each text says plainly what happened and what
to do next, and names the call id so the agent can poll for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agy_host.contract.prompt import ImageBlock
from agy_host.contract.tools import ToolResult

if TYPE_CHECKING:
    from agy_host.service.roundtrips import LateResult

#: The bridge tool an agent calls to fetch the result of an escalated call.
POLL_TOOL = "bridge_poll_result"

POLL_DESCRIPTION = (
    "Fetch the result of a host tool call that answered STILL RUNNING. Pass the callId from that answer; "
    "while the tool is still running this answers STILL RUNNING again, so poll again a little later."
)

LATE_HEADER = (
    "[Late tool delivery] The host tool results below arrived after the round-trip of their call had "
    "already ended. Treat each one as the result of the earlier call it names."
)


def seconds(value: float) -> str:
    """``480s`` / ``30m`` as the messages say it."""
    if value >= 60 and value % 60 == 0:
        return f"{int(value // 60)}m"
    return f"{value:g}s"


def escalated_ack(name: str, call_id: str) -> str:
    """The answer to a call that is still running after the escalation delay."""
    return (
        f"STILL RUNNING: the host tool `{name}` has not finished yet (callId {call_id}). This is not an error. "
        f'Call `{POLL_TOOL}` with {{"callId": "{call_id}"}} to get its result, and poll again while it answers '
        "STILL RUNNING. If you stop polling, the result is delivered to you later as a late tool delivery."
    )


def poll_unknown(call_id: str) -> ToolResult:
    return ToolResult(
        text=f"Error: there is no escalated host tool call with callId {call_id or '(none given)'}: either it "
        "finished quickly (its result was in the original answer) or the id is wrong.",
        is_error=True,
    )


def poll_running(name: str, call_id: str) -> ToolResult:
    return ToolResult(
        text=f"STILL RUNNING: the host tool `{name}` (callId {call_id}) is still running; poll again later."
    )


def poll_failed(name: str, call_id: str, reason: str) -> ToolResult:
    return ToolResult(text=f'Error: bridge call "{name}" (callId {call_id}) failed: {reason}', is_error=True)


def poll_done(result: ToolResult) -> ToolResult:
    return ToolResult(text=result.text or "(no output)", images=list(result.images), is_error=result.is_error)


def late_result_prompt(late: Sequence[LateResult], user_text: str = "") -> str:
    """The text of a fresh turn that carries results whose park had died;
    the user's own prompt, if any, comes last."""
    blocks = [LATE_HEADER]
    for item in late:
        lines = [
            f"Tool `{item.name}` (callId {item.call_id}): the round-trip expired before the result arrived "
            f"({item.reason})."
        ]
        lines.append("The tool reported an error:" if item.result.is_error else "Result:")
        lines.append(item.result.text or "(no output)")
        if item.result.images:
            lines.append(f"({len(item.result.images)} image(s) attached to this message)")
        blocks.append("\n".join(lines))
    if user_text:
        blocks.append(user_text)
    return "\n\n".join(blocks)


def late_result_images(late: Sequence[LateResult]) -> list[ImageBlock]:
    return [ImageBlock(data=data, mime_type=mime) for item in late for data, mime in item.result.images]


__all__ = [
    "LATE_HEADER",
    "POLL_DESCRIPTION",
    "POLL_TOOL",
    "escalated_ack",
    "late_result_images",
    "late_result_prompt",
    "poll_done",
    "poll_failed",
    "poll_running",
    "poll_unknown",
    "seconds",
]
