"""The harness engine against the real ``localharness`` binary (the pinned
wheel's), driven by the real ``agy-host`` CLI, the model replaced by the
kit's scripted model API over real HTTP."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from typing import Any

from agy_host.builtins.transcripts import TranscriptEntry, append_entries
from agy_host.testing.store import edit_bindings
from agy_host.testing.terminal import Pty

from .conftest import HarnessHome

WAIT = 5000


def ok(run: Any) -> dict[str, Any]:
    assert run.returncode == 0, run
    assert run.end.get("stop_reason") == "stop", run
    return run.end


def interrupt_when(hhome: HarnessHome, session: str, marker: str) -> tuple[int, dict[str, Any], float]:
    """``agy-host run`` until ``marker`` is on stdout, then Ctrl-C: (exit code,
    the last turn_end, seconds from the signal to the exit)."""
    argv = [sys.executable, "-m", "agy_host.cli.main", "run", "--engine", "harness", "--format", "json"]
    argv += ["--session", session, "go"]
    pipe = subprocess.PIPE
    proc = subprocess.Popen(argv, env=hhome.env, cwd=hhome.cwd, stdout=pipe, stderr=pipe, text=True)
    assert proc.stdout is not None
    seen = ""
    deadline = time.monotonic() + 60
    while marker not in seen and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen += line
    assert marker in seen, seen
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    waited = time.monotonic() - started
    ends = [json.loads(line) for line in (seen + out).splitlines() if '"turn_end"' in line]
    assert ends, (seen + out, err)
    return proc.returncode, ends[-1], waited


def one_turn(*replies: list[dict[str, Any]]) -> dict[str, Any]:
    return {"turns": [list(replies)]}


def test_text_thinking_and_usage(hhome: HarnessHome) -> None:
    model = hhome.serve(
        one_turn([{"thought": "let me think"}, {"text": ["Hel", "lo"]}, {"usage": {"input": 12, "output": 3}}])
    )
    run = hhome.turn("t1", "say hello", "--verbose")
    end = ok(run)
    assert run.text == "Hello" and end["response"] == "Hello", run
    assert "".join(e["delta"] for e in run.of("thought")) == "let me think", run
    assert end["usage"]["input_tokens"] == 12 and end["usage"]["output_tokens"] == 3, run
    [request] = model.requests()
    assert request["user_text"] == "say hello"
    assert request["body"]["generationConfig"], "the harness, not a fake, built the model request"
    assert not (hhome.root / "home" / ".gemini").exists(), "the harness wrote into the user's ~/.gemini"
    assert (hhome.state / "harness" / "storage").is_dir()


def test_usage_absent_is_reported_as_absent(hhome: HarnessHome) -> None:
    hhome.serve(one_turn([{"text": "no counts"}]))
    end = ok(hhome.turn("t2", "hi"))
    assert end.get("usage") is None, end


def test_a_token_budget_stops_the_turn_mid_way(hhome: HarnessHome) -> None:
    """The harness's usage is reported as it changes, so ``--max-tokens``
    stops a tool loop after the model call that crossed it, not at its end."""
    step = [
        {"call": {"name": "list_dir", "args": {"DirectoryPath": str(hhome.cwd)}}},
        {"usage": {"input": 400, "output": 20}},
    ]
    model = hhome.serve(one_turn(step, step, step, step, [{"text": "finished"}]))
    run = hhome.turn("t2b", "loop", "--max-tokens", "1000")
    assert run.returncode == 6, run
    assert run.end["error_kind"] == "budget" and "over --max-tokens 1,000" in run.end["error"], run
    assert len(model.requests()) < 5, "the turn ran to its end: the budget was only checked there"
    reports = run.of("usage")
    assert len(reports) >= 2 and reports[0]["cumulative"]["total_tokens"] == 420, run
    assert run.of("done")[0]["cumulative_usage"]["total_tokens"] >= 840, run


def test_harness_side_tools_become_cards_with_kind_output_and_diff(hhome: HarnessHome) -> None:
    target = str(hhome.cwd / "notes.txt")
    hhome.serve(
        one_turn(
            [
                {
                    "call": {
                        "name": "write_to_file",
                        "args": {"TargetFile": target, "CodeContent": "one\ntwo\n", "Overwrite": False},
                    }
                }
            ],
            [
                {
                    "call": {
                        "name": "run_command",
                        "args": {"CommandLine": "cat notes.txt", "Cwd": str(hhome.cwd), "WaitMsBeforeAsync": WAIT},
                    }
                }
            ],
            [{"call": {"name": "list_dir", "args": {"DirectoryPath": str(hhome.cwd)}}}],
            [{"text": "all done"}],
        )
    )
    run = hhome.turn("t3", "make notes", "--permissions", "auto")  # the cards are tested here, not asking
    ok(run)
    cards = {e["name"]: e for e in run.of("tool") if e["status"] == "done"}
    # the harness reports a written file as an edit of it, with its diff blocks
    assert set(cards) >= {"edit_file", "run_command", "list_dir"}, run
    assert cards["edit_file"]["kind"] == "edit"
    assert cards["edit_file"]["diff"]["new_text"] == "one\ntwo\n", cards["edit_file"]
    assert cards["run_command"]["kind"] == "execute" and "one\ntwo" in cards["run_command"]["output"], run
    assert cards["list_dir"]["kind"] == "read" and "notes.txt" in cards["list_dir"]["output"], run
    assert (hhome.cwd / "notes.txt").read_text() == "one\ntwo\n"
    assert run.text == "all done"


def test_host_tool_is_declared_in_process_and_answered_in_the_same_turn(hhome: HarnessHome) -> None:
    model = hhome.serve(
        one_turn([{"text": "calling. "}, {"call": {"name": "host_echo", "args": {"x": 1}}}], [{"text": "done."}])
    )
    run = hhome.turn("t4", "use the host tool")
    ok(run)
    [tool_use] = run.of("tool_use")
    assert (tool_use["name"], tool_use["args"]) == ("host_echo", {"x": 1}), run
    assert run.text == "calling. done.", run
    assert len(run.of("turn_start")) == 1
    first, second = model.requests()
    declared = [f["name"] for t in first["body"]["tools"] for f in t.get("functionDeclarations", [])]
    assert "host_echo" in declared
    contents = second["body"]["contents"]
    [response] = [p["functionResponse"] for c in contents for p in c["parts"] if "functionResponse" in p]
    assert response["name"] == "host_echo"
    assert 'echo {\\"x\\": 1}' in response["response"]["output"], response


def test_a_host_tool_and_a_read_run_under_a_policy_that_asks(hhome: HarnessHome) -> None:
    """A harness given policy rules denies every tool no rule matches
    (fail-closed): under ``ask`` (no terminal here) or ``rules`` only the
    gated tools may be refused, never a host tool or a read."""
    model = hhome.serve(
        one_turn(
            [{"call": {"name": "host_echo", "args": {"x": 2}}}],
            [{"call": {"name": "list_dir", "args": {"DirectoryPath": str(hhome.cwd)}}}],
            [{"text": "done"}],
        )
    )
    run = hhome.turn("t4b", "use the tools", "--permissions", "ask")
    ok(run)
    assert [e["name"] for e in run.of("tool_use")] == ["host_echo"], run
    assert [e["status"] for e in run.of("tool") if e["name"] == "list_dir"][-1] == "done", run
    assert "No policy rule matched" not in json.dumps(model.requests()[-1]["body"]["contents"]), run


def test_a_host_tools_images_reach_the_model(hhome: HarnessHome) -> None:
    model = hhome.serve(one_turn([{"call": {"name": "picture", "args": {}}}], [{"text": "seen"}]))
    ok(hhome.turn("t17", "look"))
    last = json.dumps(model.requests()[-1]["body"]["contents"])
    assert "here is the picture" in last
    assert "iVBORw0KGgo" in last, "the image went to the model with the tool's answer"


def test_deny_policy_is_enforced_inside_the_harness(hhome: HarnessHome) -> None:
    model = hhome.serve(
        one_turn(
            [
                {
                    "call": {
                        "name": "run_command",
                        "args": {"CommandLine": "touch made", "Cwd": str(hhome.cwd), "WaitMsBeforeAsync": WAIT},
                    }
                }
            ],
            [{"text": "ok"}],
        )
    )
    run = hhome.turn("t5", "run it", "--permissions", "deny")
    # issue 26 item 3: a tool the policy denied exits 5, as on ACP (it exited 0)
    assert run.returncode == 5 and run.end["stop_reason"] == "stop" and run.text == "ok", run
    assert not (hhome.cwd / "made").exists(), "the deny policy let a command run"
    last = model.requests()[-1]
    assert "denied by agy-host" in json.dumps(last["body"]["contents"]), last
    [refused] = run.of("permission")
    assert (refused["title"], refused["policy"], refused["selected"]) == ("run_command", "deny", "reject"), run
    assert "a static rule inside the harness" in refused["reason"], refused
    cards = [e for e in run.of("tool") if e["name"] == "run_command"]
    assert cards and cards[-1]["status"] == "denied", f"the static denial is shown as a denied tool card: {run!r}"


def test_the_default_with_nobody_to_ask_refuses_a_command_and_says_how_to_allow(hhome: HarnessHome) -> None:
    """Issue 26 item 1: no --permissions and no terminal: the harness asks
    agy-host (a dynamic rule), nobody can answer, the command is refused and
    the turn exits 5 saying how to allow (it ran the command unasked)."""
    call = {"CommandLine": "touch made", "Cwd": str(hhome.cwd), "WaitMsBeforeAsync": WAIT}
    hhome.serve(one_turn([{"call": {"name": "run_command", "args": call}}], [{"text": "ok"}]))
    run = hhome.turn("t5b", "run it")
    assert run.returncode == 5 and run.text == "ok", run
    assert not (hhome.cwd / "made").exists(), "the default let a command run with nobody asked"
    [refused] = run.of("permission")
    assert refused["policy"] == "ask" and "nobody could be asked" in refused["reason"], refused
    assert "To allow: --permissions auto" in run.end["error"] and run.of("done")[0]["error"] == run.end["error"], run
    # the harness's report of the hook's denial repeats that reason: not shown again as a warning
    assert not [n for n in run.of("notice") if n.get("code") == "harness-error"], run


def test_dynamic_policy_asks_the_host_and_its_answer_is_kept(hhome: HarnessHome) -> None:
    hhome.configure(permissions={"policy": "rules", "rules": [{"name": "run_command", "action": "deny"}]})
    hhome.serve(
        one_turn(
            [
                {
                    "call": {
                        "name": "run_command",
                        "args": {"CommandLine": "touch made", "Cwd": str(hhome.cwd), "WaitMsBeforeAsync": WAIT},
                    }
                }
            ],
            [{"text": "ok"}],
        )
    )
    run = hhome.turn("t6", "run it")
    assert run.end.get("stop_reason") == "stop", run
    [asked] = run.of("permission")
    assert asked["selected"] == "reject" and asked["policy"] == "rules", run
    assert asked["title"] == "Run: touch made"
    assert not (hhome.cwd / "made").exists()
    assert run.returncode == 5, "a denied tool is the documented exit 5"


def test_allow_for_the_session_is_asked_once_and_remembered(hhome: HarnessHome) -> None:
    """The harness keeps no memory of a dynamic decision: agy-host's broker
    does. The person answers "Allow run_command for the rest of this session" once; the
    second ``run_command`` of the session is allowed without asking."""
    hhome.configure(permissions={"policy": "ask"}, turn={"permission_timeout_seconds": 20})

    def touch(name: str) -> list[dict[str, Any]]:
        args = {"CommandLine": f"touch {name}", "Cwd": str(hhome.cwd), "WaitMsBeforeAsync": WAIT}
        return [{"call": {"name": "run_command", "args": args}}]

    hhome.serve(one_turn(touch("one"), touch("two"), [{"text": "ok"}]))
    with Pty() as tty:
        tty.type("2\n")  # one answer typed: a second prompt would wait, then be cancelled
        run = hhome.turn("t6b", "run both", env={"AGY_HOST_TTY": tty.path})
        screen = tty.screen()
    ok(run)
    assert (hhome.cwd / "one").exists() and (hhome.cwd / "two").exists(), run
    first, second = run.of("permission")
    assert first["selected"] == "allow_always" and first["policy"] == "ask", run
    assert second["selected"] == "allow_always" and second["policy"] == "remembered", run
    assert "earlier in session 't6b'" in second["reason"], second
    assert screen.count("asks for permission") == 1, screen
    assert "session 't6b' asks for permission" in screen, "the main agent's call is not a sub-agent's"
    assert (
        "2) Allow run_command for the rest of this session  [allow_always]"
        "  (if chosen, not asked again for this tool this session)" in screen
    ), screen


def test_resume_after_restart_continues_the_same_conversation(hhome: HarnessHome) -> None:
    model = hhome.serve({"turns": [[[{"text": "first"}]], [[{"echo": True}]]]})
    first = ok(hhome.turn("t7", "one"))
    second_run = hhome.turn("t7", "two")
    second = ok(second_run)
    assert first["conversation_id"] and second["conversation_id"] == first["conversation_id"], second_run
    assert second_run.text == "two"
    last = model.requests()[-1]
    assert last["turn"] == 2, "the model saw the earlier turn: the harness resumed it from its storage"


def test_unknown_conversation_fails_under_resume_and_is_replaced_without(hhome: HarnessHome) -> None:
    """The engines agree: ``--resume`` exits 4 with the harness's reason;
    without it the turn starts a new conversation and says so."""
    hhome.serve({"turns": [[[{"text": "first"}]], [[{"text": "fresh"}]]]})
    ok(hhome.turn("t8", "hi"))
    gone = "0123456789abcdef0123456789abcdef"
    edit_bindings(hhome.state, lambda bindings: bindings["t8@harness"].update(conversation_id=gone))
    run = hhome.turn("t8", "again", "--resume")
    assert run.returncode == 4, run
    assert run.end["error_kind"] == "no_session", run
    assert f"could not resume conversation {gone}" in run.end["error"], run
    run = hhome.turn("t8", "again")
    end = ok(run)
    assert end["replaced_conversation_id"] == gone and end["conversation_id"] not in (None, gone), run
    [notice] = [n for n in run.of("notice") if n.get("code") == "conversation-replaced"]
    assert f"could not continue conversation {gone}" in notice["message"], run


def test_budget_stop_is_a_clear_error(hhome: HarnessHome) -> None:
    hhome.configure(harness={"max_model_calls": 2})
    loop = [{"call": {"name": "list_dir", "args": {"DirectoryPath": "/"}}}]
    hhome.serve(one_turn(loop, loop, loop, loop, loop))
    run = hhome.turn("t9", "loop")
    assert run.returncode == 1, run
    assert "budget of model calls" in run.end["error"] and "max_model_calls" in run.end["error"], run


def test_endpoint_down_fails_visibly(hhome: HarnessHome) -> None:
    hhome.configure(harness={"api_retries": 1})
    hhome.serve(one_turn([{"text": "x"}]))
    assert hhome.model is not None
    hhome.model.close()  # nothing listens there any more
    run = hhome.turn("t10", "hi", timeout=180)
    assert run.returncode == 1, run
    assert run.end["stop_reason"] == "error" and run.end["error"].strip(), run


def test_bad_key_fails_with_the_providers_words(hhome: HarnessHome) -> None:
    hhome.serve(one_turn([{"text": "x"}]), api_key="the-right-key")
    run = hhome.turn("t11", "hi", timeout=180)
    assert run.returncode != 0, run
    assert "API key" in run.end["error"] or "401" in run.end["error"], run


def test_system_prompt_is_appended_to_antigravitys_and_not_sent_as_user_text(hhome: HarnessHome) -> None:
    model = hhome.serve(one_turn([{"text": "brief"}]))
    ok(hhome.turn("t12", "hi", "--system-prompt", "ALWAYS BE BRIEF"))
    [request] = model.requests()
    system = json.dumps(request["body"]["systemInstruction"])
    assert "ALWAYS BE BRIEF" in system and "Antigravity" in system
    assert "ALWAYS BE BRIEF" not in request["user_text"]
    hhome.configure(harness={"system_prompt_mode": "replace"})
    ok(hhome.turn("t12b", "hi", "--system-prompt", "ONLY THIS"))
    system = json.dumps(model.requests()[-1]["body"]["systemInstruction"])
    assert "ONLY THIS" in system and "You are Antigravity" not in system


def test_a_slash_command_is_the_users_text_verbatim_and_the_system_prompt_still_goes_in_the_config(
    hhome: HarnessHome,
) -> None:
    """The harness carries the system block out of band, so a conversation
    that starts with a command still gets it; the command reaches the model
    as the user's text alone (no digest, no system block in front)."""
    (hhome.cwd / ".git").mkdir(exist_ok=True)  # the AGENTS.md walk stops here
    (hhome.cwd / "AGENTS.md").write_text("Run the tests first.\n")
    elsewhere = [
        TranscriptEntry(v=1, ts="t", role="user", text="what does main do?", engine="acp", conversation_id="o-1"),
        TranscriptEntry(v=1, ts="t", role="assistant", text="It prints hi.", engine="acp", conversation_id="o-1"),
    ]
    append_entries("t12c", elsewhere, hhome.env)
    model = hhome.serve({"turns": [[[{"echo": True}]], [[{"echo": True}]]]})
    ok(hhome.turn("t12c", "/context", "--digest", "--system-prompt", "ALWAYS BE BRIEF"))
    ok(hhome.turn("t12c", "go on", "--digest"))
    command, plain = model.requests()
    assert command["user_text"] == "/context", command["user_text"]
    system = json.dumps(command["body"]["systemInstruction"])
    assert "ALWAYS BE BRIEF" in system and "Run the tests first." in system
    said = json.dumps(command["body"]["contents"])
    assert "ALWAYS BE BRIEF" not in said and "It prints hi." not in said
    assert plain["user_text"].endswith("go on") and "It prints hi." in plain["user_text"], "the digest came next"
    assert "ALWAYS BE BRIEF" not in json.dumps(plain["body"]["contents"])


def test_the_system_prompt_goes_in_the_config_also_behind_a_digest(hhome: HarnessHome) -> None:
    """The digest (a context resource) comes before the prompt's text, which
    the system block opens: the block still leaves the user's input."""
    entry = TranscriptEntry(v=1, ts="t", role="user", text="what does main do?", engine="acp", conversation_id="o")
    append_entries("t12d", [entry], hhome.env)
    model = hhome.serve(one_turn([{"echo": True}]))
    ok(hhome.turn("t12d", "hi", "--digest", "--system-prompt", "ALWAYS BE BRIEF"))
    [request] = model.requests()
    assert "ALWAYS BE BRIEF" in json.dumps(request["body"]["systemInstruction"])
    said = json.dumps(request["body"]["contents"])
    assert "ALWAYS BE BRIEF" not in said and "what does main do?" in said, said


def test_inactivity_halts_the_harness_and_the_next_turn_works(hhome: HarnessHome) -> None:
    hhome.configure(turn={"inactivity_minutes": 2.0 / 60})
    hhome.serve({"turns": [[[{"text": "partial "}, {"hang": True}]], [[{"text": "fine"}]]]})
    run = hhome.turn("t13", "hang")
    assert run.returncode == 3 and run.end["error_kind"] == "inactivity", run
    assert run.end["response"] == "partial ", run
    ok(hhome.turn("t13", "again"))


def test_ctrl_c_mid_text_aborts_with_the_harness_cancel_and_the_session_goes_on(hhome: HarnessHome) -> None:
    hhome.serve({"turns": [[[{"text": "A1 "}, {"sleep": 30}, {"text": "never"}]], [[{"text": "after"}]]]})
    code, end, waited = interrupt_when(hhome, "t14", "A1")
    assert code == 130, end
    assert end["stop_reason"] == "aborted", end
    assert waited < 10, f"the cancel took {waited:.1f}s"
    ok(hhome.turn("t14", "next"))


def test_ctrl_c_during_a_host_tool_cancels_it_and_the_session_goes_on(hhome: HarnessHome) -> None:
    slow = [{"text": "waiting. "}, {"call": {"name": "slow_tool", "args": {"seconds": 30}}}]
    hhome.serve({"turns": [[slow, [{"text": "never"}]], [[{"text": "after"}]]]})
    code, end, waited = interrupt_when(hhome, "t15", '"tool_use"')
    assert code == 130, end
    assert waited < 10, "the host tool was not cancelled"
    assert end["stop_reason"] == "aborted" and end["response"] == "waiting. ", end
    after = hhome.turn("t15", "next")
    ok(after)
    assert after.text == "after"


def test_a_local_openai_compatible_model(hhome: HarnessHome) -> None:
    model = hhome.serve(one_turn([{"text": ["lo", "cal"]}, {"usage": {"input": 5, "output": 2}}]))
    hhome.configure(harness={"openai_base_url": f"{model.url}/v1", "model": "llama-3"})
    run = hhome.turn("t16", "hi")
    end = ok(run)
    assert run.text == "local", run
    [request] = model.requests()
    assert request["path"] == "/v1/chat/completions" and request["model"] == "llama-3"
    assert request["body"]["stream"] is True
    assert end["usage"]["input_tokens"] == 5, end


def test_a_subagent_runs_under_its_parent_and_its_text_is_not_the_answer(hhome: HarnessHome) -> None:
    hhome.configure(harness={"subagents": True})
    task = {"TypeName": "research", "Role": "Researcher", "Prompt": "SUBTASK: find the thing"}
    invoke = {
        "name": "invoke_subagent",
        "args": {"Subagents": [task], "toolSummary": "Research", "toolAction": "Researching"},
    }
    hhome.serve(
        {
            "rules": [{"match": "SUBTASK", "replies": [[{"text": "found the thing"}]]}],
            "turns": [[[{"text": "delegating. "}, {"call": invoke}], [{"text": "done."}]]],
        }
    )
    run = hhome.turn("t18", "research it")
    end = ok(run)
    cards = [e for e in run.of("tool") if e["name"] == "invoke_subagent"]
    assert cards and cards[-1]["status"] == "done" and cards[-1]["kind"] == "think", run
    [said] = [e for e in run.of("notice") if e.get("code") == "subagent"]
    assert "found the thing" in said["message"], run
    assert "found the thing" not in end["response"] and end["response"].startswith("delegating. done."), run
