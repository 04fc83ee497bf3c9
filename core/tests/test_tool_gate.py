"""The tool gate's pieces (issue 27 items 2 and 3): the tool lists (globs
over names, ``kind:`` globs over kinds, denied wins, their bounds) and the
gate's order (the disallowed list, then the program's ``before_tool``, then
the allowed list, then the policy), its bound and its one verdict per call.
Pure units: the real agents are in tests/test_python_hooks.py and
tests/test_tool_lists.py."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from agy_host.contract.events import PermissionOption
from agy_host.contract.permissions import PermissionRequest
from agy_host.contract.tool_calls import ToolCall, ToolVerdict
from agy_host.runtime.tool_gate import ToolGate
from agy_host.service.globs import TooLongToMatch
from agy_host.service.tool_lists import ToolLists, entries


def lists(allowed: list[str] = [], disallowed: list[str] = []) -> ToolLists:  # noqa: B006 - read only
    return ToolLists(allowed=entries(allowed, "--allow-tool"), disallowed=entries(disallowed, "--deny-tool"))


def test_names_kinds_case_and_denied_wins() -> None:
    both = lists(allowed=["read_*", "kind:SEARCH"], disallowed=["read_secrets", "kind:execute"])
    assert both.problem() is None
    assert both.listed("read_file", "read") is True
    assert both.listed("READ_SECRETS", "read") is False, "case-insensitive, and denied wins over read_*"
    assert both.listed("grep", "search") is True
    assert both.listed("run", "execute") is False
    assert both.listed("write", "edit") is None
    found = both.match("run", "execute")
    assert found is not None
    assert found.reason("run", "execute") == (
        "'run' denied by disallowed_tools pattern 'kind:execute' (--deny-tool, matches kind 'execute')"
    )


def test_the_bounds_of_the_glob_rules() -> None:
    assert "at most 1,000 in one field" in str(lists(disallowed=["x" * 1001]).problem())
    assert "1,001 rules (at most 1,000" in str(lists(allowed=["a"] * 1001).problem())
    assert "is empty" in str(lists(allowed=["kind:"]).problem())
    assert lists(allowed=["[!a-z]*", "[", "x" * 1000]).problem() is None


def call(**kw: Any) -> ToolCall:
    return ToolCall(**{"name": "run", "kind": "execute", "session": "s", "call_id": "c1", **kw})


def gate(given: ToolLists, before: Any = None, bound: float = 5.0) -> ToolGate:
    return ToolGate(lambda: given, lambda: before, lambda: bound)


def test_the_gates_order() -> None:
    asked: list[str] = []

    def hook(answer: ToolVerdict) -> Any:
        async def before(c: ToolCall) -> ToolVerdict:
            asked.append(c.name)
            return answer

        return before

    async def main() -> None:
        denied = gate(lists(disallowed=["run"]), hook(ToolVerdict(allow=True, by="before_tool")))
        verdict = await denied.check(call())
        assert (verdict.allow, verdict.by) == (False, "disallowed_tools") and asked == [], "the hook is not asked"
        listed = lists(allowed=["run"])
        verdict = await gate(listed, hook(ToolVerdict(allow=False, by="before_tool"))).check(call())
        assert (verdict.allow, verdict.by) == (False, "before_tool"), "the hook's denial beats the allowed list"
        verdict = await gate(listed, hook(ToolVerdict())).check(call())
        assert (verdict.allow, verdict.by) == (True, "allowed_tools"), "the hook left it: the list allows"
        assert (await gate(lists(), hook(ToolVerdict())).check(call())).allow is None, "the policy decides"

    trio.run(main)


def test_a_name_too_long_to_match_is_allowed_by_no_list_and_refused_where_one_denies() -> None:
    """Issue 28 item 4, retest: a match costs the name's length times the
    glob's, and the agent picks the name (a permission request without a tool
    name goes by its title). One longer than globs are matched against is
    never allowed by ``allowed_tools``, and where ``disallowed_tools`` has
    patterns (one might name it, padded) it is refused, the reason naming the cap."""
    long = "run " + "x" * 5000

    async def main() -> None:
        verdict = await gate(lists(allowed=["*"], disallowed=["rm*"])).check(call(name=long))
        assert (verdict.allow, verdict.by) == (False, "disallowed_tools")
        assert "its name has 5,004 characters, more than rules are matched against (at most 4,096)" in verdict.reason
        assert verdict.reason.startswith(repr("run " + "x" * 296) + "… (5,004 characters) refused: ")
        assert (await gate(lists(allowed=["*"])).check(call(name=long))).allow is None, "the policy decides"

    trio.run(main)
    with pytest.raises(TooLongToMatch, match="at most 4,096"):
        lists(allowed=["*"]).match(long, "execute")  # never a silent "no match"


def test_one_verdict_per_call_and_rewrites_only_where_they_can_be() -> None:
    asked: list[str] = []

    async def before(c: ToolCall) -> ToolVerdict:
        asked.append(c.call_id)
        return ToolVerdict(allow=True, by="before_tool", input={"command": "ls"})

    async def main() -> None:
        g = gate(lists(), before)
        rewritten = await g.check(call(rewritable=True, input={"command": "rm"}))
        assert rewritten.input == {"command": "ls"}
        again = await g.check(call(rewritable=True, input={"command": "rm"}))
        assert again is rewritten and asked == ["c1"], "the second question about c1 takes the first verdict"
        refused = await g.check(call(call_id="c2", input={"command": "rm"}))
        assert refused.allow is False and "cannot be rewritten here" in refused.reason
        same = await g.check(call(call_id="c3", input={"command": "ls"}))
        assert (same.allow, same.input) == (True, None), "the same input back is a plain allow"

    trio.run(main)


def test_the_hook_is_bounded_and_a_question_is_not_a_tool_call() -> None:
    class Slow:
        label = "the before_tool callback slow()"

        async def __call__(self, c: ToolCall) -> ToolVerdict:
            await trio.sleep(3600)
            raise AssertionError("not reached")

    async def main() -> None:
        with trio.fail_after(5):
            verdict = await gate(lists(), Slow(), bound=0.05).check(call())
        assert verdict.reason == "the before_tool callback slow() gave no answer within 0.05s; refused"
        options = [PermissionOption(option_id="a", name="A", kind="allow_once")]
        question = PermissionRequest(
            session="s", call_id="interaction_1", title="Which?", options=options, is_question=True
        )
        assert await gate(lists(disallowed=["*"]), Slow()).permission(question) is None

    trio.run(main)


@pytest.mark.parametrize(
    ("given", "selected", "policy"),
    [(ToolVerdict(allow=True, by="allowed_tools"), "yes", "allowed_tools"), (ToolVerdict(), None, None)],
)
def test_a_permission_request_gets_the_verdicts_option(given: ToolVerdict, selected: str | None, policy: Any) -> None:
    async def before(c: ToolCall) -> ToolVerdict:
        return given

    options = [
        PermissionOption(option_id="yes", name="Yes", kind="allow_once"),
        PermissionOption(option_id="no", name="No", kind="reject_once"),
    ]
    request = PermissionRequest(session="s", call_id="c", title="Run run?", options=options, tool_name="run")
    decision = trio.run(gate(lists(), before).permission, request)
    if policy is None:
        assert decision is None
    else:
        assert decision is not None and (decision.option_id, decision.policy) == (selected, policy)
