"""The stream-json driver against the fake agy: real subprocesses, real pipes.

Mirrors the ACP engine's driver suite (serialization, parks, timers, abort,
resume, doctor) and adds what only this dialect has: flags per process,
recycles on profile drift, usage deltas of a running total, denials, agy's
exit codes. Timeouts are injected small through the request and config.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from agy_host.contract.events import (
    Activity,
    BridgeCallActivity,
    NoticeActivity,
    TextActivity,
    ThoughtActivity,
    ToolDoneActivity,
    ToolErrorActivity,
    ToolStartActivity,
)
from agy_host.contract.prompt import ImageBlock, ResourceBlock, TextBlock
from agy_host.testing.contract import collect, outcome_of, text_of
from agy_host_stream_json.config import BinaryChoice
from agy_host_stream_json.driver import StreamJsonDriver
from agy_host_stream_json.engine import StreamJsonEngine

from ._support import flag, make_engine, notices, of_type, req, usages

Fake = Callable[..., Any]


async def one_turn(engine: StreamJsonEngine, request: Any = None) -> list[Activity]:
    async with engine.open_driver() as drv:
        return await collect(await drv.run(request or req()))


def use(engine: StreamJsonEngine, fake: Any) -> None:
    """Point an engine at another fake binary (the next spawn runs it)."""
    engine.binary = BinaryChoice(command=str(fake.bin), source="AGY_BIN", value=str(fake.bin), found=True)


async def test_happy_path_flags_stdin_line_text_and_usage(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("happy")
    engine = make_engine(tmp_path, fake.env)
    acts = await one_turn(engine, req(model="gemini-3.8-flash", effort="low", skip_permissions=True))
    out = outcome_of(acts)
    assert (out.status, out.stop_reason, out.agent_stop_reason, out.response) == ("ok", "stop", "SUCCESS", "HELLO")
    assert text_of(acts) == "HELLO"
    [argv] = fake.argvs()
    assert argv[:2] == ["--add-dir", os.getcwd()]
    assert (flag(argv, "--model"), flag(argv, "--effort"), flag(argv, "--mode")) == (
        "gemini-3.8-flash",
        "low",
        "accept-edits",
    )
    assert "--dangerously-skip-permissions" in argv and "--conversation" not in argv
    assert argv[argv.index("--input-format") :] == [
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--disable-slash-commands",
        "--print-timeout",
        "920s",  # the 20 s deadline plus the default 900 s margin
    ]
    assert fake.received() == [{"event": "user", "message": {"role": "user", "content": "hi"}}]
    [usage] = usages(acts)
    assert usage.cumulative is not None
    assert usage.turn.total_tokens == usage.cumulative.total_tokens == 1011  # the first result is both
    assert out.conversation_id == (fake.state_dir / "last").read_text()


async def test_second_turn_reuses_the_process_and_reports_the_delta(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy({"turns": [[{"say": "one"}], [{"say": "two", "usage": {"input_tokens": 500, "output_tokens": 7}}]]})
    engine = make_engine(tmp_path, fake.env)
    async with engine.open_driver() as drv:
        first = await collect(await drv.run(req("a")))
        cid = outcome_of(first).conversation_id
        second = await collect(await drv.run(req("b", conversation_id=cid)))
        assert drv.stats == {"spawns": 1, "turns": 2, "reused": 1, "recycles": 0}
    assert len(fake.argvs()) == 1
    assert text_of(second) == "two" and outcome_of(second).conversation_id == cid
    [u1], [u2] = usages(first), usages(second)
    assert (u2.turn.input_tokens, u2.turn.output_tokens, u2.turn.total_tokens) == (500, 7, 507)
    assert u2.cumulative is not None and u1.cumulative is not None
    assert u2.cumulative.total_tokens == u1.cumulative.total_tokens + 507  # type: ignore[operator]


async def test_resume_after_a_host_restart_continues_the_conversation(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy(
        {"turns": [[{"say": "first"}], [{"say": "second", "usage": {"input_tokens": 40, "output_tokens": 2}}]]}
    )
    first = outcome_of(await one_turn(make_engine(tmp_path, fake.env)))
    restarted = make_engine(tmp_path, fake.env)  # a new host process: nothing in memory
    acts = await one_turn(restarted, req(conversation_id=first.conversation_id))
    assert flag(fake.argvs()[-1], "--conversation") == first.conversation_id
    out = outcome_of(acts)
    assert (out.status, out.conversation_id, out.response) == ("ok", first.conversation_id, "second")
    [usage] = usages(acts)
    assert usage.turn.total_tokens == 42  # the turn's steps, not agy's running total
    assert usage.cumulative is not None and usage.cumulative.total_tokens > 42  # type: ignore[operator]


async def test_effort_only_for_models_that_take_it(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("happy")
    engine = make_engine(tmp_path, fake.env)
    async with engine.open_driver() as drv:
        claude = await collect(await drv.run(req(model="claude-sonnet-4-6", effort="high")))
        pro = await collect(await drv.run(req(model="gemini-3.1-pro", effort="medium")))
        named = await collect(await drv.run(req(model="Gemini 3.7 Flash (Low)")))
        default = await collect(await drv.run(req(model="gemini-3.8-flash")))
    argvs = fake.argvs()
    assert [flag(a, "--effort") for a in argvs] == [None, "high", None, "low"]
    assert flag(argvs[2], "--model") == "Gemini 3.7 Flash (Low)"
    assert any("fixed thinking budget" in n for n in notices(claude))
    assert any("has no medium effort" in n and "using high" in n for n in notices(pro))
    assert all(outcome_of(acts).status == "ok" for acts in (claude, pro, named, default))


async def test_profile_drift_recycles_with_the_first_matching_reason(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("happy")
    engine = make_engine(tmp_path, fake.env)
    async with engine.open_driver() as drv:
        cid = outcome_of(await collect(await drv.run(req(model="gemini-3.8-flash-low")))).conversation_id
        await collect(await drv.run(req(model="gemini-3.8-flash-high", conversation_id=cid, mode="plan")))
        await collect(await drv.run(req(model="gemini-3.8-flash-high", conversation_id=cid)))
        await collect(await drv.run(req(model="gemini-3.8-flash-high")))
        snap = drv.snapshot()
    assert snap.stats["recycles"] == 3 and snap.stats["spawns"] == 4
    assert snap.extra["recycle_reasons"] == {"model": 1, "mode": 1, "conversation-reset": 1}
    assert snap.last_recycle_reason == "conversation-reset"
    argvs = fake.argvs()
    assert [flag(a, "--conversation") for a in argvs] == [None, cid, cid, None]
    assert flag(argvs[1], "--mode") == "plan"


async def test_turns_are_serialized(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy({"turns": [[{"say": ["A1"]}, {"sleep": 0.2}, {"say": ["A2"]}]]})
    engine = make_engine(tmp_path, fake.env)
    order: list[str] = []
    async with engine.open_driver() as drv:

        async def one(tag: str, session: str) -> None:
            handle = await drv.run(req(text=tag, session=session))
            async for act in handle:
                order.append(f"{tag}:{type(act).__name__}")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, "a", "s1")
            await trio.sleep(0.01)
            nursery.start_soon(one, "b", "s2")
    assert order.index("a:OutcomeActivity") < order.index("b:TextActivity"), order
    assert [r["message"]["content"] for r in fake.received()] == ["a", "b"]


async def test_overall_deadline_fails_the_turn_and_kills_agy(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("tick")  # never idle
    engine = make_engine(tmp_path, fake.env)
    async with engine.open_driver() as drv:
        out = outcome_of(await collect(await drv.run(req(timeout_s=1.5, inactivity_s=10))))
        assert drv.state == "dead" and drv.kills == 1
    assert (out.status, out.error_kind) == ("error", "timeout")
    assert "exceeded the 1.5s turn deadline" in out.error
    assert fake.events("sigterm")


async def test_inactivity_fails_the_turn(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("slow")
    engine = make_engine(tmp_path, fake.env)
    out = outcome_of(await one_turn(engine, req(timeout_s=20, inactivity_s=0.5)))
    assert (out.status, out.error_kind) == ("error", "inactivity")
    assert "no output" in out.error


# The park scenario: P1, a pause (4 s with sleep_scale 4), P2. The deadline is
# 3 s, and agy's start-up counts against it: a 3.5 s park leaves 0.5 s of the
# pause unparked, so start-up and delivery have 2.5 s (a loaded runner's room).
PARK = {"sleep_scale": 4}


async def test_without_a_park_the_same_turn_times_out(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("park", **PARK)
    out = outcome_of(await one_turn(make_engine(tmp_path, fake.env), req(timeout_s=3.0, inactivity_s=10)))
    assert out.error_kind == "timeout" and out.response == "P1"


async def parked(drv: StreamJsonDriver, timeout_s: float, tool_s: float) -> list[Activity]:
    """Park on P1 for ``tool_s`` (the host tool runs while agy waits), then unpark."""
    handle = await drv.run(req(timeout_s=timeout_s, inactivity_s=10))
    seen: list[Activity] = []
    with trio.fail_after(20):
        async for act in handle:
            seen.append(act)
            if isinstance(act, TextActivity) and act.delta == "P1":
                handle.push_external(BridgeCallActivity(call_id="c1", name="host_tool"))
            if isinstance(act, BridgeCallActivity):
                assert drv.reentry() is handle
                await trio.sleep(tool_s)
                drv.kick_idle()
                assert drv.reentry() is None
    return seen


async def test_parked_time_does_not_count_and_kick_idle_resumes(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("park", **PARK)
    async with make_engine(tmp_path, fake.env).open_driver() as drv:
        out = outcome_of(await parked(drv, timeout_s=3.0, tool_s=3.5))
        assert drv.reentry() is None
    assert out.status == "ok" and out.response == "P1P2", out


async def test_the_deadline_still_fires_after_a_short_park(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("park", **PARK)
    async with make_engine(tmp_path, fake.env).open_driver() as drv:
        out = outcome_of(await parked(drv, timeout_s=3.0, tool_s=0.2))
    assert out.error_kind == "timeout" and out.response == "P1"


async def test_park_keeps_a_turn_alive_past_its_deadline(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("park", **PARK)
    engine = make_engine(tmp_path, fake.env)
    async with engine.open_driver() as drv:
        handle = await drv.run(req(timeout_s=3.0, inactivity_s=2.0))

        def on(act: Activity) -> None:
            if isinstance(act, TextActivity) and act.delta == "P1":
                handle.push_external(BridgeCallActivity(call_id="c1", name="host_tool"))

        out = outcome_of(await collect(handle, on=on))
    assert out.status == "ok" and out.response == "P1P2"


async def test_a_new_turn_on_the_parked_session_supersedes_it(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy({"conversation_id": "conv-1", "turns": [[{"say": ["P1"]}, {"hang": True}], [{"say": "NEXT"}]]})
    engine = make_engine(tmp_path, fake.env)
    async with engine.open_driver() as drv:
        handle = await drv.run(req())
        async for act in handle:
            if isinstance(act, TextActivity):
                handle.push_external(BridgeCallActivity(call_id="c1", name="host_tool"))
            if isinstance(act, BridgeCallActivity):
                break
        nxt = await drv.run(req(conversation_id="conv-1"))  # the user gave up waiting and typed again
        first = outcome_of(await collect(handle))
        second = outcome_of(await collect(nxt))
    assert first.aborted and first.response == "P1"
    assert (second.status, second.response) == ("ok", "NEXT")


async def test_abort_kills_agy_and_the_next_turn_resumes(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy({"turns": [[{"say": ["T0"]}, {"tick": {"every": 0.05}}], [{"say": "AFTER"}]]})
    engine = make_engine(tmp_path, fake.env)
    async with engine.open_driver() as drv:
        handle = await drv.run(req())
        acts = await collect(handle, on=lambda a: handle.abort("test") if isinstance(a, TextActivity) else None)
        out = outcome_of(acts)
        assert (out.status, out.stop_reason, out.aborted) == ("ok", "aborted", True)
        assert out.response.startswith("T0") and out.conversation_id
        assert drv.kills == 1 and drv.state == "dead"
        after = await collect(await drv.run(req(conversation_id=out.conversation_id)))
        nxt = outcome_of(after)
    assert (nxt.status, nxt.response, nxt.conversation_id) == ("ok", "AFTER", out.conversation_id)
    assert flag(fake.argvs()[1], "--conversation") == out.conversation_id
    assert fake.events("sigterm"), "abort kills the process group"
    [usage] = usages(after)
    assert usage.cumulative is not None and usage.cumulative.total_tokens > usage.turn.total_tokens  # type: ignore[operator]


async def test_usage_after_an_aborted_turn_is_the_next_turns_own(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy({"turns": [[{"say": "ONE"}], [{"say": ["T0"]}, {"tick": {"every": 0.05}}], [{"say": "THREE"}]]})
    engine = make_engine(tmp_path, fake.env)
    async with engine.open_driver() as drv:
        cid = outcome_of(await collect(await drv.run(req()))).conversation_id  # agy's running total is known
        handle = await drv.run(req(conversation_id=cid))
        await collect(handle, on=lambda a: handle.abort("test") if isinstance(a, TextActivity) else None)
        third = await collect(await drv.run(req(conversation_id=cid)))
    [usage] = usages(third)
    # agy's total also holds the killed turn's steps; the third turn reports its own step only
    assert (usage.turn.input_tokens, usage.turn.output_tokens) == (1030, 1)
    assert usage.cumulative is not None and usage.cumulative.input_tokens > 1010 + 1030  # type: ignore[operator]


async def test_abort_before_the_turn_starts(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("happy")
    engine = make_engine(tmp_path, fake.env)
    async with engine.open_driver() as drv:
        handle = await drv.run(req())
        handle.abort("early")
        out = outcome_of(await collect(handle))
    assert out.aborted and fake.argvs() == []


async def test_a_dead_processes_late_output_is_ignored(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy({"sigterm": "ignore", "turns": [[{"say": ["T0"]}, {"tick": {"every": 0.02}}], [{"say": "AFTER"}]]})
    engine = make_engine(tmp_path, fake.env, section={"kill_grace_seconds": 0.5})
    async with engine.open_driver() as drv:
        handle = await drv.run(req())
        out = outcome_of(
            await collect(handle, on=lambda a: handle.abort("test") if isinstance(a, TextActivity) else None)
        )
        nxt = await collect(await drv.run(req(conversation_id=out.conversation_id)))
        snap = drv.snapshot()
    assert snap.extra["stale_lines"] > 0  # ticks printed between SIGTERM (ignored) and SIGKILL
    assert text_of(nxt) == "AFTER"


async def test_crash_mid_turn_reports_stderr_and_the_next_turn_recovers(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy({"turns": [BUILTIN_CRASH, [{"say": "BACK"}]]})
    engine = make_engine(tmp_path, fake.env)
    async with engine.open_driver() as drv:
        first = outcome_of(await collect(await drv.run(req())))
        second = outcome_of(await collect(await drv.run(req(conversation_id=first.conversation_id))))
    assert (first.error_kind, first.response) == ("exited", "PARTIAL")
    assert "agy exited mid-turn (exit status 1)" in first.error and "fake-agy: crashing mid-turn" in first.error
    assert second.status == "ok" and second.response == "BACK"


BUILTIN_CRASH: list[dict[str, Any]] = [
    {"say": ["PARTIAL"]},
    {"exit": {"code": 1, "stderr": "fake-agy: crashing mid-turn"}},
]


async def test_spawn_failure_names_the_binary_and_the_fix(tmp_path: Path) -> None:
    engine = make_engine(tmp_path, {"AGY_BIN": str(tmp_path / "missing" / "agy")})
    out = outcome_of(await one_turn(engine))
    assert out.error_kind == "spawn"
    assert "could not start agy (AGY_BIN)" in out.error and "antigravity-cli" in out.error


async def test_a_missing_working_directory_is_not_reported_as_a_missing_agy(tmp_path: Path, fake_agy: Fake) -> None:
    engine = make_engine(tmp_path, fake_agy("happy").env)
    out = outcome_of(await one_turn(engine, req(cwd=str(tmp_path / "gone"))))
    assert out.error_kind == "spawn" and "working directory does not exist" in out.error


async def test_bad_model_is_a_usage_error_in_agys_words(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("happy")
    out = outcome_of(await one_turn(make_engine(tmp_path, fake.env), req(model="gemini-9-ultra")))
    assert out.error_kind == "usage"
    assert "model gemini-9-ultra is not recognized as a known model" in out.error
    assert "(agy exit status 1)" in out.error and "agy-host models" in out.error
    assert out.error.count("is not recognized") == 1  # the stderr statement repeats the result: shown once


async def test_a_suffixed_model_keeps_its_own_effort(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("happy")
    acts = await one_turn(make_engine(tmp_path, fake.env), req(model="gemini-3.8-flash-low", effort="high"))
    assert outcome_of(acts).status == "ok" and "--effort" not in fake.argvs()[0]
    assert any("already selects the low effort" in n for n in notices(acts))


async def test_not_signed_in_is_an_auth_error_with_the_fix(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("happy", signed_in=False)
    out = outcome_of(await one_turn(make_engine(tmp_path, fake.env)))
    assert out.error_kind == "auth"
    assert "authentication failed or timed out" in out.error and "Run 'agy' to log in" in out.error
    assert "not logged into Antigravity" not in out.error  # agy's log line, not a statement


async def test_quota_exit_3_shows_the_reset_time(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("quota")
    out = outcome_of(await one_turn(make_engine(tmp_path, fake.env)))
    assert (out.error_kind, out.agent_stop_reason) == ("agent", "ERROR")
    assert "Individual quota reached" in out.error and "quota resets in 34m13s (at about" in out.error
    assert "agy error: RESOURCE_EXHAUSTED 429 http (retryable)" in out.error
    assert out.error.endswith("(agy exit status 3)")


async def test_print_timeout_of_new_builds_is_a_timeout_not_success(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy({"turns": [[{"say": ["PART"]}, {"hang": True}]]})
    engine = make_engine(tmp_path, fake.env, section={"extra_args": ["--print-timeout", "1s"]})
    out = outcome_of(await one_turn(engine))
    assert (out.status, out.error_kind, out.agent_stop_reason) == ("error", "timeout", "SUCCESS")
    assert "[agy] print timeout after 1s with turn in progress" in out.error
    assert out.response == "PART"


async def test_print_timeout_of_old_builds(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy({"build": "1.1.24", "turns": [[{"hang": True}]]})
    engine = make_engine(tmp_path, fake.env, section={"extra_args": ["--print-timeout", "1s"]})
    out = outcome_of(await one_turn(engine))
    assert out.error_kind == "timeout" and "agy: timeout waiting for response" in out.error
    assert "(agy exit status 1)" in out.error


async def test_denied_tools_on_new_builds(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("tools")
    acts = await one_turn(make_engine(tmp_path, fake.env))
    done = {a.name: a for a in of_type(acts, ToolDoneActivity)}  # the last card state per tool
    assert done["view_file"].output == "3 lines, 44 bytes" and not done["view_file"].denied
    assert done["write_to_file"].denied and done["run_command"].denied
    assert any("denied 2 tool call(s)" in n and "--permissions skip" in n for n in notices(acts))
    assert outcome_of(acts).status == "ok"


async def test_denied_tools_on_old_builds(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("tools", build="1.1.24")
    acts = await one_turn(make_engine(tmp_path, fake.env))
    errors = {a.name: a for a in of_type(acts, ToolErrorActivity)}
    assert errors["run_command"].denied and "user denied permission" in errors["run_command"].message
    assert errors["write_to_file"].denied
    assert any("denied 2 tool call(s)" in n for n in notices(acts))


async def test_skip_permissions_runs_tools_and_edits_carry_a_diff(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("tools")
    engine = make_engine(tmp_path, fake.env)
    async with engine.open_driver() as drv:
        acts = await collect(await drv.run(req(skip_permissions=True)))
        assert drv.snapshot().extra["permission_mode"] == "always-proceed"
    starts = {a.name: a for a in of_type(acts, ToolStartActivity)}
    assert starts["view_file"].kind == "read" and starts["view_file"].locations == ["/w/a.txt"]
    assert starts["run_command"].kind == "execute" and starts["run_command"].title == "ls"
    done = {a.name: a for a in of_type(acts, ToolDoneActivity)}
    assert done["write_to_file"].diff is not None and done["write_to_file"].diff.new_text == "hi\n"
    assert done["write_to_file"].args["TargetFile"] == "/w/new.txt"
    assert done["run_command"].output == "a.txt\r\n" and not any(d.denied for d in done.values())
    assert not any("denied" in n for n in notices(acts))


async def test_frames_split_across_pipe_reads_and_cumulative_resends(tmp_path: Path, fake_agy: Fake) -> None:
    long = "Hello there, this reply is long enough to flip"
    fake = fake_agy(
        {
            "turns": [
                [
                    {"split": {"state": "ACTIVE", "step_type": "agent_response", "text_delta": "HALF-ONE-HALF-TWO "}},
                    {"say": [long, long + " the guard"]},
                    {"think": "pondering"},
                ]
            ]
        }
    )
    acts = await one_turn(make_engine(tmp_path, fake.env))
    assert text_of(acts) == "HALF-ONE-HALF-TWO " + long + " the guard"
    assert [a.delta for a in of_type(acts, ThoughtActivity)] == ["pondering"]


async def test_a_result_without_streamed_text_still_reaches_the_user(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy({"turns": [[{"result": {"response": "RESULT-BODY", "structured_output": {"ok": True}}}]]})
    acts = await one_turn(make_engine(tmp_path, fake.env))
    assert text_of(acts) == "RESULT-BODY" and outcome_of(acts).response == "RESULT-BODY"
    [structured] = [a for a in of_type(acts, NoticeActivity) if a.code == "structured-output"]
    assert json.loads(structured.message) == {"ok": True}


async def test_garbage_and_bad_fields_warn_and_the_turn_goes_on(tmp_path: Path, fake_agy: Fake) -> None:
    bad = {"step_index": "seven", "state": "DONE", "step_type": "agent_response", "text_delta": "kept"}
    fake = fake_agy({"turns": [[{"raw": "this is not json"}, {"line": {"event": "warp"}}, {"step": bad}]]})
    acts = await one_turn(make_engine(tmp_path, fake.env))
    assert text_of(acts) == "kept" and outcome_of(acts).status == "ok"
    found = notices(acts)
    assert len(found) == 2  # the unknown event is logged, not shown
    assert any("not a stream-json object" in n and "this is not json" in n for n in found)
    assert any("$.step_update.step_index" in n for n in found)


async def test_json_nested_too_deep_is_skipped_with_a_warning_and_the_result_still_counts(
    tmp_path: Path, fake_agy: Fake
) -> None:
    """A 6 KB line of brackets makes the decoder recurse past the limit: that
    line is garbage; the rest of the read, the result included, is not lost."""
    deep = '{"event": "step_update", "step_update": ' + "[" * 3000 + "]" * 3000 + "}"
    fake = fake_agy({"turns": [[{"raw": deep}, {"say": "kept"}]]})
    acts = await one_turn(make_engine(tmp_path, fake.env))
    assert text_of(acts) == "kept" and outcome_of(acts).status == "ok"
    assert any("not a stream-json object" in n for n in notices(acts))


async def test_images_are_refused_and_resources_inlined(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("echo")
    engine = make_engine(tmp_path, fake.env)
    image = req(prompt=[ImageBlock(data="AAAA", mime_type="image/png"), TextBlock(text="x")])
    out = outcome_of(await one_turn(engine, image))
    assert out.error_kind == "usage" and "cannot send images" in out.error and fake.argvs() == []
    res = req(prompt=[ResourceBlock(uri="urn:ctx", text="CONTEXT"), TextBlock(text="ask")])
    assert text_of(await one_turn(engine, res)) == "[urn:ctx]\nCONTEXT\n\nask"


async def test_plan_mode_passes_and_agys_warning_is_shown(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("happy")
    acts = await one_turn(make_engine(tmp_path, fake.env), req(mode="plan"))
    assert flag(fake.argvs()[0], "--mode") == "plan"
    assert any("--mode plan has no effect" in n for n in notices(acts))


async def test_an_unusable_conversation_id_starts_a_new_conversation_visibly(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("happy")
    acts = await one_turn(make_engine(tmp_path, fake.env), req(conversation_id="--model=x"))
    assert "--conversation" not in fake.argvs()[0]
    assert any("not one agy can continue" in n for n in notices(acts))
    refused = await one_turn(make_engine(tmp_path, fake.env), req(conversation_id="--model=x", resume=True))
    assert outcome_of(refused).error_kind == "no_session" and len(fake.argvs()) == 1


async def test_shutdown_closes_stdin_and_agy_exits_by_itself(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("happy")
    await one_turn(make_engine(tmp_path, fake.env))
    assert fake.events("stdin-eof") and fake.events("exit") == [{"_fake": "exit", "code": 0}]
    assert not fake.events("sigterm")


async def test_doctor_snapshot(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("happy")
    engine = make_engine(tmp_path, fake.env)
    async with engine.open_driver() as drv:
        out = outcome_of(await collect(await drv.run(req())))
        snap = drv.snapshot()
        live = engine.driver
    assert live is drv and isinstance(drv, StreamJsonDriver)
    assert engine.driver is None  # doctor only shows a driver that is open
    assert (snap.engine, snap.state, snap.conversation_id) == ("stream-json", "ready", out.conversation_id)
    assert snap.pid is not None and snap.stats == {"spawns": 1, "turns": 1, "reused": 0, "recycles": 0}
    events = [e.event for e in snap.lifecycle]
    assert events[:2] == ["turn-start", "spawn"]
    assert "--print-timeout 920s" in snap.extra["argv"] and snap.extra["agy_tools"] == 6
    assert [e.event for e in drv.snapshot().lifecycle][-2:] == ["exit", "closed"]


GONE = "0123abcd-0000-4000-8000-00000000dead"


async def test_a_conversation_agy_did_not_continue_is_replaced_visibly(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("happy", unknown_conversation="new")
    acts = await one_turn(make_engine(tmp_path, fake.env), req(conversation_id=GONE))
    out = outcome_of(acts)
    assert out.status == "ok" and out.conversation_id not in (None, GONE)
    [notice] = [a for a in acts if isinstance(a, NoticeActivity) and a.code == "conversation-replaced"]
    assert f"agy did not continue conversation {GONE}" in notice.message


async def test_resume_of_a_conversation_agy_did_not_continue_fails_before_its_answer(
    tmp_path: Path, fake_agy: Fake
) -> None:
    """--resume: the turn ends at agy's ``init`` (exit 4), no text of the new
    conversation is this turn's, and the binding keeps the old id."""
    fake = fake_agy("happy", unknown_conversation="new")
    acts = await one_turn(make_engine(tmp_path, fake.env), req(conversation_id=GONE, resume=True))
    out = outcome_of(acts)
    assert (out.status, out.error_kind, out.conversation_id) == ("error", "no_session", GONE), out
    assert f"agy did not continue conversation {GONE}" in out.error
    assert text_of(acts) == ""


async def test_a_conversation_agy_refuses_runs_the_turn_on_a_new_one(tmp_path: Path, fake_agy: Fake) -> None:
    """agy exits before opening a conversation it does not have: the turn
    runs again, once, on a new conversation (the engines agree)."""
    fake = fake_agy("happy")
    acts = await one_turn(make_engine(tmp_path, fake.env), req(conversation_id=GONE))
    out = outcome_of(acts)
    assert out.status == "ok" and out.conversation_id not in (None, GONE) and text_of(acts) == "HELLO", out
    [notice] = [a for a in acts if isinstance(a, NoticeActivity) and a.code == "conversation-replaced"]
    assert f"agy could not continue conversation {GONE}" in notice.message
    assert [flag(a, "--conversation") for a in fake.argvs()] == [GONE, None]


async def test_resume_of_a_conversation_agy_refuses_fails_with_agys_words(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("happy")
    out = outcome_of(await one_turn(make_engine(tmp_path, fake.env), req(conversation_id=GONE, resume=True)))
    assert (out.error_kind, out.conversation_id) == ("no_session", GONE), out
    assert f"conversation {GONE} not found" in out.error and len(fake.argvs()) == 1
