"""The ``rules`` permission policy: config rules decide, deny wins.

``[[permissions.rules]]`` entries match a request by tool kind, title and
tool name (globs, case-insensitive, compiled when the rules load, within
the bounds of :mod:`agy_host.service.globs`) and say ``allow``, ``deny``
or ``ask``.
Every rule is checked; when several match, ``deny`` wins over ``ask`` and
``ask`` over ``allow``, so adding a broad ``allow`` can never undo a narrow
``deny`` written above or below it (the datasette rule: deny wins, and every
decision names its reason). No match: ``permissions.rules_default``.

``ask`` is the :class:`~agy_host.builtins.permission_ask.AskPolicy` with the
same configuration (terminal, or its fallback). Questions (``interaction_``
requests) are never answered by a rule: ``deny`` cancels them, anything
else asks the person.

A request whose title, kind or tool name is longer than rules are matched
against (:data:`~agy_host.service.globs.MAX_MATCHED_CHARS`) is decided by no
rule: the person at the terminal decides, and without one it is refused,
whatever ``ask_fallback`` says (a deny rule it might have matched must not
be slipped past by padding; the reason names the cap).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from agy_host import hookimpl
from agy_host.builtins.permission_ask import AskPolicy
from agy_host.contract.permissions import (
    PermissionDecision,
    PermissionPolicy,
    PermissionRequest,
    choose_allow,
    choose_reject,
)
from agy_host.service.globs import (
    PERMISSION_FIELDS,
    GlobError,
    Steps,
    check_rules,
    finish,
    glob_match,
    globs,
    paced,
    unmatchable,
)

if TYPE_CHECKING:
    from agy_host.config import Config, PermissionRule
    from agy_host.service.unattended import Front

Action = Literal["allow", "deny", "ask"]
_STRENGTH: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}


def check_permission_rules(rules: Sequence[PermissionRule], where: str = "[[permissions.rules]]") -> None:
    """Raise :class:`~agy_host.service.globs.GlobError` for a list outside the
    bounds (:mod:`agy_host.service.globs`); its globs are compiled once it passes."""
    check_rules(rules, PERMISSION_FIELDS, where)


def rule_matches(rule: PermissionRule, request: PermissionRequest) -> bool:
    return (
        glob_match(rule.kind, request.tool_kind)
        and glob_match(rule.title, request.title)
        and glob_match(rule.name, request.tool_name)
    )


def describe_rule(index: int, rule: PermissionRule) -> str:
    parts = [f"{field}={globs(value)!r}" for field in ("kind", "title", "name") if (value := getattr(rule, field))]
    return f"rule {index} ({', '.join(parts) or 'any request'}): {rule.action}"


def evaluate_steps(
    rules: Sequence[PermissionRule], request: PermissionRequest, default: Action
) -> Steps[tuple[Action, str]]:
    """The winning action and why (deny > ask > allow; ``default`` if none match);
    it pauses (yields) after every rule, for :func:`~agy_host.service.globs.paced`."""
    best: tuple[Action, str] | None = None
    for index, rule in enumerate(rules, 1):
        yield
        if not rule_matches(rule, request):
            continue
        if best is None or _STRENGTH[rule.action] > _STRENGTH[best[0]]:
            best = (rule.action, describe_rule(index, rule))
    if best is None:
        return default, f"no rule matched; rules_default is {default}"
    return best


def evaluate(rules: Sequence[PermissionRule], request: PermissionRequest, default: Action) -> tuple[Action, str]:
    """:func:`evaluate_steps` run at once."""
    return finish(evaluate_steps(rules, request, default))


class RulesPolicy:
    """Config rules; see the module docstring."""

    name = "rules"
    #: It shows a question with the agent's own answers itself (the broker leaves it the asking).
    asks_person = True

    def __init__(self) -> None:
        self.rules: list[PermissionRule] = []
        self.default: Action = "ask"
        self.ask = AskPolicy()

    def configure(self, config: Config, env: Mapping[str, str]) -> None:
        """Take the config's rules, compiled now. Rules outside the bounds
        (which the commands refuse before they start) deny everything here."""
        from agy_host.config import DENY_ALL_RULES

        self.default = config.permissions.rules_default
        self.ask.configure(config, env)
        try:
            check_permission_rules(config.permissions.rules)
        except GlobError:
            self.rules = list(DENY_ALL_RULES)
            raise
        self.rules = list(config.permissions.rules)

    def check_ready(self) -> str | None:
        return self.ask.check_ready() if self.default == "ask" or any(r.action == "ask" for r in self.rules) else None

    def set_asking(self, front: Front, by_default: bool) -> None:
        """Who asks for the agent, for the ``ask`` its rules send to (chosen, never the default)."""
        self.ask.set_asking(front, False)

    async def decide(self, request: PermissionRequest) -> PermissionDecision:
        too_long = unmatchable({"title": request.title, "kind": request.tool_kind, "name": request.tool_name})
        if too_long is not None:
            return await self._by_a_person(request, too_long)
        action, why = await paced(evaluate_steps(self.rules, request, self.default))
        if request.is_question:
            if action == "deny":
                return PermissionDecision(option_id=None, policy=self.name, reason=f"{why}; the question is cancelled")
            action = "ask"  # only a person answers a question
        if action == "ask":
            decision = await self.ask.decide(request)
            return PermissionDecision(
                option_id=decision.option_id, policy=self.name, reason=f"{why}; {decision.reason}"
            )
        pick = choose_allow if action == "allow" else choose_reject
        opt = pick(request.options)
        if opt is None:
            return PermissionDecision(option_id=None, policy=self.name, reason=f"{why}; no {action} option offered")
        return PermissionDecision(option_id=opt.option_id, policy=self.name, reason=f"{why} ({opt.kind})")

    async def _by_a_person(self, request: PermissionRequest, why: str) -> PermissionDecision:
        """A request no rule may decide: the person at the terminal, else
        refused (an ``ask_fallback`` of ``allow`` is not used: it would allow
        what a deny rule might have refused)."""
        strict = copy.copy(self.ask)
        if strict.fallback == "allow":
            strict.fallback = "deny"
        decision = await strict.decide(request)
        return PermissionDecision(option_id=decision.option_id, policy=self.name, reason=f"{why}; {decision.reason}")


@hookimpl
def agy_host_register_permission_policies(register: Callable[[PermissionPolicy], None]) -> None:
    register(RulesPolicy())


__all__ = [
    "RulesPolicy",
    "check_permission_rules",
    "describe_rule",
    "evaluate",
    "evaluate_steps",
    "glob_match",
    "rule_matches",
]
