"""The stream-json parser: every envelope real builds print, and the degraded
paths (unknown events, bad fields, garbage), without a process."""

from __future__ import annotations

import msgspec

from agy_host_stream_json.wire import (
    InitEvent,
    LineBuffer,
    ResultEvent,
    StepEvent,
    Unknown,
    encode_user_line,
    parse,
)


def test_init_with_the_conversation_at_the_root_and_inside() -> None:
    root = parse(
        b'{"event":"init","conversation_id":"c-1","init":{"model":"m","tools":["a","b"],"permission_mode":"x"}}'
    )
    assert isinstance(root, InitEvent) and root.conversation_id == "c-1"
    assert root.info.model == "m" and root.info.tools == ["a", "b"]
    nested = parse(b'{"event":"init","init":{"conversation_id":"conv-777"}}')
    assert isinstance(nested, InitEvent) and nested.conversation_id == "conv-777"
    empty = parse(b'{"event":"init","conversation_id":""}')
    assert isinstance(empty, InitEvent) and empty.conversation_id is None


def test_steps_of_every_observed_type_decode() -> None:
    for step_type in ("user_input", "agent_response", "tool", "checkpoint", "system_message", "subagent"):
        for state in ("ACTIVE", "DONE", "ERROR"):
            line = msgspec.json.encode(
                {"event": "step_update", "step_update": {"step_type": step_type, "state": state}}
            )
            event = parse(line)
            assert isinstance(event, StepEvent) and event.step.step_type == step_type and event.step.state == state
    unseen = parse(b'{"event":"step_update","step_update":{"step_type":"hologram","state":"GLOWING","x":1}}')
    assert isinstance(unseen, StepEvent) and unseen.step.step_type == "hologram" and not unseen.dropped


def test_tool_info_output_and_error_shapes() -> None:
    line = (
        b'{"event":"step_update","step_update":{"step_index":2,"state":"ERROR","step_type":"tool",'
        b'"tool_name":"write_to_file","tool_info":{"name":"write_to_file","parameters":{"TargetFile":"/x"},'
        b'"error":{"type":"TOOL_ERROR","message":"nope"}}}}'
    )
    event = parse(line)
    assert isinstance(event, StepEvent)
    info = event.step.tool_info
    assert (
        info is not None
        and info.parameters == {"TargetFile": "/x"}
        and info.error == {"type": "TOOL_ERROR", "message": "nope"}
    )


def test_result_with_denied_actions_and_structured_output() -> None:
    line = (
        b'{"event":"result","result":{"status":"SUCCESS","response":"","denied_actions":'
        b'[{"action":"command","display_name":"RunCommand"}],"structured_output":{"a":1},"num_turns":2}}'
    )
    event = parse(line)
    assert isinstance(event, ResultEvent)
    assert event.result.denied_actions is not None and event.result.denied_actions[0].display_name == "RunCommand"
    assert event.result.structured_output == {"a": 1} and event.result.num_turns == 2


def test_root_shorthand_forms() -> None:
    step = parse(b'{"step_type":"tool","state":"ACTIVE","tool_name":"view_file"}')
    assert isinstance(step, StepEvent) and step.step.tool_name == "view_file"
    result = parse(b'{"status":"OK","response":"done"}')
    assert isinstance(result, ResultEvent) and result.result.response == "done"


def test_unknown_events_and_garbage_degrade() -> None:
    assert parse(b'{"event":"warp"}') == Unknown(reason="event:warp", head='{"event":"warp"}')
    assert isinstance(parse(b"not json at all"), Unknown) and parse(b"not json").reason == "not-json"  # type: ignore[union-attr]
    assert parse(b"[1,2]").reason == "not-an-object"  # type: ignore[union-attr]
    assert parse(b'{"event":"step_update"}').reason == "event:step_update"  # type: ignore[union-attr]


def test_a_field_of_the_wrong_type_is_dropped_and_named_not_the_line() -> None:
    line = (
        b'{"event":"step_update","step_update":{"step_index":"seven","state":"DONE","step_type":"agent_response",'
        b'"text_delta":"kept","usage":{"input_tokens":"12","output_tokens":[1]}}}'
    )
    event = parse(line)
    assert isinstance(event, StepEvent)
    assert event.step.text_delta == "kept" and event.step.step_index is None
    assert event.step.usage is not None and event.step.usage.input_tokens == 12  # lenient where it can be
    assert event.dropped == ["$.step_update.step_index", "$.step_update.usage.output_tokens"]


def test_go_may_put_u0085_inside_a_string_and_lines_split_on_newline_only() -> None:
    payload = '{"event":"step_update","step_update":{"step_type":"agent_response","text_delta":"a\u0085b\u2028c"}}'
    buf = LineBuffer()
    first, second = payload.encode()[:30], payload.encode()[30:] + b"\n"
    assert buf.feed(first) == []
    [line] = buf.feed(second)
    event = parse(line)
    assert isinstance(event, StepEvent) and event.step.text_delta == "a\u0085b\u2028c"


def test_line_buffer_keeps_partials_crlf_and_the_unterminated_tail() -> None:
    buf = LineBuffer()
    assert buf.feed(b'{"a":1}\r\n\n{"b"') == [b'{"a":1}']
    assert buf.feed(b":2}\n") == [b'{"b":2}']
    assert buf.feed(b'{"c":3}') == []
    assert buf.flush() == [b'{"c":3}']


def test_an_oversized_line_is_counted_not_kept() -> None:
    buf = LineBuffer(max_line=10)
    buf.feed(b"x" * 11)
    assert buf.overflows == 1


def test_the_user_line() -> None:
    line = encode_user_line('say "hi"\nplease')
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert msgspec.json.decode(line) == {"event": "user", "message": {"role": "user", "content": 'say "hi"\nplease'}}
