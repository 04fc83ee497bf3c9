"""Built-in permission policies: ``auto`` (the parity default) and ``deny``.

Both choose by option *kind* and answer with the agent's exact ``optionId``.
Neither ever picks an answer to a question (an ``interaction_`` request): a
question is the agent asking the human, and an automatic answer would be a
silent lie. Without an interactive policy the question is cancelled, which
the agent reports back as "no answer".
"""

from __future__ import annotations

from collections.abc import Callable

from agy_host import hookimpl
from agy_host.contract.permissions import (
    PermissionDecision,
    PermissionPolicy,
    PermissionRequest,
    choose_allow,
    choose_reject,
)


class AutoPolicy:
    """Allow once, by kind. What the original shipped (``auto``)."""

    name = "auto"

    async def decide(self, request: PermissionRequest) -> PermissionDecision:
        if request.is_question:
            return PermissionDecision(
                option_id=None, policy=self.name, reason="a question needs a person; no interactive policy selected"
            )
        opt = choose_allow(request.options)
        if opt is None:
            return PermissionDecision(option_id=None, policy=self.name, reason="no allow option offered")
        return PermissionDecision(option_id=opt.option_id, policy=self.name, reason=opt.kind)


class DenyPolicy:
    """Reject every request (read-only review runs)."""

    name = "deny"

    async def decide(self, request: PermissionRequest) -> PermissionDecision:
        opt = choose_reject(request.options)
        if opt is None:
            return PermissionDecision(option_id=None, policy=self.name, reason="no reject option offered")
        return PermissionDecision(option_id=opt.option_id, policy=self.name, reason=opt.kind)


@hookimpl
def agy_host_register_permission_policies(register: Callable[[PermissionPolicy], None]) -> None:
    register(AutoPolicy())
    register(DenyPolicy())
