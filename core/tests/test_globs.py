"""The rule globs (issue 28 item 4): fnmatch's meaning, linear compiling,
bounds checked when a list loads, and matching that lets a cancel in."""

from __future__ import annotations

import fnmatch
import time

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from agy_host import config
from agy_host.builtins.permission_rules import RulesPolicy
from agy_host.config import AnswerRule, PermissionRule
from agy_host.contract.permissions import PermissionRequest
from agy_host.service import globs as globs_mod
from agy_host.service.globs import (
    ANSWER_FIELDS,
    MAX_FIELD_CHARS,
    MAX_LIST_GLOB_CHARS,
    MAX_RULES,
    GlobError,
    check_rules,
    glob_match,
    rules_problem,
    translate,
)

_GLOBBY = st.text(alphabet="ab[]!-*?^\\.xAB", max_size=14)


@settings(max_examples=3000, deadline=None)
@given(pattern=_GLOBBY)
def test_translate_is_fnmatchs_translation(pattern: str) -> None:
    assert translate(pattern) == fnmatch.translate(pattern)


@settings(max_examples=2000, deadline=None)
@given(pattern=_GLOBBY, value=st.text(alphabet="ab[]!-^\\.xAB", max_size=14))
def test_a_glob_matches_as_fnmatch_does_ignoring_case(pattern: str, value: str) -> None:
    assert glob_match(pattern, value) == fnmatch.fnmatchcase(value.lower(), pattern.lower())


def test_a_glob_of_brackets_compiles_in_linear_time() -> None:
    """fnmatch scans for a ``]`` from every ``[``: 100,000 of them took minutes."""
    started = time.perf_counter()
    translate("[" * 200_000)
    translate("[!]" * 50_000 + "[" * 50_000)
    assert time.perf_counter() - started < 5.0  # generous: well under 0.1 s here


def test_a_field_too_long_is_refused_naming_the_rule_and_field() -> None:
    bomb = [PermissionRule(action="allow"), PermissionRule(action="deny", title="[" * 100_000)]
    with pytest.raises(GlobError, match=r"^rules here: rule 2: title: a glob of 100,000 characters \(at most 1,000"):
        check_rules(bomb, ("kind", "title", "name"), "rules here")
    many = [AnswerRule(value=1, field=["x" * 400, "y" * 400, "z" * 400])]
    with pytest.raises(GlobError, match=r"rule 1: field: 3 globs of 1,200 characters"):
        check_rules(many, ANSWER_FIELDS, "answers")
    with pytest.raises(GlobError, match="a glob of"):
        glob_match("*" * (MAX_FIELD_CHARS + 1), "x")  # a list never checked is refused when matched, too


def test_too_many_rules_or_globs_are_refused_with_the_bounds() -> None:
    with pytest.raises(GlobError, match=r"100,000 rules \(at most 1,000; a match field takes a list of globs"):
        check_rules([PermissionRule(action="allow", name="x")] * 100_000, ("name",), "L")
    check_rules([PermissionRule(action="allow", name="x")] * MAX_RULES, ("name",), "L")
    wide = [PermissionRule(action="allow", title="t" * 1000, name=f"n{i}") for i in range(70)]
    with pytest.raises(GlobError, match=rf"globs of 70,\d{{3}} characters in all \(at most {MAX_LIST_GLOB_CHARS:,}\)"):
        check_rules(wide, ("title", "name"), "L")


def test_the_config_lists_are_checked_with_where_they_are() -> None:
    said: list[str] = []
    cfg = config.narrow(
        {"answer": [{"value": 1, "title": "?" * 2000}], "permissions": {"rules": [{"action": "deny"}]}}, said.append
    )
    assert said == []
    problem = rules_problem(cfg, "/x/config.toml")
    assert problem is not None and problem.startswith("[[answer]] in /x/config.toml: rule 1: title: a glob of 2,000")
    cfg.answer = []
    cfg.permissions.rules = [PermissionRule(action="deny", kind="[" * 5000)]
    assert str(rules_problem(cfg, "c.toml")).startswith("[[permissions.rules]] in c.toml: rule 1: kind:")
    assert rules_problem(cfg, "c.toml", [AnswerRule(value=1, tool="*" * 1001)]) is not None
    cfg.permissions.rules = []
    assert rules_problem(cfg, "c.toml") is None


def test_the_rules_policy_denies_everything_when_its_rules_cannot_be_used() -> None:
    cfg = config.narrow(
        {"permissions": {"policy": "rules", "rules": [{"action": "allow", "title": "[" * 3000}]}}, print
    )
    policy = RulesPolicy()
    with pytest.raises(GlobError):
        policy.configure(cfg, {"AGY_HOST_TTY": "none"})
    assert [r.action for r in policy.rules] == ["deny"]


def test_a_thousand_rules_answer_a_question_in_milliseconds() -> None:
    """100,000 rules cost 6.7 s a question; at the bound a question costs
    about a millisecond (each field compiled once, when the list loads)."""
    from agy_host.builtins.permission_rules import evaluate

    rules = [
        PermissionRule(action="allow", kind="execute", title=f"Run tool {i} *", name=f"t{i}_*") for i in range(1000)
    ]
    check_rules(rules, ("kind", "title", "name"), "L")
    request = PermissionRequest(
        session="s", call_id="c", title="Run tool 999 now", options=[], tool_kind="execute", tool_name="t999_x"
    )
    started = time.perf_counter()
    for _ in range(20):
        action, why = evaluate(rules, request, "deny")
    assert (action, why.split(" (")[0]) == ("allow", "rule 1000")
    assert (time.perf_counter() - started) / 20 < 0.5  # generous: about 1 ms here


async def test_matching_lets_a_cancel_in_between_rules() -> None:
    """Long matching (worst-case globs against a title at the length cap;
    a longer one is matched by no rule) yields to trio: a cancel (as
    Ctrl-C's or SIGTERM's abort) lands within one field's match, where it
    used to wait for the whole list."""
    heavy = "*" + "a?" * 499 + "b"  # backtracks over the whole title, in one field's match
    raw = [{"action": "allow", "title": heavy} for _ in range(60)]
    cfg = config.narrow({"permissions": {"policy": "rules", "rules": raw, "rules_default": "deny"}}, print)
    policy = RulesPolicy()
    policy.configure(cfg, {"AGY_HOST_TTY": "none"})
    title = "a" * globs_mod.MAX_MATCHED_CHARS
    request = PermissionRequest(session="s", call_id="c", title=title, options=[], tool_kind="edit")
    one = globs_mod.field_matcher(heavy)
    assert one is not None
    started = time.perf_counter()
    one.match(request.title)
    per_match = time.perf_counter() - started
    started = time.perf_counter()
    with trio.move_on_after(per_match * 5) as scope:
        await policy.decide(request)
    waited = time.perf_counter() - started
    assert scope.cancelled_caught, "the whole list was matched before the cancel landed"
    assert waited < 8 * per_match + 1.0, (waited, per_match)  # the list alone is 60 matches


def test_a_value_too_long_to_match_is_never_a_silent_no_match() -> None:
    """A match costs the value's length times the glob's, and the agent picks
    the value: one past the cap is matched by no glob (its callers decide
    without the rules), and a glob that meets it raises rather than say "no"."""
    cap = globs_mod.MAX_MATCHED_CHARS
    assert globs_mod.unmatchable({"title": "a" * cap, "name": "x"}) is None
    assert globs_mod.unmatchable({"title": "t", "name": "x" * (cap + 1)}) == (
        "its name has 4,097 characters, more than rules are matched against (at most 4,096), so no rule decides it"
    )
    assert globs_mod.glob_match("a*", "a" * cap)
    assert globs_mod.glob_match([], "a" * (cap + 1)), "no glob matches all, at no cost"
    with pytest.raises(globs_mod.TooLongToMatch, match="at most 4,096"):
        globs_mod.glob_match("*", "a" * (cap + 1))
