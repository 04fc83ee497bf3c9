"""What to tell the person when an agent withdraws a request it sent.

An agent cancels its own ``session/request_permission`` or
``elicitation/create`` with ``$/cancel_request`` when its turn is cancelled
or it stops waiting; the prompt at the terminal then goes away, and without a
line saying why, it looks as if agy-host lost the question.
"""

from __future__ import annotations

import msgspec


def withdrawn_notice(method: str, params: msgspec.Raw) -> tuple[str | None, str]:
    """The session the withdrawn request belonged to (when it says), and the
    notice naming what was withdrawn (by its title when it has one)."""
    try:
        decoded = msgspec.json.decode(params)
    except msgspec.DecodeError:
        decoded = {}
    found = decoded if isinstance(decoded, dict) else {}
    sid = found.get("sessionId") if isinstance(found.get("sessionId"), str) else None
    what = {"session/request_permission": "permission request", "elicitation/create": "question"}.get(
        method, f"{method} request"
    )
    tool = found.get("toolCall")
    title = found.get("message") or (tool.get("title") if isinstance(tool, dict) else None)
    named = f" ({title!r})" if isinstance(title, str) and title else ""
    return sid, f"the agent withdrew its {what}{named}; nothing was answered"


__all__ = ["withdrawn_notice"]
