"""An "always" answer stays with the command that gave it.

A command's broker remembers its "always" answers for that command only
(:mod:`agy_host.service.remembered`): the next request of the same tool is
answered at once, and the next command asks again. A cold agent ends with
the command, so whatever it remembered itself ends too. A warm agent
outlives the command: an agent that keeps an ``allow_always`` answer would
carry it into the next command, whose person never gave it. The Gemini CLI
does more: "Allow for this session" on an edit switches it to ``autoEdit``,
so the next command's edits would run without asking.

So the keeper sends the agent the same answer for this call only (the
``*_once`` option of the family), and the permission card says so. An
agent that offers no one-time option of that family gets the ``always``
one, and the keeper does not keep that agent warm for another command
(:meth:`agy_host.keeper.warm.WarmSession.keeps_always`).
"""

from __future__ import annotations

from agy_host.contract.permissions import PermissionDecision, PermissionRequest, first_of_kind
from agy_host.service.remembered import ALWAYS_KINDS


def for_warm_agent(request: PermissionRequest, decision: PermissionDecision) -> tuple[PermissionDecision, bool]:
    """What the warm agent is sent for ``decision``, and whether the agent
    keeps an "always" answer anyway (it offered no one-time option)."""
    if decision.option_id is None or request.is_question:
        return decision, False
    chosen = next((o for o in request.options if o.option_id == decision.option_id), None)
    family = ALWAYS_KINDS.get(chosen.kind) if chosen is not None else None
    if chosen is None or family is None:
        return decision, False
    once = first_of_kind(request.options, f"{family}_once")
    if once is None:
        return decision, True
    said = f"{decision.reason}; " if decision.reason else ""
    reason = (
        f"{said}{chosen.name or chosen.option_id!r} sent to the warm agent as {once.name or once.option_id!r}: "
        "the agent outlives this command; agy-host remembers the answer until the command ends"
    )
    return PermissionDecision(option_id=once.option_id, policy=decision.policy, reason=reason), False


__all__ = ["for_warm_agent"]
