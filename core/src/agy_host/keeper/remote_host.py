"""The keeper's :class:`~agy_host.runtime.host.Host`: its person is elsewhere.

Permission requests and questions go to the client attached for the turn of
the session that asks (its broker decides: its terminal, its rules, its
callbacks), and so does a tool call its program's ``before_tool`` must see;
the command's tool lists apply here, from its spec (the config's from the
keeper's own). An "always" answer is sent to the warm agent as a one-time
one (:mod:`agy_host.keeper.always`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agy_host.contract.interactions import Answer, Question
from agy_host.contract.permissions import PermissionDecision, PermissionRequest
from agy_host.contract.tool_calls import ToolCall, ToolVerdict
from agy_host.keeper import wire
from agy_host.keeper.always import for_warm_agent
from agy_host.keeper.relay import Relay
from agy_host.runtime.host import Host


class RemoteHost(Host):
    """A :class:`Host` whose person is elsewhere: permission requests and
    questions go to the client attached for the turn of the session that
    asks (``relay(session)``), and so does a tool call its program's
    ``before_tool`` must see (:meth:`asks_client`); the command's tool
    lists apply here, from its spec (the config's from the keeper's own)."""

    def __init__(self, relay: Callable[[str], Relay | None], spec: wire.HostSpec, **kw: Any) -> None:
        self._relay = relay
        #: Sessions whose agent keeps an "always" answer of a command (:mod:`agy_host.keeper.always`).
        self.kept_always: set[str] = set()
        super().__init__(**kw)
        self.allowed_tools = list(spec.allowed_tools)
        self.disallowed_tools = list(spec.disallowed_tools)
        if spec.before_tool:
            self.before_tool = self.asks_client

    async def asks_client(self, call: ToolCall) -> ToolVerdict:
        """The attached client's verdict (its tool gate, its program's
        ``before_tool``); nobody attached: refused."""
        relay = self._relay(call.session)
        if relay is None:
            return ToolVerdict(allow=False, by="keeper", reason="no command is attached; refused")
        return await relay.check_tool(call)

    async def decide_permission(self, request: PermissionRequest) -> PermissionDecision:
        relay = self._relay(request.session)
        if relay is None:
            return PermissionDecision(option_id=None, policy="keeper", reason="no command is attached; cancelled")
        decision, kept = for_warm_agent(request, await relay.ask_permission(request))
        if kept and request.session not in self.kept_always:
            self.kept_always.add(request.session)
            relay.warning(
                f"the agent offered no one-time answer, so it keeps this 'always' answer: session "
                f"{request.session!r} is not kept warm for another command (it ends after this one)"
            )
        return decision

    async def ask_question(self, question: Question) -> Answer:
        relay = self._relay(question.session)
        if relay is None:
            return Answer(action="cancel", by="keeper", reason="no command is attached", unanswered=True)
        return await relay.ask_question(question)


__all__ = ["RemoteHost"]
