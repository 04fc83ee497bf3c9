"""The ``rules`` policy: globs on kind, title and name; deny wins; the
default; questions; a rules list that does not validate denies everything."""

from __future__ import annotations

from typing import Any

import pytest

from agy_host import config
from agy_host.builtins.permission_rules import RulesPolicy, evaluate
from agy_host.config import Config, PermissionRule
from agy_host.contract.events import PermissionOption
from agy_host.contract.permissions import PermissionRequest
from agy_host.runtime.host import Host
from agy_host.service.unattended import chosen_policy

OPTIONS = [
    PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
    PermissionOption(option_id="deny", name="Deny", kind="reject_once"),
]


def request(
    kind: str = "edit", title: str = "Run client_create_file?", name: str = "client_create_file"
) -> PermissionRequest:
    return PermissionRequest(session="s", call_id="c1", title=title, options=OPTIONS, tool_kind=kind, tool_name=name)


def rules_policy(rules: list[dict[str, Any]], default: str = "ask", fallback: str = "deny") -> RulesPolicy:
    warnings: list[str] = []
    cfg = config.narrow(
        {"permissions": {"policy": "rules", "rules": rules, "rules_default": default, "ask_fallback": fallback}},
        warnings.append,
    )
    assert warnings == []
    policy = RulesPolicy()
    policy.configure(cfg, {"AGY_HOST_TTY": "none"})
    return policy


RULES = [
    {"kind": "read", "action": "allow"},
    {"kind": ["edit", "delete"], "name": "client_*", "action": "allow"},
    {"title": "*secrets*", "action": "deny"},
    {"kind": "execute", "action": "ask"},
]


@pytest.mark.parametrize(
    ("req", "expected"),
    [
        (request("read", "Read a.txt", "client_view_file"), "allow"),
        (request("edit"), "allow"),
        (request("EDIT", "run CLIENT_create_file", "Client_Write"), "allow"),  # globs are case-insensitive
        (request("edit", "Write ~/secrets.env"), "deny"),  # deny wins over the matching allow
        (request("execute", "Run ls"), "deny"),  # ask, without a terminal: the deny fallback
        (request("fetch", "Fetch a page", "read_url"), "deny"),  # no match: rules_default ask -> fallback
    ],
)
async def test_rules_decide(req: PermissionRequest, expected: str) -> None:
    decision = await rules_policy(RULES).decide(req)
    assert decision.option_id == expected
    assert decision.policy == "rules"


def test_reasons_name_the_rule() -> None:
    action, why = evaluate([PermissionRule(**r) for r in RULES], request("edit", "Write secrets"), "ask")
    assert action == "deny" and why.startswith("rule 3 (title=['*secrets*'])")
    action, why = evaluate([], request(), "allow")
    assert (action, why) == ("allow", "no rule matched; rules_default is allow")


async def test_the_default_applies_when_nothing_matches() -> None:
    assert (await rules_policy([], default="allow").decide(request())).option_id == "allow"
    assert (await rules_policy([], default="deny").decide(request())).option_id == "deny"


async def test_a_rule_without_match_fields_matches_everything() -> None:
    decision = await rules_policy([{"action": "allow"}, {"action": "deny", "kind": "execute"}]).decide(request())
    assert decision.option_id == "allow"
    decision = await rules_policy([{"action": "allow"}, {"action": "deny", "kind": "execute"}]).decide(
        request("execute")
    )
    assert decision.option_id == "deny"


async def test_rules_never_answer_a_question() -> None:
    question = PermissionRequest(
        session="s",
        call_id="interaction_1",
        title="Red or blue?",
        options=[PermissionOption(option_id="1", name="Red", kind="allow_once")],
        tool_kind="question",
        is_question=True,
    )
    allowed = await rules_policy([{"action": "allow"}], fallback="allow").decide(question)
    denied = await rules_policy([{"action": "deny"}]).decide(question)
    assert allowed.option_id is None and "a question needs a person" in allowed.reason
    assert denied.option_id is None and "the question is cancelled" in denied.reason


def test_a_rules_list_that_does_not_validate_denies_everything() -> None:
    warnings: list[str] = []
    cfg = config.narrow(
        {"permissions": {"rules": [{"kind": "read", "action": "allow"}, {"action": "maybe"}]}}, warnings.append
    )
    assert [r.action for r in cfg.permissions.rules] == ["deny"]
    assert any("denies everything" in w for w in warnings)


def test_rules_round_trip_through_toml(tmp_path: Any) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[permissions]\npolicy = "rules"\n[[permissions.rules]]\nkind = "read"\naction = "allow"\n')
    cfg = config.load({}, None, path)
    again = tmp_path / "again.toml"
    again.write_text(config.to_toml(cfg))
    assert config.load({}, None, again) == cfg
    assert cfg.permissions.rules == [PermissionRule(action="allow", kind="read")]


def test_the_host_selects_and_configures_rules(agy_host_home: Any) -> None:
    agy_host_home.write_config({"permissions": {"policy": "rules", "rules": [{"action": "deny"}]}})
    host = Host(env={"AGY_HOST_TTY": "none", **_xdg(agy_host_home)}, warn=lambda _m: None)
    policy = host.permission_policy()
    assert isinstance(policy, RulesPolicy) and [r.action for r in policy.rules] == ["deny"]
    # the default: nobody chose one (issue 26 item 1)
    assert chosen_policy(None, Config().permissions.policy) == ("ask", False)


def _xdg(home: Any) -> dict[str, str]:
    return {"HOME": str(home.home), "XDG_CONFIG_HOME": str(home.config_home), "XDG_STATE_HOME": str(home.state_home)}
