"""Why a turn's exit code is 5, in the words of the closing line.

A turn whose every permission request was refused exits 5 with no error:
the person (or a policy) chose so deliberately, and that is no failure of
the agent. Yet a closing line that only says ``done`` leaves the exit code
unexplained. Both renderers keep the refused requests of the turn they draw
and, when the turn ends with exit 5, name them (or the unanswered question
the turn's error already names) on one line.

The decision label (``auto: allow_once``) is shared too: a policy whose
reason repeats its own name must not read ``auto: auto: allow_once``.
"""

from __future__ import annotations

from agy_host.contract.events import HostEvent, PermissionAnswered, TurnEnded, TurnStarted
from agy_host.contract.rendering import SHOWN_LONG_CHARS, clip, clip_quoted
from agy_host.exit_codes import ExitCode

#: Refused requests named on the closing line; the rest are counted.
NAMED = 3


def decided_by(policy: str, reason: str) -> str:
    """``policy: reason`` as the renderers show who decided and why, never
    saying the policy twice (a reason that starts with its policy's name),
    clipped (:func:`~agy_host.contract.rendering.clip`: a reason may quote the agent)."""
    if not reason:
        return policy
    if policy and reason.startswith(f"{policy}: "):
        reason = reason[len(policy) + 2 :]
    return clip(f"{policy}: {reason}" if policy else reason, SHOWN_LONG_CHARS)


def is_refused(event: PermissionAnswered) -> bool:
    """Cancelled, or answered with a reject option (the turn layer's count)."""
    if event.selected is None:
        return True
    return any(o.option_id == event.selected and o.kind.startswith("reject") for o in event.options)


class Refusals:
    """The refused requests of the turn being drawn, for its closing line."""

    def __init__(self) -> None:
        #: What each refused request was (``permission 'TITLE'``), and who refused it why.
        self._refused: list[tuple[str, str]] = []
        #: :meth:`why_exit` of the last turn :meth:`see` saw end.
        self.last_why = ""

    def see(self, event: HostEvent) -> None:
        """Follow a turn's events (for a command that draws none: ``ask``)."""
        if isinstance(event, TurnStarted):
            self.start()
        elif isinstance(event, PermissionAnswered):
            self.note(event)
        elif isinstance(event, TurnEnded):
            self.last_why = self.why_exit(event)

    def start(self) -> None:
        self._refused = []

    def note(self, event: PermissionAnswered) -> None:
        if is_refused(event):
            what = "question" if event.is_question else "permission"
            self._refused.append((f"{what} {clip_quoted(event.title)}", decided_by(event.policy, event.reason)))

    def why_exit(self, ended: TurnEnded) -> str:
        """What was refused or left unanswered, when the turn exits 5 (the
        renderers put ``exit 5`` before it); ``""`` otherwise."""
        if ended.exit_code != ExitCode.PERMISSION_DENIED:
            return ""
        if ended.error:
            return clip(ended.error, SHOWN_LONG_CHARS)
        if len(self._refused) == 1:
            [(what, why)] = self._refused
            return f"{what} was refused ({why})"
        named = "; ".join(f"{what} ({why})" for what, why in self._refused[:NAMED])
        more = len(self._refused) - NAMED
        if more > 0:
            named += f"; and {more} more"
        if named:
            return f"every request of the agent was refused: {named}"
        return "every permission request of the agent was refused"


__all__ = ["NAMED", "Refusals", "decided_by", "is_refused"]
