"""The harness's pre-tool hook, in pieces (issue 27 items 2 and 3): the
``genai.Struct`` a rewritten input is sent as, the names and kinds a step is
shown by, and the policy rules while the host gates tools. The real harness
runs them in test_python_hooks.py."""

from __future__ import annotations

from agy_host_harness import harness_config, pre_tool


def test_a_new_input_is_a_genai_struct() -> None:
    value = {"CommandLine": "ls", "N": 5, "ok": True, "none": None, "list": [1, "a"], "obj": {"k": 1.5}}
    assert pre_tool.genai_struct(value) == {
        "fields": [
            {"name": "CommandLine", "value": {"stringValue": "ls"}},
            {"name": "N", "value": {"numberValue": 5}},
            {"name": "ok", "value": {"boolValue": True}},
            {"name": "none", "value": {"nullValue": "NULL_VALUE"}},
            {"name": "list", "value": {"listValue": {"values": [{"numberValue": 1}, {"stringValue": "a"}]}}},
            {"name": "obj", "value": {"structValue": {"fields": [{"name": "k", "value": {"numberValue": 1.5}}]}}},
        ]
    }


def test_a_step_is_named_and_kinded_as_its_card() -> None:
    named = {t: (pre_tool.card_name(t), pre_tool.kind_of(pre_tool.card_name(t))) for t in pre_tool.NAMES}
    assert named["list_directory"] == ("list_dir", "read")
    assert named["create_file"] == ("write_to_file", "edit")
    assert named["search_directory"] == ("grep_search", "search")
    assert pre_tool.card_name("get_issue", "github") == "mcp_github_get_issue"
    assert pre_tool.kind_of("run_command") == "execute"


def test_the_policy_rules_while_the_host_gates_tools() -> None:
    asked = harness_config.policy_config("ask", False)
    assert asked is not None
    rules = pre_tool.policy_rules(asked["rules"], ("run_command",), hooked=True)
    tools = [rule["tool"] for rule in rules]
    assert "run_command" not in tools, "allowed by the lists: no rule, the harness runs it unasked"
    assert rules[-1] == pre_tool.CATCH_ALL, "the hook's fail-closed default is turned back to allow"
    assert pre_tool.policy_rules([], (), hooked=True) == [], "no rules: the harness allows by default"

    def listed(name: str, kind: str) -> bool | None:
        return True if name == "edit_file" else None

    assert pre_tool.listed_allowed(listed, harness_config.GATED_TOOLS) == (
        "replace_file_content",
        "multi_replace_file_content",
    )
