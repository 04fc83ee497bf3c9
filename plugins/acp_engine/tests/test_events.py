"""ACP update -> Activity mapping (pure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agy_host.contract.events import (
    AgentCommand,
    CommandsActivity,
    PlanActivity,
    PlanEntry,
    TextActivity,
    ThoughtActivity,
    ToolDoneActivity,
    ToolErrorActivity,
    ToolStartActivity,
    UsageActivity,
)
from agy_host_acp import schema as s
from agy_host_acp.events import UpdateMapper, outcome_for, prompt_usage, tool_name


def upd(obj: dict[str, object]) -> s.Update:
    return s.decode_session_update(json.dumps({"sessionId": "x", "update": obj}).encode())[1]


def test_message_and_thought_chunks() -> None:
    m = UpdateMapper()
    assert m.map(
        upd({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "HE"}})
    ) == TextActivity(delta="HE")
    assert m.map(upd({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}})) == (
        ThoughtActivity(delta="hmm")
    )
    assert m.map(upd({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "old"}})) is None
    assert m.response == "HE"


def test_mcp_envelope_and_meta_name() -> None:
    m = UpdateMapper()
    act = m.map(
        upd(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "e5a2",
                "title": "pi-bridge_bridge_echo",
                "kind": "other",
                "status": "pending",
                "content": [],
                "rawInput": {"arguments": {"text": "PROBE-9"}},
                "_meta": {"mcp": {"tool": "bridge_echo", "server": "pi-bridge"}, "is_mcp_tool_call": True},
            }
        )
    )
    assert isinstance(act, ToolStartActivity)
    assert act.name == "bridge_echo"
    assert act.args == {"text": "PROBE-9"}


@pytest.mark.parametrize(
    ("title", "kind", "expected"),
    [
        ("Run create_file?", "edit", "create_file"),
        ("Running client_view_file", "read", "client_view_file"),
        ("Do you prefer red or blue?", None, "tool"),
        ("Something", "execute", "execute"),
    ],
)
def test_tool_name_from_title_then_kind(title: str, kind: str | None, expected: str) -> None:
    call = upd({"sessionUpdate": "tool_call", "toolCallId": "1", "title": title, **({"kind": kind} if kind else {})})
    assert isinstance(call, s.ToolCall)
    assert tool_name(call) == expected


def test_duplicate_pending_call_updates_in_place_and_completion_carries_diff() -> None:
    m = UpdateMapper()
    pending = {
        "sessionUpdate": "tool_call",
        "toolCallId": "6d81",
        "title": "Run client_create_file?",
        "kind": "edit",
        "status": "pending",
        "content": [{"path": "/s/p.txt", "newText": "ok\n", "_meta": {"kind": "add"}, "type": "diff"}],
        "rawInput": {"code_content": "ok\n", "target_file": "/s/p.txt"},
    }
    first = m.map(upd(pending))
    assert isinstance(first, ToolStartActivity)
    assert first.diff is not None and first.diff.old_text is None
    assert m.map(upd(pending)) is None  # sent twice verbatim: never a second card
    assert m.map(upd({"sessionUpdate": "tool_call_update", "toolCallId": "6d81", "status": "in_progress"})) is None
    done = m.map(upd({"sessionUpdate": "tool_call_update", "toolCallId": "6d81", "status": "completed"}))
    assert isinstance(done, ToolDoneActivity)
    assert done.name == "client_create_file"
    assert done.diff is not None and done.diff.new_text == "ok\n"
    assert done.args["target_file"] == "/s/p.txt"


def test_supersede_quirk_adopts_last_started_tool() -> None:
    m = UpdateMapper()
    m.map(
        upd(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "33eb",
                "title": "Run create_file?",
                "kind": "edit",
                "content": [{"type": "diff", "path": "/w/probe.txt", "newText": "hello\n"}],
            }
        )
    )
    done = m.map(
        upd(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "s:7",
                "status": "completed",
                "rawOutput": "Create probe.txt",
            }
        )
    )
    assert isinstance(done, ToolDoneActivity)
    assert done.name == "create_file"
    assert done.output == "Create probe.txt"
    assert done.diff is not None and done.diff.path == "/w/probe.txt"


def test_content_text_wins_over_raw_output_and_failed_maps_to_error() -> None:
    m = UpdateMapper()
    m.map(upd({"sessionUpdate": "tool_call", "toolCallId": "a", "title": "Running view_file", "kind": "read"}))
    done = m.map(
        upd(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "a",
                "status": "completed",
                "rawOutput": "View file",
                "content": [{"type": "content", "content": {"type": "text", "text": "3 lines"}}],
            }
        )
    )
    assert isinstance(done, ToolDoneActivity) and done.output == "3 lines"
    m.map(upd({"sessionUpdate": "tool_call", "toolCallId": "b", "title": "Running run_command"}))
    m.mark_denied("b")
    err = m.map(upd({"sessionUpdate": "tool_call_update", "toolCallId": "b", "status": "failed"}))
    assert err == ToolErrorActivity(call_id="b", name="run_command", message="tool failed", denied=True)


def test_usage_commands_unknown_and_garbage() -> None:
    m = UpdateMapper()
    usage = m.map(
        upd(
            {
                "sessionUpdate": "usage_update",
                "used": 22913,
                "size": 1000000,
                "cost": {"amount": 0.13, "currency": "USD"},
            }
        )
    )
    assert isinstance(usage, UsageActivity)
    # the session's total cost: the turn's share is unknown without the total at the turn's start
    assert (usage.turn.context_used, usage.turn.context_size, usage.turn.cost_amount) == (22913, 1000000, None)
    assert usage.cumulative is not None and (usage.cumulative.cost_amount, usage.cumulative.context_used) == (
        0.13,
        22913,
    )
    cmds = m.map(upd({"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "plan"}]}))
    assert cmds == CommandsActivity(commands=[AgentCommand(name="plan")])
    assert m.map(upd({"sessionUpdate": "plan", "entries": []})) == PlanActivity(entries=[])
    assert m.map(upd({"sessionUpdate": "something_new_2027", "x": 1})) is None
    assert m.map(upd({"noDiscriminator": True})) is None
    _, garbage, _ = s.decode_session_update(b"[1,2]")
    assert m.map(garbage) is None
    assert m.ignored["something_new_2027"] == 1


def test_usage_update_cost_is_the_sessions_total_and_the_turn_gets_the_difference() -> None:
    """ACP v1: ``UsageUpdate.cost`` is "Cumulative session cost". A second
    turn that spent 0.15 of a 0.30 total reports 0.15, never 0.30."""
    m = UpdateMapper()
    m.cost_before = 0.15
    first = m.map(
        upd({"sessionUpdate": "usage_update", "used": 10, "size": 100, "cost": {"amount": 0.2, "currency": "USD"}})
    )
    last = m.map(
        upd({"sessionUpdate": "usage_update", "used": 20, "size": 100, "cost": {"amount": 0.3, "currency": "USD"}})
    )
    assert isinstance(first, UsageActivity) and isinstance(last, UsageActivity)
    assert first.turn.cost_amount == pytest.approx(0.05) and last.turn.cost_amount == pytest.approx(0.15)
    assert last.turn.cost_currency == "USD" and last.cumulative is not None and last.cumulative.cost_amount == 0.3
    assert m.cost_total == 0.3
    no_cost = m.map(upd({"sessionUpdate": "usage_update", "used": 30, "size": 100}))
    assert isinstance(no_cost, UsageActivity) and no_cost.turn.cost_amount is None and no_cost.turn.context_used == 30


@pytest.mark.parametrize(
    ("stop", "status", "reason", "aborted"),
    [
        ("end_turn", "ok", "stop", False),
        ("cancelled", "ok", "aborted", True),
        ("max_tokens", "ok", "stop", False),
        ("refusal", "error", "error", False),
        ("max_turn_requests", "error", "error", False),
        ("brand_new", "ok", "stop", False),
    ],
)
def test_stop_reason_table(stop: str, status: str, reason: str, aborted: bool) -> None:
    out = outcome_for(stop, conversation_id="c", response="r")
    assert (out.status, out.stop_reason, out.aborted, out.agent_stop_reason) == (status, reason, aborted, stop)


def test_prompt_usage_from_usage_and_gemini_quota_meta() -> None:
    claude = s.convert(
        {
            "stopReason": "end_turn",
            "usage": {"inputTokens": 2, "outputTokens": 4, "cachedReadTokens": 10049, "totalTokens": 22913},
        },
        s.PromptResult,
    )
    u = prompt_usage(claude)
    assert u is not None and (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.total_tokens) == (
        2,
        4,
        10049,
        22913,
    )
    gemini = s.convert(
        {"stopReason": "end_turn", "_meta": {"quota": {"token_count": {"input_tokens": 10340, "output_tokens": 1}}}},
        s.PromptResult,
    )
    g = prompt_usage(gemini)
    assert g is not None and (g.input_tokens, g.output_tokens, g.total_tokens) == (10340, 1, 10341)
    assert prompt_usage(s.convert({"stopReason": "end_turn"}, s.PromptResult)) is None


GOLDEN = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "acp-schema" / "golden-python-sdk-0.12.1"


@pytest.mark.skipif(not GOLDEN.exists(), reason="vendored golden messages not present")
@pytest.mark.parametrize(
    "name", sorted(p.name for p in GOLDEN.glob("session_update_*.json")) if GOLDEN.exists() else []
)
def test_golden_session_updates_decode_to_known_variants(name: str) -> None:
    raw = (GOLDEN / name).read_bytes()
    _, update, _ = s.decode_session_update(b'{"sessionId":"s","update":' + raw + b"}")
    assert not isinstance(update, s.UnknownUpdate), update


def test_plan_entries_with_status_and_priority_and_bad_entries_skipped() -> None:
    """The whole plan each time; an entry without text is skipped (the
    schema's skip-invalid-items), an unknown status reads as pending, an
    unknown priority is left out: a newer agent never loses the plan."""
    plan = upd(
        {
            "sessionUpdate": "plan",
            "entries": [
                {"content": "Read the code", "priority": "high", "status": "completed"},
                {"content": "Fix it", "priority": "medium", "status": "in_progress"},
                {"content": "Ship it", "priority": "urgent", "status": "blocked"},
                {"priority": "low", "status": "pending"},
                "not an entry",
            ],
        }
    )
    assert not isinstance(plan, s.UnknownUpdate)
    assert UpdateMapper().map(plan) == PlanActivity(
        entries=[
            PlanEntry(content="Read the code", status="completed", priority="high"),
            PlanEntry(content="Fix it", status="in_progress", priority="medium"),
            PlanEntry(content="Ship it", status="pending"),
        ]
    )


def test_commands_carry_description_and_input_hint() -> None:
    update = upd(
        {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [
                {"name": "compact", "description": "Summarise", "input": {"hint": "instructions"}},
                {"name": "init", "description": "Write AGENTS.md", "input": None},
                {"description": "no name: skipped"},
                {"name": "/review", "description": "a leading slash is not part of the name"},
            ],
        }
    )
    assert UpdateMapper().map(update) == CommandsActivity(
        commands=[
            AgentCommand(name="compact", description="Summarise", input_hint="instructions"),
            AgentCommand(name="init", description="Write AGENTS.md"),
            AgentCommand(name="review", description="a leading slash is not part of the name"),
        ]
    )


@pytest.mark.skipif(not GOLDEN.exists(), reason="vendored golden messages not present")
def test_the_golden_plan_maps_to_a_checklist() -> None:
    raw = (GOLDEN / "session_update_plan.json").read_bytes()
    _, update, _ = s.decode_session_update(b'{"sessionId":"s","update":' + raw + b"}")
    assert UpdateMapper().map(update) == PlanActivity(
        entries=[
            PlanEntry(content="Check for syntax errors", status="pending", priority="high"),
            PlanEntry(content="Identify potential type issues", status="pending", priority="medium"),
        ]
    )
