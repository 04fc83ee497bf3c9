"""Permission requests, decisions and the policy protocol.

An agent asks before it runs a tool; a *policy* answers. Policies are objects
registered through ``agy_host_register_permission_policies``; the engine calls
the selected one for every request and sends its answer back on the wire. The
contract every policy must keep: **always answer, never hang**. The engine
enforces it with a deadline (``permission_timeout_s``) and falls back to
cancelling the request.

Options are chosen by their *kind* (``allow_once``, ``reject_once``, ...) and
answered with the agent's exact ``optionId``: builds of the same agent disagree
on ids and on how many options they offer.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import msgspec

from agy_host.contract.events import FileDiff, PermissionOption


class PermissionRequest(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What the agent asked, in host terms."""

    session: str
    call_id: str
    title: str
    options: list[PermissionOption]
    tool_kind: str = "other"
    tool_name: str = ""
    args: dict[str, Any] = msgspec.field(default_factory=dict)
    diff: FileDiff | None = None
    #: Antigravity asks questions as permission requests whose tool call id
    #: starts with ``interaction_``; every option is then an answer, all of kind
    #: ``allow_once``. A policy must not silently pick an answer.
    is_question: bool = False
    #: The engine's skip-permissions setting for this turn.
    skip_permissions: bool = False
    #: Who asks within the session, when the agent says (``subagent 3f2c…``):
    #: shown to the person, so a sub-agent's prompt is not taken for the main one.
    origin: str = ""


class PermissionDecision(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A policy's answer. ``option_id=None`` means *cancelled*."""

    option_id: str | None
    policy: str
    reason: str = ""


@runtime_checkable
class PermissionPolicy(Protocol):
    """A named permission policy. ``decide`` may await (an interactive policy
    asks the human) but must return; the engine bounds it with a deadline.

    A policy that asks the person itself may set ``asks_person = True``: the
    broker then hands it Antigravity's questions (``interaction_`` requests)
    that no answer rule or program answered. Every other policy never sees a
    question: the broker asks it at the terminal, as it asks every question."""

    name: str

    async def decide(self, request: PermissionRequest) -> PermissionDecision: ...


def is_question(call_id: str) -> bool:
    """True for Antigravity's question-as-permission requests."""
    return call_id.startswith("interaction_")


def first_of_kind(options: list[PermissionOption], prefix: str) -> PermissionOption | None:
    """The first option whose kind starts with ``prefix`` (``allow`` / ``reject``)."""
    for opt in options:
        if opt.kind.startswith(prefix):
            return opt
    return None


def choose_allow(options: list[PermissionOption]) -> PermissionOption | None:
    """Allow once if offered, else any allow, else nothing.

    ``allow_once`` wins over ``allow_always`` so an automatic policy never
    grants more than the one call it was asked about.
    """
    for opt in options:
        if opt.kind == "allow_once":
            return opt
    return first_of_kind(options, "allow")


def choose_reject(options: list[PermissionOption]) -> PermissionOption | None:
    for opt in options:
        if opt.kind == "reject_once":
            return opt
    return first_of_kind(options, "reject")


__all__ = [
    "PermissionDecision",
    "PermissionPolicy",
    "PermissionRequest",
    "choose_allow",
    "choose_reject",
    "first_of_kind",
    "is_question",
]
