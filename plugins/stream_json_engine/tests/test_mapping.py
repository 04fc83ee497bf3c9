"""Step mapping, usage deltas and failure classification as pure functions."""

from __future__ import annotations

from agy_host.contract.events import (
    Activity,
    PermissionActivity,
    TextActivity,
    ToolDoneActivity,
    ToolErrorActivity,
    ToolStartActivity,
    UsageCounts,
)
from agy_host_stream_json.mapping import StepMapper, is_denial
from agy_host_stream_json.outcome import agy_error, death_failure, is_statement, kind_of, reset_note, result_failure
from agy_host_stream_json.usage import UsageSum, subtract, turn_usage
from agy_host_stream_json.wire import DeniedAction, Step, ToolInfo, Usage


def mapper() -> tuple[StepMapper, list[Activity]]:
    out: list[Activity] = []
    return StepMapper(out.append), out


def text(index: int, delta: str, state: str = "ACTIVE") -> Step:
    return Step(step_index=index, state=state, step_type="agent_response", text_delta=delta)


def test_text_deltas_concatenate_and_a_cumulative_resend_is_sliced() -> None:
    m, out = mapper()
    long = "x" * 40
    for step in (text(1, "I have created the"), text(1, " file.\n", "DONE"), text(3, long), text(3, long + "!")):
        m.step(step)
    assert [a.delta for a in out if isinstance(a, TextActivity)] == ["I have created the", " file.\n", long, "!"]
    assert m.response == "I have created the file.\n" + long + "!"


def test_short_text_never_misflips() -> None:
    m, _ = mapper()
    for piece in ("**", "**bold", "**bold** move"):
        m.step(text(1, piece))
    assert m.response == "****bold**bold** move"  # below 32 chars every chunk is a delta


def test_a_step_without_text_delta_falls_back_to_response_text() -> None:
    m, _ = mapper()
    m.step(Step(step_index=1, state="DONE", step_type="agent_response", response_text="whole"))
    assert m.response == "whole"


def test_tool_lifecycle_one_card_per_step_index() -> None:
    m, out = mapper()
    info = ToolInfo(name="view_file", parameters={"AbsolutePath": "/a"})
    m.step(Step(step_index=2, state="ACTIVE", step_type="tool", tool_name="view_file", tool_info=info))
    m.step(Step(step_index=2, state="ACTIVE", step_type="tool", tool_name="view_file", tool_info=info))
    done = ToolInfo(name="view_file", parameters={"AbsolutePath": "/a"}, output="3 lines, 44 bytes")
    m.step(Step(step_index=2, state="DONE", step_type="tool", tool_name="view_file", tool_info=done))
    assert [type(a).__name__ for a in out] == ["ToolStartActivity", "ToolDoneActivity"]
    start, end = out
    assert isinstance(start, ToolStartActivity) and start.call_id == "step-2" and start.locations == ["/a"]
    assert isinstance(end, ToolDoneActivity) and end.output == "3 lines, 44 bytes" and end.kind == "read"


def test_denial_detection_reads_the_message() -> None:
    assert is_denial('permission check failed for command "ls": user denied permission to run command')
    assert is_denial("User denied permission for command(ls -la).")
    assert not is_denial("~/x is not a valid artifact path; artifacts must be in ~/brain/")


def test_denied_actions_mark_the_matching_empty_done_tool() -> None:
    m, out = mapper()
    for index, name, output in ((1, "run_command", None), (2, "write_to_file", None), (3, "run_command", "ok")):
        info = ToolInfo(name=name, parameters={}, output=output)
        m.step(Step(step_index=index, state="DONE", step_type="tool", tool_name=name, tool_info=info))
    unmatched = m.apply_denied(
        [DeniedAction(action="command", display_name="RunCommand"), DeniedAction(action="browse")]
    )
    denied = [a for a in out if isinstance(a, ToolDoneActivity) and a.denied]
    assert [d.call_id for d in denied] == ["step-1"]  # the one without output, not the one that ran
    assert unmatched == ["browse"] and m.denied == ["run_command", "browse"]
    # each denial is a refused permission request too, so the turn exits 5 (issue 26 item 3)
    refused = [a for a in out if isinstance(a, PermissionActivity)]
    assert [(a.call_id, a.title, a.policy, a.selected) for a in refused] == [
        ("step-1", "run_command", "agy", "reject"),
        ("denied-2", "browse", "agy", "reject"),
    ]
    assert all("To allow: --permissions skip" in a.reason for a in refused)


def test_a_denied_error_step_is_a_refused_permission_request() -> None:
    m, out = mapper()
    info = ToolInfo(
        name="run_command", parameters={"CommandLine": "make"}, error="user denied permission to run command"
    )
    m.step(Step(step_index=2, state="ERROR", step_type="tool", tool_name="run_command", tool_info=info))
    [refused] = [a for a in out if isinstance(a, PermissionActivity)]
    assert (refused.call_id, refused.title, refused.selected) == ("step-2", "make", "reject"), refused
    assert "agy cannot ask for permission in stream-json mode" in refused.reason
    assert isinstance(out[-1], ToolErrorActivity) and out[-1].denied


def test_error_steps_and_tool_errors() -> None:
    m, out = mapper()
    m.step(Step(step_type="error_message", state="DONE", error_message="Individual quota reached."))
    err = ToolInfo(name="run_command", error="exit 1")
    m.step(Step(step_index=4, state="ERROR", step_type="tool", tool_name="run_command", tool_info=err))
    assert m.errors == ["Individual quota reached."]
    failure = out[-1]
    assert isinstance(failure, ToolErrorActivity) and failure.message == "exit 1" and not failure.denied
    assert m.seen == {"error_message": 1, "tool": 1}


def test_turn_usage_prefers_the_difference_then_the_step_sum_then_the_result() -> None:
    steps = UsageSum()
    steps.add(Usage(input_tokens=10, output_tokens=2, total_tokens=12))
    steps.add(Usage(input_tokens=20, output_tokens=3, total_tokens=23, cache_read_tokens=5))
    result = Usage(input_tokens=100, output_tokens=10, total_tokens=110)
    previous = UsageCounts(input_tokens=70, output_tokens=5, total_tokens=75)
    pair = turn_usage(result, previous, steps)
    assert pair is not None and pair[0].total_tokens == 35 and pair[1] is not None and pair[1].total_tokens == 110
    assert pair[0].context_used == 28  # the last step's total plus its cached input
    pair = turn_usage(result, None, steps)
    assert pair is not None and pair[0].total_tokens == 35 and pair[0].cache_read_tokens == 5
    pair = turn_usage(result, None, UsageSum())
    assert pair is not None and pair[0].total_tokens == pair[1].total_tokens == 110  # type: ignore[union-attr]
    zeroed = Usage(input_tokens=0, output_tokens=0, total_tokens=0)
    assert subtract(UsageCounts(total_tokens=0), UsageCounts(total_tokens=75)) is None
    pair = turn_usage(zeroed, previous, UsageSum())
    assert pair is not None and pair[0].total_tokens == 0


def test_statements_are_only_error_and_agy_error_lines() -> None:
    assert is_statement("error: invalid model selection")
    assert is_statement("Error: authentication required. Run 'agy' to log in, then retry.")
    assert is_statement('AGY_ERROR: {"status":"RESOURCE_EXHAUSTED"}')
    assert not is_statement("You are not logged into Antigravity.")
    assert not is_statement("warning: --mode plan has no effect")
    assert agy_error('AGY_ERROR: {"status":"RESOURCE_EXHAUSTED","error_code":429}') == {
        "status": "RESOURCE_EXHAUSTED",
        "error_code": 429,
    }
    assert agy_error("AGY_ERROR: not json") is None


def test_failure_kinds_read_the_words_first_and_the_exit_code_second() -> None:
    assert kind_of(["authentication failed or timed out"], 1) == "auth"
    assert kind_of(["Individual quota reached. Resets in 34m13s."], None) == "agent"
    assert kind_of(["something"], 3) == "agent"
    assert kind_of(['invalid model selection (--model "x" --effort ""): ...'], None) == "usage"
    assert kind_of(["/help is answered by the CLI itself"], None) == "usage"
    assert kind_of(["anything"], 2) == "usage"
    assert kind_of(['stream input message is missing the "event" field'], 1) == "protocol"
    assert kind_of(["timeout waiting for response"], 1) == "timeout"
    assert kind_of(["The stream was interrupted. Please continue the task."], 0) == "agent"


def test_reset_note_and_composed_messages() -> None:
    note = reset_note(["Individual quota reached. Resets in 1h2m3s."], now=0.0)
    assert note.startswith("quota resets in 1h2m3s (at about ")
    message, kind = result_failure("ERROR", "", [], None)
    assert (message, kind) == ("agy reported an error without saying which", "agent")
    message, kind = result_failure("CANCELED", "", [], None)
    assert message == "agy ended the turn with status CANCELED"
    message, kind = death_failure(-9, "", [], True)
    assert (message, kind) == ("agy exited mid-turn (killed by SIGKILL)", "exited")
    message, kind = death_failure(1, "", ["Error: authentication required. Run 'agy' to log in."], False)
    assert kind == "auth" and message.startswith("agy failed: Error: authentication required")


def _tool_done(m: StepMapper, index: int, name: str, output: str | None) -> None:
    info = ToolInfo(name=name, parameters={}, output=output)
    m.step(Step(step_index=index, state="DONE", step_type="tool", tool_name=name, tool_info=info))


def _cards(out: list[Activity]) -> list[tuple[str, str]]:
    return [
        (a.call_id, "denied" if a.denied else "done") if isinstance(a, ToolDoneActivity) else (a.call_id, "refused")
        for a in out
        if isinstance(a, ToolDoneActivity | PermissionActivity)
    ]


def test_a_call_agy_denies_is_never_shown_done_first() -> None:
    """agy >= 1.2.17 reports a denied command as a "done" step without
    output and names the denial only in its result: without skip-permissions
    that "done" waits for the result, and a command the result does not
    name is shown done then (as is one that ran with output, at once)."""
    out: list[Activity] = []
    m = StepMapper(out.append, skip_permissions=False)
    _tool_done(m, 1, "run_command", None)
    _tool_done(m, 2, "run_command", "ran")
    _tool_done(m, 3, "write_to_file", None)
    _tool_done(m, 4, "list_dir", None)  # reads run: not held
    assert _cards(out) == [("step-2", "done"), ("step-4", "done")]
    m.apply_denied([DeniedAction(action="command", display_name="RunCommand")])
    assert _cards(out)[2:] == [("step-1", "refused"), ("step-1", "denied"), ("step-3", "done")]


def test_held_cards_come_out_when_the_turn_ends_without_a_result() -> None:
    out: list[Activity] = []
    m = StepMapper(out.append, skip_permissions=False)
    _tool_done(m, 1, "run_command", None)
    assert _cards(out) == []
    m.release()
    assert _cards(out) == [("step-1", "done")]


def test_nothing_is_held_when_agy_denies_nothing() -> None:
    for kwargs in ({"skip_permissions": True}, {"skip_permissions": False, "mode": "accept-edits"}):
        out: list[Activity] = []
        m = StepMapper(out.append, **kwargs)  # type: ignore[arg-type]
        _tool_done(m, 1, "write_to_file", None)
        assert _cards(out) == [("step-1", "done")], kwargs
