"""ACP update -> Activity mapping (pure)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import msgspec
import pytest

from agy_host.contract.events import (
    AgentCommand,
    CommandsActivity,
    NoticeActivity,
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


def upd(obj: Mapping[str, object]) -> s.Update:
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
    assert err == ToolErrorActivity(
        call_id="b", name="run_command", message="tool failed", denied=True, title="Running run_command"
    )


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


# -- card titles: the ones real agents were seen sending (issue 24) -------------------------------


def asked(call: Mapping[str, object]) -> s.PermissionToolCall:
    """A permission request's ``toolCall``, decoded as the connection does."""
    return msgspec.convert(call, s.PermissionToolCall)


def test_a_new_title_updates_the_card_while_the_call_runs() -> None:
    """claude-agent-acp titles an edit "Edit" while its input streams, then
    "Edit src/app.ts": the card follows, and its end carries the title."""
    m = UpdateMapper()
    first = m.map(upd({"sessionUpdate": "tool_call", "toolCallId": "e", "title": "Edit", "kind": "edit"}))
    assert isinstance(first, ToolStartActivity) and first.title == "Edit"
    retitled = m.map(upd({"sessionUpdate": "tool_call_update", "toolCallId": "e", "title": "Edit src/app.ts"}))
    assert isinstance(retitled, ToolStartActivity)
    assert (retitled.call_id, retitled.kind, retitled.title) == ("e", "edit", "Edit src/app.ts")
    assert m.map(upd({"sessionUpdate": "tool_call_update", "toolCallId": "e", "title": "Edit src/app.ts"})) is None
    done = m.map(upd({"sessionUpdate": "tool_call_update", "toolCallId": "e", "status": "completed"}))
    assert isinstance(done, ToolDoneActivity) and done.title == "Edit src/app.ts"
    late = {"sessionUpdate": "tool_call_update", "toolCallId": "e", "title": "Edited", "locations": [{"path": "/a"}]}
    assert m.map(upd(late)) is None, "after its end a call's card is not started again"


def test_a_repeated_tool_call_with_a_new_title_updates_the_card() -> None:
    m = UpdateMapper()
    call = {"sessionUpdate": "tool_call", "toolCallId": "p", "title": "Preparing file…", "kind": "edit"}
    assert isinstance(m.map(upd(call)), ToolStartActivity)
    again = m.map(upd({**call, "title": "Write notes.md"}))
    assert isinstance(again, ToolStartActivity) and again.title == "Write notes.md"
    failed = m.map(upd({"sessionUpdate": "tool_call_update", "toolCallId": "p", "status": "failed"}))
    assert isinstance(failed, ToolErrorActivity) and failed.title == "Write notes.md"


def test_a_call_first_seen_in_its_permission_request_takes_the_requests_name_and_title() -> None:
    """The Gemini CLI sends no tool_call for a call it asks about: the request
    starts the card once allowed, with its title and kind; the end finds that
    call (not the last one started) and, when it has no title, keeps the
    request's."""
    m = UpdateMapper()
    read = {"sessionUpdate": "tool_call", "toolCallId": "r", "title": "a.txt", "kind": "read", "status": "in_progress"}
    m.map(upd(read))
    m.map(upd({**read, "sessionUpdate": "tool_call_update", "status": "completed"}))
    todos = {"toolCallId": "w", "status": "pending", "title": "Set 1 todo(s)", "content": [], "kind": "other"}
    started = m.permission_asked(asked(todos), allowed=True)
    assert isinstance(started, ToolStartActivity)
    assert (started.call_id, started.name, started.kind, started.title) == ("w", "other", "other", "Set 1 todo(s)")
    done = m.map(upd({"sessionUpdate": "tool_call_update", "toolCallId": "w", "status": "completed", "kind": "other"}))
    assert isinstance(done, ToolDoneActivity)
    assert (done.name, done.kind, done.title) == ("other", "other", "Set 1 todo(s)"), "not the read before it"
    shell = {"toolCallId": "x", "title": "make build", "kind": "execute"}
    assert isinstance(m.permission_asked(asked(shell), allowed=True), ToolStartActivity)
    failed = m.map(
        upd(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "x",
                "status": "failed",
                "kind": "execute",
                "content": [{"type": "content", "content": {"type": "text", "text": "spawn make ENOENT"}}],
            }
        )
    )
    assert isinstance(failed, ToolErrorActivity)
    assert (failed.title, failed.message) == ("make build", "spawn make ENOENT")


def test_a_refused_call_first_seen_in_its_request_starts_no_card() -> None:
    """Refused, the Gemini CLI never reports the call: no card is left "started"."""
    m = UpdateMapper()
    assert (
        m.permission_asked(asked({"toolCallId": "x", "title": "rm -rf build", "kind": "execute"}), allowed=False)
        is None
    )
    ended = m.map(upd({"sessionUpdate": "tool_call_update", "toolCallId": "x", "status": "failed"}))
    assert isinstance(ended, ToolErrorActivity) and ended.title == "rm -rf build"


def test_a_known_call_without_a_title_takes_the_requests_title() -> None:
    m = UpdateMapper()
    assert isinstance(m.map(upd({"sessionUpdate": "tool_call", "toolCallId": "k", "kind": "other"})), ToolStartActivity)
    retitled = m.permission_asked(asked({"toolCallId": "k", "title": "Set 1 todo(s)"}), allowed=False)
    assert isinstance(retitled, ToolStartActivity) and retitled.title == "Set 1 todo(s)"
    titled = {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Run create_file?", "kind": "edit"}
    m.map(upd(titled))
    assert m.permission_asked(asked({"toolCallId": "t", "title": "Create probe.txt?"}), allowed=True) is None


def test_a_flood_line_decodes_to_objects_the_cycle_collector_does_not_track() -> None:
    """A pipe read of a flood is about 1,100 message chunks decoded at once
    and alive together: a tracked struct among them set off a collection per
    read (178 in a 200,000-chunk turn, 15 ms of it)."""
    import gc

    from agy_host_acp import schema

    line = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s",'
        b'"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}'
    )
    gc.disable()  # so the count below is not reset by a collection
    try:
        before = gc.get_count()[0]
        kept = [schema.update_line_decoder.decode(line) for _ in range(2_000)]
        counted = gc.get_count()[0] - before
    finally:
        gc.enable()
    update = kept[0].params.update
    assert isinstance(update, schema.AgentMessageChunk) and update.content.text == "hi"
    assert counted < 100, f"{counted} objects counted toward a collection for {len(kept)} lines"


def _chunk(text: str, kind: str = "agent_message_chunk") -> s.Update:
    return upd({"sessionUpdate": kind, "content": {"type": "text", "text": text}})


def test_the_gemini_clis_mode_update_chunk_is_a_notice_not_answer_text() -> None:
    """The Gemini CLI 0.61 says ``[MODE_UPDATE] <mode>`` as a message chunk
    of its own when its approval mode changes (``--mode``): it must not
    reach the answer, in a batch of chunks, a mixed batch or alone."""
    notice = NoticeActivity(level="info", message="the agent's mode is now autoEdit", code="agent-mode")
    m = UpdateMapper()
    m.expect_mode("autoEdit")
    flood = [_chunk("Hel"), _chunk("[MODE_UPDATE] autoEdit"), _chunk("lo")]
    assert m.map_many(flood) == [TextActivity(delta="Hel"), notice, TextActivity(delta="lo")]
    m.expect_mode("autoEdit")
    mixed = [_chunk("think", "agent_thought_chunk"), _chunk("[MODE_UPDATE] autoEdit"), _chunk(" there")]
    assert m.map_many(mixed) == [ThoughtActivity(delta="think"), notice, TextActivity(delta=" there")]
    m.expect_mode("autoEdit")
    assert m.map(_chunk("[MODE_UPDATE] autoEdit")) == notice
    assert m.response == "Hello there"
    # text that only mentions it, or goes on after it, is the agent's answer
    said = "see [MODE_UPDATE] autoEdit"
    assert m.map_many([_chunk(said), _chunk("[MODE_UPDATE] plan mode!")]) == [
        TextActivity(delta=said + "[MODE_UPDATE] plan mode!")
    ]


def test_a_mode_announcement_nobody_asked_for_is_the_models_text() -> None:
    """The model can say anything, as a chunk of its own too: only the mode
    this turn set is taken as the agent's announcement, once."""
    m = UpdateMapper()
    spoof = [_chunk("Note: "), _chunk("[MODE_UPDATE] yolo"), _chunk(" is a marker.")]
    assert m.map_many(spoof) == [TextActivity(delta="Note: [MODE_UPDATE] yolo is a marker.")]
    m.expect_mode("plan")
    assert m.map(_chunk("[MODE_UPDATE] yolo")) == TextActivity(delta="[MODE_UPDATE] yolo")
    assert m.map(_chunk("[MODE_UPDATE] plan")) == NoticeActivity(
        level="info", message="the agent's mode is now plan", code="agent-mode"
    )
    assert m.map(_chunk("[MODE_UPDATE] plan")) == TextActivity(delta="[MODE_UPDATE] plan"), "announced once"


def test_after_an_always_answer_the_agents_own_mode_switch_is_a_notice_once() -> None:
    """The Gemini CLI switches to ``autoEdit`` on "Allow for this session"
    and announces it: the one announcement after the host answered "always"
    is the agent's, whatever mode it names; a second is the model's text."""
    m = UpdateMapper()
    assert m.map(_chunk("[MODE_UPDATE] autoEdit")) == TextActivity(delta="[MODE_UPDATE] autoEdit")
    m.expect_mode_switch()
    assert m.map_many([_chunk("[MODE_UPDATE] autoEdit"), _chunk("done")]) == [
        NoticeActivity(level="info", message="the agent's mode is now autoEdit", code="agent-mode"),
        TextActivity(delta="done"),
    ]
    assert m.map(_chunk("[MODE_UPDATE] yolo")) == TextActivity(delta="[MODE_UPDATE] yolo")
