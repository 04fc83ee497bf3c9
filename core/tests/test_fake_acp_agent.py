"""The fake ACP agent, driven as a real subprocess over its stdio pipes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agy_host.testing.agents import FakeAgent
from agy_host.testing.client import AgentExited, AgentPipe, RawOutput, chunk_texts, is_update

Spawn = Callable[..., tuple[AgentPipe, FakeAgent]]
FAKE = [sys.executable, "-m", "agy_host.testing.acp.agent"]


@pytest.fixture
def spawn(fake_acp_agent: Callable[..., FakeAgent]) -> Iterator[Spawn]:
    pipes: list[AgentPipe] = []

    def start(scenario: Any = "happy", **options: Any) -> tuple[AgentPipe, FakeAgent]:
        agent = fake_acp_agent(scenario, **options)
        pipe = AgentPipe(agent.command)
        pipes.append(pipe)
        return pipe, agent

    yield start
    for pipe in pipes:
        pipe.kill()
        pipe.close()


def handshake(pipe: AgentPipe) -> str:
    init = pipe.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    assert init["result"]["protocolVersion"] == 1
    new = pipe.request("session/new", {"cwd": "/tmp", "mcpServers": []})
    return str(new["result"]["sessionId"])


def prompt(pipe: AgentPipe, sid: str, text: str = "hi") -> int:
    return int(pipe.start_request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}))


def run_prompt(pipe: AgentPipe, sid: str, text: str = "hi") -> tuple[list[Any], dict[str, Any]]:
    return pipe.wait_response(prompt(pipe, sid, text))


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.02)


# ---------------------------------------------------------------------------
# handshake, session, prompt
# ---------------------------------------------------------------------------


def test_happy_handshake_session_and_stream(spawn: Spawn) -> None:
    pipe, agent = spawn("happy")
    init = pipe.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    result = init["result"]
    assert result["agentInfo"] == {"name": "fake-acp", "title": "Fake ACP", "version": "fake-1"}
    assert result["agentCapabilities"]["loadSession"] is True
    assert result["authMethods"] == []
    new = pipe.request("session/new", {"cwd": "/tmp", "mcpServers": []})
    assert new["result"]["sessionId"] == "fake-session-0001"
    assert [o["id"] for o in new["result"]["configOptions"]] == ["model", "mode"]
    before, response = run_prompt(pipe, "fake-session-0001")
    assert chunk_texts(before) == ["HE", "LLO"]
    assert response["result"] == {"stopReason": "end_turn"}
    assert agent.methods() == ["initialize", "session/new", "session/prompt"]
    assert agent.received()[2]["params"]["prompt"] == [{"type": "text", "text": "hi"}]


def test_echo_returns_the_prompt_text(spawn: Spawn) -> None:
    pipe, _ = spawn("echo")
    sid = handshake(pipe)
    before, response = run_prompt(pipe, sid, "say this back")
    assert chunk_texts(before) == ["say this back"]
    assert response["result"]["stopReason"] == "end_turn"


def test_echo_with_prefix_and_resources(spawn: Spawn) -> None:
    pipe, _ = spawn({"prompt": [{"echo": {"prefix": "> ", "resources": True}}]})
    sid = handshake(pipe)
    blocks = [
        {"type": "resource", "resource": {"uri": "urn:x", "mimeType": "text/markdown", "text": "DIGEST"}},
        {"type": "text", "text": "ASK"},
    ]
    msg_id = pipe.start_request("session/prompt", {"sessionId": sid, "prompt": blocks})
    before, _ = pipe.wait_response(msg_id)
    assert chunk_texts(before) == ["> DIGEST\nASK"]


def test_nth_prompt_runs_nth_list_and_the_last_repeats(spawn: Spawn) -> None:
    pipe, _ = spawn({"prompts": [[{"chunk": "A"}], [{"chunk": "B"}, {"stop": "max_tokens"}]]})
    sid = handshake(pipe)
    results = [run_prompt(pipe, sid) for _ in range(3)]
    assert [chunk_texts(b) for b, _ in results] == [["A"], ["B"], ["B"]]
    assert [r["result"]["stopReason"] for _, r in results] == ["end_turn", "max_tokens", "max_tokens"]


def test_generated_session_ids_are_fresh(spawn: Spawn) -> None:
    pipe, _ = spawn("happy", session_id="generate")
    pipe.request("initialize", {"protocolVersion": 1})
    a = pipe.request("session/new", {"cwd": "/", "mcpServers": []})["result"]["sessionId"]
    b = pipe.request("session/new", {"cwd": "/", "mcpServers": []})["result"]["sessionId"]
    assert a != b and len(a) == 36


def test_set_config_option_echoes_updated_options(spawn: Spawn) -> None:
    pipe, _ = spawn("happy")
    sid = handshake(pipe)
    response = pipe.request(
        "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "fake-model-low"}
    )
    options = {o["id"]: o["currentValue"] for o in response["result"]["configOptions"]}
    assert options == {"model": "fake-model-low", "mode": "default"}
    bad = pipe.request("session/set_config_option", {"sessionId": sid, "configId": "colour", "value": "red"})
    assert bad["error"]["code"] == -32602
    assert bad["error"]["data"]["known"] == ["model", "mode"]
    assert pipe.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"})["result"] == {}
    again = pipe.request(
        "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "fake-model-high"}
    )
    assert {o["id"]: o["currentValue"] for o in again["result"]["configOptions"]}["mode"] == "yolo"


def test_close_unknown_method_and_unknown_session(spawn: Spawn) -> None:
    pipe, _ = spawn("happy")
    sid = handshake(pipe)
    assert pipe.request("session/close", {"sessionId": sid})["result"] == {}
    unknown = pipe.request("session/fork", {"sessionId": sid})
    assert unknown["error"] == {"code": -32601, "message": "Method not found", "data": {"method": "session/fork"}}
    gone = pipe.request("session/prompt", {"sessionId": sid, "prompt": []})
    assert gone["error"]["code"] == -32602
    assert "unknown sessionId" in gone["error"]["data"]["message"]


# ---------------------------------------------------------------------------
# permission and question
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "texts"),
    [
        ({"outcome": {"outcome": "selected", "optionId": "allow"}}, ["PER", "MIS"]),
        ({"outcome": {"outcome": "selected", "optionId": "deny"}}, ["DENIED"]),
        ({"outcome": {"outcome": "cancelled"}}, ["NO ANSWER"]),
    ],
)
def test_permission_request_uses_id_zero_and_branches(spawn: Spawn, answer: dict[str, Any], texts: list[str]) -> None:
    pipe, agent = spawn("permission")
    sid = handshake(pipe)
    msg_id = prompt(pipe, sid)
    [request] = pipe.read_until(lambda m: isinstance(m, dict) and m.get("method") == "session/request_permission")
    assert isinstance(request, dict)
    assert request["id"] == 0
    params = request["params"]
    assert params["sessionId"] == sid
    assert [(o["optionId"], o["kind"]) for o in params["options"]] == [("allow", "allow_once"), ("deny", "reject_once")]
    pipe.respond(0, answer)
    before, response = pipe.wait_response(msg_id)
    assert chunk_texts(before) == texts
    assert response["result"]["stopReason"] == "end_turn"
    assert {"jsonrpc": "2.0", "id": 0, "result": answer} in agent.received()
    assert agent.events("permission-answer")


def test_question_options_are_answers(spawn: Spawn) -> None:
    pipe, agent = spawn("question")
    sid = handshake(pipe)
    msg_id = prompt(pipe, sid)
    got = pipe.read_until(lambda m: isinstance(m, dict) and m.get("method") == "session/request_permission")
    tool_call = got[0]
    assert isinstance(tool_call, dict) and is_update(tool_call, "tool_call")
    assert tool_call["params"]["update"]["toolCallId"] == "interaction_d316f47f"
    request = got[-1]
    assert isinstance(request, dict)
    assert {o["kind"] for o in request["params"]["options"]} == {"allow_once"}
    assert request["params"]["toolCall"]["toolCallId"] == "interaction_d316f47f"
    pipe.respond(request["id"], {"outcome": {"outcome": "selected", "optionId": "2"}})
    before, response = pipe.wait_response(msg_id)
    assert response["result"]["stopReason"] == "end_turn"
    updates = [m["params"]["update"] for m in before if isinstance(m, dict)]
    assert updates[0] == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "interaction_d316f47f",
        "status": "completed",
        "rawOutput": "Response received",
    }
    assert chunk_texts(before) == ["Blue"]
    assert agent.events("permission-answer")[0]["optionId"] == "2"


def test_unknown_option_is_reported_not_swallowed(spawn: Spawn) -> None:
    pipe, agent = spawn("permission")
    sid = handshake(pipe)
    msg_id = prompt(pipe, sid)
    pipe.read_until(lambda m: isinstance(m, dict) and m.get("method") == "session/request_permission")
    pipe.respond(0, {"outcome": {"outcome": "selected", "optionId": "maybe"}})
    before, _ = pipe.wait_response(msg_id)
    assert chunk_texts(before) == []
    assert agent.events("bad-option")[0]["offered"] == ["allow", "deny"]
    pipe.wait_stderr("unknown optionId 'maybe'")


def test_permission_ids_count_up_from_zero(spawn: Spawn) -> None:
    pipe, _ = spawn({"prompt": [{"permission": {}}, {"permission": {}}]})
    sid = handshake(pipe)
    msg_id = prompt(pipe, sid)
    for expected in (0, 1):
        [req] = pipe.read_until(lambda m: isinstance(m, dict) and m.get("method") == "session/request_permission")
        assert isinstance(req, dict) and req["id"] == expected
        pipe.respond(req["id"], {"outcome": {"outcome": "selected", "optionId": "allow"}})
    _, response = pipe.wait_response(msg_id)
    assert response["result"]["stopReason"] == "end_turn"


@pytest.mark.parametrize(
    ("reply", "texts"),
    [
        ({"error": {"code": -32603, "message": "client capability not enabled: fs/read_text_file"}}, ["REJECTED"]),
        ({"result": {"content": "file body"}}, ["READ"]),
    ],
)
def test_generic_agent_request_branches_on_error_or_result(
    spawn: Spawn, reply: dict[str, Any], texts: list[str]
) -> None:
    step = {
        "request": {
            "method": "fs/read_text_file",
            "params": {"sessionId": "<session>", "path": "/etc/hostname"},
            "branches": {"error": [{"chunk": "REJECTED"}], "result": [{"chunk": "READ"}]},
        }
    }
    pipe, agent = spawn({"prompt": [step]})
    sid = handshake(pipe)
    msg_id = prompt(pipe, sid)
    [req] = pipe.read_until(lambda m: isinstance(m, dict) and m.get("method") == "fs/read_text_file")
    assert isinstance(req, dict)
    assert req["params"] == {"sessionId": sid, "path": "/etc/hostname"}
    pipe.send({"jsonrpc": "2.0", "id": req["id"], **reply})
    before, response = pipe.wait_response(msg_id)
    assert chunk_texts(before) == texts
    assert response["result"]["stopReason"] == "end_turn"
    assert agent.events("request-answer")[0]["method"] == "fs/read_text_file"


# ---------------------------------------------------------------------------
# cancel
# ---------------------------------------------------------------------------


def test_cancel_unsupported_rejects_request_and_ignores_notification(spawn: Spawn) -> None:
    pipe, agent = spawn("cancel-unsupported", sleep_scale=0.2)
    sid = handshake(pipe)
    prompt(pipe, sid)
    got = pipe.read_until(lambda m: chunk_texts([m]) == ["tick"])
    assert chunk_texts(got) == ["C1", "tick"]
    response = pipe.request("session/cancel", {"sessionId": sid})
    assert response["error"] == {"code": -32601, "message": "Method not found", "data": {"method": "session/cancel"}}
    pipe.notify("session/cancel", {"sessionId": sid})
    # a request after the notification proves the agent has read it
    pipe.request("ping", {})
    pipe.stash.clear()
    more = pipe.read_until(lambda m: len(chunk_texts([m])) > 0)
    more += pipe.read_until(lambda m: len(chunk_texts([m])) > 0)
    assert chunk_texts(more) == ["tick", "tick"]
    assert [e["via"] for e in agent.events("cancel")] == ["request", "notification"]


def test_cancel_graceful_notification_ends_prompt_cancelled(spawn: Spawn) -> None:
    pipe, _ = spawn("cancel-graceful")
    sid = handshake(pipe)
    msg_id = prompt(pipe, sid)
    pipe.read_until(lambda m: chunk_texts([m]) == ["C1"])
    pipe.notify("session/cancel", {"sessionId": sid})
    _, response = pipe.wait_response(msg_id)
    assert response["result"] == {"stopReason": "cancelled"}


def test_cancel_graceful_request_answers_after_the_prompt(spawn: Spawn) -> None:
    pipe, _ = spawn("slow")
    sid = handshake(pipe)
    prompt_id = prompt(pipe, sid)
    cancel_id = pipe.start_request("session/cancel", {"sessionId": sid})
    got = pipe.read_until(lambda m: isinstance(m, dict) and m.get("id") == cancel_id)
    ids = [m.get("id") for m in got if isinstance(m, dict)]
    assert ids == [prompt_id, cancel_id]
    assert got[0] == {"jsonrpc": "2.0", "id": prompt_id, "result": {"stopReason": "cancelled"}}
    assert got[1] == {"jsonrpc": "2.0", "id": cancel_id, "result": {}}


def test_cancel_while_permission_is_pending(spawn: Spawn) -> None:
    pipe, _ = spawn("permission")
    sid = handshake(pipe)
    msg_id = prompt(pipe, sid)
    pipe.read_until(lambda m: isinstance(m, dict) and m.get("method") == "session/request_permission")
    pipe.notify("session/cancel", {"sessionId": sid})
    _, response = pipe.wait_response(msg_id)
    assert response["result"]["stopReason"] == "cancelled"
    # the client's late "cancelled" answer is still accepted and logged
    pipe.respond(0, {"outcome": {"outcome": "cancelled"}})
    assert pipe.request("session/close", {"sessionId": sid})["result"] == {}


def test_cancel_knob_from_environment(fake_acp_agent: Callable[..., FakeAgent]) -> None:
    agent = fake_acp_agent("cancel-graceful")
    env = {**os.environ, "AGY_FAKE_ACP_CANCEL": "unsupported", "AGY_FAKE_ACP_SLEEP_SCALE": "0.1"}
    with AgentPipe(agent.command, env=env) as pipe:
        sid = handshake(pipe)
        prompt(pipe, sid)
        response = pipe.request("session/cancel", {"sessionId": sid})
        assert response["error"]["code"] == -32601
        pipe.kill()


def test_scenario_and_log_from_environment(tmp_path: Path) -> None:
    log = tmp_path / "env.log"
    env = {**os.environ, "AGY_FAKE_ACP_SCENARIO": "echo", "AGY_FAKE_ACP_LOG": str(log), "AGY_FAKE_ACP_BOGUS": "1"}
    with AgentPipe(FAKE, env=env) as pipe:
        sid = handshake(pipe)
        before, _ = run_prompt(pipe, sid, "from env")
        assert chunk_texts(before) == ["from env"]
        pipe.wait_stderr("ignoring unknown env AGY_FAKE_ACP_BOGUS")
    assert [json.loads(line).get("method") for line in log.read_text().splitlines()][:3] == [
        "initialize",
        "session/new",
        "session/prompt",
    ]


# ---------------------------------------------------------------------------
# load, auth
# ---------------------------------------------------------------------------


def test_load_replay_streams_history_before_the_answer(spawn: Spawn) -> None:
    pipe, _ = spawn("load-replay")
    pipe.request("initialize", {"protocolVersion": 1})
    msg_id = pipe.start_request("session/load", {"sessionId": "old-1", "cwd": "/tmp", "mcpServers": []})
    before, response = pipe.wait_response(msg_id)
    assert chunk_texts(before, "user_message_chunk") == ["OLD USER"]
    assert chunk_texts(before) == ["OLD REPLY FULL TEXT"]
    assert all(m["params"]["sessionId"] == "old-1" for m in before if isinstance(m, dict))
    assert "configOptions" in response["result"] and "sessionId" not in response["result"]
    live, end = run_prompt(pipe, "old-1")
    assert chunk_texts(live) == ["LIVE-1", "LIVE-2"]
    assert end["result"]["stopReason"] == "end_turn"


def test_load_fails(spawn: Spawn) -> None:
    pipe, _ = spawn("load-fails")
    pipe.request("initialize", {"protocolVersion": 1})
    response = pipe.request("session/load", {"sessionId": "nope", "cwd": "/", "mcpServers": []})
    assert response["error"]["code"] == -32000
    assert response["error"]["message"] == "unknown session"


def test_auth_required_error_shape_and_authenticate(spawn: Spawn) -> None:
    pipe, _ = spawn("auth-required")
    init = pipe.request("initialize", {"protocolVersion": 1})
    assert [m["id"] for m in init["result"]["authMethods"]] == ["oauth-personal"]
    refused = pipe.request("session/new", {"cwd": "/", "mcpServers": []})
    error = refused["error"]
    assert error["code"] == -32000
    assert error["message"] == "Authentication required"
    assert "authenticate" in error["data"]["message"]
    assert pipe.request("authenticate", {"methodId": "oauth-personal"})["result"] == {}
    assert pipe.request("session/new", {"cwd": "/", "mcpServers": []})["result"]["sessionId"]


def test_authenticate_prints_the_signin_line(spawn: Spawn) -> None:
    pipe, _ = spawn("auth-required", auth_url="https://accounts.example/o?x=1")
    pipe.request("initialize", {"protocolVersion": 1})
    msg_id = pipe.start_request("authenticate", {"methodId": "oauth-personal"})
    before, _ = pipe.wait_response(msg_id)
    assert before == [
        RawOutput("Open the following link to authenticate the ACP server: https://accounts.example/o?x=1")
    ]


# ---------------------------------------------------------------------------
# tool calls, usage, raw output
# ---------------------------------------------------------------------------


def test_tool_diff_supersedes_under_another_id(spawn: Spawn) -> None:
    pipe, _ = spawn("tool-diff")
    sid = handshake(pipe)
    before, response = run_prompt(pipe, sid)
    updates = [m["params"]["update"] for m in before if isinstance(m, dict)]
    assert [(u["sessionUpdate"], u.get("toolCallId"), u.get("status")) for u in updates] == [
        ("tool_call", "33eb71a04aae4d4c9b85081f20ab5169", "pending"),
        ("tool_call_update", "33eb71a04aae4d4c9b85081f20ab5169", "in_progress"),
        ("tool_call_update", f"{sid}:7", "completed"),
        ("agent_message_chunk", None, None),
    ]
    assert updates[0]["content"][0]["type"] == "diff" and "oldText" not in updates[0]["content"][0]
    assert updates[2]["rawOutput"] == "Create probe.txt"
    assert chunk_texts(before) == ["DONE"] and response["result"]["stopReason"] == "end_turn"


def test_raw_update_passthrough_keeps_duplicates_and_meta(spawn: Spawn) -> None:
    mcp = {
        "toolCallId": "e5a2",
        "title": "pi-bridge_bridge_echo",
        "kind": "other",
        "status": "pending",
        "rawInput": {"arguments": {"text": "PROBE-9"}},
        "_meta": {"mcp": {"tool": "bridge_echo", "server": "pi-bridge"}, "is_mcp_tool_call": True},
    }
    pipe, _ = spawn({"prompt": [{"tool_call": mcp}, {"tool_call": mcp}, {"update": {"sessionUpdate": "weird_future"}}]})
    sid = handshake(pipe)
    before, _ = run_prompt(pipe, sid)
    updates = [m["params"]["update"] for m in before if isinstance(m, dict)]
    assert updates == [{"sessionUpdate": "tool_call", **mcp}] * 2 + [{"sessionUpdate": "weird_future"}]


def test_usage_update_and_prompt_usage(spawn: Spawn) -> None:
    pipe, _ = spawn("usage")
    sid = handshake(pipe)
    before, response = run_prompt(pipe, sid)
    [usage] = [m["params"]["update"] for m in before if is_update(m, "usage_update") and isinstance(m, dict)]
    assert usage == {
        "sessionUpdate": "usage_update",
        "used": 1234,
        "size": 200000,
        "cost": {"amount": 0.0123, "currency": "USD"},
    }
    assert response["result"]["usage"]["totalTokens"] == 1834
    assert response["result"]["stopReason"] == "end_turn"


def test_prompt_error_response(spawn: Spawn) -> None:
    pipe, _ = spawn("prompt-error")
    sid = handshake(pipe)
    before, response = run_prompt(pipe, sid)
    assert chunk_texts(before) == ["E"]
    assert response["error"] == {"code": -32603, "message": "Internal error", "data": {"details": "fake failure"}}


def test_raw_stdout_stderr_and_thought_steps(spawn: Spawn) -> None:
    steps = [{"thought": "hmm"}, {"raw_stdout": "NOT JSON"}, {"stderr": "to stderr"}, {"stderr_flood_bytes": 200_000}]
    pipe, _ = spawn({"prompt": steps, "stderr_lines": ["I0903 init.cc:78] starting"]})
    sid = handshake(pipe)
    before, _ = run_prompt(pipe, sid)
    assert chunk_texts(before, "agent_thought_chunk") == ["hmm"]
    assert RawOutput("NOT JSON") in before
    wait_for(lambda: len(pipe.stderr) >= 200_000)
    assert pipe.stderr.startswith("I0903 init.cc:78] starting\n")
    assert "to stderr" in pipe.stderr


def test_garbage_before_initialize_answer(spawn: Spawn) -> None:
    pipe, _ = spawn("happy", initialize="garbage-first")
    msg_id = pipe.start_request("initialize", {"protocolVersion": 1})
    before, response = pipe.wait_response(msg_id)
    assert len(before) == 1 and isinstance(before[0], RawOutput)
    assert response["result"]["agentInfo"]["name"] == "fake-acp"


def test_flood_sends_every_chunk(spawn: Spawn) -> None:
    pipe, _ = spawn("flood", flood_count=20_000, flood_text="z")
    sid = handshake(pipe)
    before, response = run_prompt(pipe, sid)
    assert len(before) == 20_000
    assert set(chunk_texts(before)) == {"z"}
    assert response["result"]["stopReason"] == "end_turn"


def test_flood_of_200k_chunks_completes(fake_acp_agent: Callable[..., FakeAgent], tmp_path: Path) -> None:
    agent = fake_acp_agent("flood", flood_count=200_000)
    out_path = tmp_path / "flood.out"
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "session/prompt",
            "params": {"sessionId": "fake-session-0001", "prompt": []},
        },
    ]
    end = b'{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}\n'
    with out_path.open("wb") as out:
        proc = subprocess.Popen(agent.command, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.DEVNULL)
        assert proc.stdin is not None
        proc.stdin.write(b"".join(json.dumps(f).encode() + b"\n" for f in frames))
        proc.stdin.flush()
        try:
            wait_for(lambda: out_path.stat().st_size > len(end) and _tail(out_path, len(end)) == end, timeout=30)
        finally:
            proc.kill()
            proc.wait()
    lines = out_path.read_bytes().count(b"\n")
    assert lines == 2 + 200_000 + 1


def _tail(path: Path, n: int) -> bytes:
    with path.open("rb") as fh:
        fh.seek(-n, os.SEEK_END)
        return fh.read()


# ---------------------------------------------------------------------------
# process behaviour: crash, hang, EOF, framing, log, signals
# ---------------------------------------------------------------------------


def test_crash_mid_turn_exit_code_and_stderr(spawn: Spawn) -> None:
    pipe, agent = spawn("crash-mid-turn")
    sid = handshake(pipe)
    prompt(pipe, sid)
    first = pipe.read()
    assert chunk_texts([first]) == ["PARTIAL"]
    with pytest.raises(AgentExited):
        pipe.read()
    assert pipe.wait() == 3
    assert "fake: crashing mid-turn" in pipe.stderr
    assert agent.events("crash") == [{"_fake": "crash", "code": 3}]


def test_hang_on_initialize(spawn: Spawn) -> None:
    pipe, agent = spawn("hang-initialize")
    pipe.start_request("initialize", {"protocolVersion": 1})
    wait_for(lambda: bool(agent.events("initialize-hang")))
    with pytest.raises(TimeoutError):
        pipe.read(timeout=0.3)
    assert pipe.proc.poll() is None
    assert agent.methods() == ["initialize"]


def test_exit_before_initialize(spawn: Spawn) -> None:
    pipe, agent = spawn("exit-before-initialize")
    pipe.start_request("initialize", {"protocolVersion": 1})
    assert pipe.wait() == 1
    assert "exiting before initialize" in pipe.stderr
    assert agent.methods() == ["initialize"]


def test_stdin_eof_exits_zero(spawn: Spawn) -> None:
    pipe, agent = spawn("happy")
    handshake(pipe)
    pipe.close_stdin()
    assert pipe.wait() == 0
    assert agent.events("stdin-eof")


def test_stdin_eof_ignored_when_scripted(spawn: Spawn) -> None:
    pipe, agent = spawn("happy", stdin_eof="ignore")
    handshake(pipe)
    pipe.close_stdin()
    wait_for(lambda: bool(agent.events("stdin-eof")))
    assert pipe.proc.poll() is None


def test_partial_lines_and_batched_writes(spawn: Spawn) -> None:
    pipe, _ = spawn("happy")
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}).encode()
    pipe.write(init[:17])
    time.sleep(0.1)
    with pytest.raises(TimeoutError):
        pipe.read(timeout=0.1)
    new = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}})
    odd = json.dumps({"jsonrpc": "2.0", "id": "three", "method": "nope"})
    pipe.write(init[17:] + b"\n" + new.encode() + b"\r\n\n" + odd.encode() + b"\n")
    got = [pipe.read() for _ in range(3)]
    assert [m["id"] for m in got if isinstance(m, dict)] == [1, 2, "three"]
    assert isinstance(got[2], dict) and got[2]["error"]["code"] == -32601


def test_non_json_input_gets_parse_error_and_is_logged(spawn: Spawn) -> None:
    pipe, agent = spawn("happy")
    pipe.write(b"this is {not json\n")
    reply = pipe.read()
    assert reply == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    assert agent.received() == [{"_unparsed": "this is {not json"}]


def test_log_survives_sigkill(spawn: Spawn) -> None:
    pipe, agent = spawn("happy")
    sent: list[dict[str, Any]] = []
    for i in range(30):
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": f"note/{i}"}
        if i % 3 == 0:
            frame["id"] = i
        sent.append(frame)
    last = {"jsonrpc": "2.0", "id": 999, "method": "ping/last"}
    pipe.write(b"".join(json.dumps(f).encode() + b"\n" for f in [*sent, last]))
    pipe.wait_response(999)
    pipe.proc.send_signal(signal.SIGKILL)
    assert pipe.wait() == -signal.SIGKILL
    assert agent.received() == [*sent, last]


def test_sigterm_exit_is_logged(spawn: Spawn) -> None:
    pipe, agent = spawn("happy")
    handshake(pipe)
    pipe.proc.send_signal(signal.SIGTERM)
    assert pipe.wait() == -signal.SIGTERM
    assert agent.events("sigterm") == [{"_fake": "sigterm", "mode": "exit"}]


def test_sigterm_ignored(spawn: Spawn) -> None:
    pipe, agent = spawn("happy", sigterm="ignore")
    handshake(pipe)
    pipe.proc.send_signal(signal.SIGTERM)
    wait_for(lambda: bool(agent.events("sigterm")))
    assert pipe.proc.poll() is None
    assert pipe.request("session/close", {"sessionId": "fake-session-0001"})["result"] == {}


def test_slow_death_on_sigterm(spawn: Spawn) -> None:
    pipe, agent = spawn("cancel-unsupported", slow_death_ms=1000)
    handshake(pipe)
    pipe.proc.send_signal(signal.SIGTERM)
    pipe.wait_stderr("fake: slow death 1000ms")
    assert pipe.proc.poll() is None, "a slow death must outlive the SIGTERM for a while"
    assert pipe.wait(timeout=15) == 128 + signal.SIGTERM
    assert agent.events("sigterm")[0]["mode"] == "slow-death"


# ---------------------------------------------------------------------------
# scenario loading
# ---------------------------------------------------------------------------


def test_toml_scenario_with_extends(tmp_path: Path, spawn: Spawn) -> None:
    path = tmp_path / "s.toml"
    path.write_text('extends = "happy"\nsession_id = "toml-1"\nprompt = [{chunk = "FROM TOML"}, {stop = "refusal"}]\n')
    pipe, _ = spawn(path)
    sid = handshake(pipe)
    assert sid == "toml-1"
    before, response = run_prompt(pipe, sid)
    assert chunk_texts(before) == ["FROM TOML"]
    assert response["result"]["stopReason"] == "refusal"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenario", "no-such-scenario"], "unknown scenario 'no-such-scenario'"),
        (["--set", "colour=red"], "unknown scenario key(s) ['colour']"),
        (["--set", 'prompts=[[{"shout": "x"}]]'], "unknown step 'shout'"),
        (["--set", "cancel=sometimes"], "bad scenario"),
        (["--set", "noequals"], "--set needs KEY=VALUE"),
    ],
)
def test_bad_scenarios_fail_at_startup(args: list[str], message: str) -> None:
    proc = subprocess.run([*FAKE, *args], input=b"", capture_output=True, timeout=20)
    assert proc.returncode == 2
    assert message in proc.stderr.decode()


def test_list_and_print_scenario() -> None:
    listed = subprocess.run([*FAKE, "--list"], capture_output=True, text=True, timeout=20, check=True).stdout
    names = {line.split()[0] for line in listed.splitlines()}
    required = {
        "happy", "echo", "permission", "question", "cancel-unsupported", "cancel-graceful", "slow", "load-replay",
        "auth-required", "load-fails", "park", "tool-diff", "crash-mid-turn", "hang-initialize",
        "exit-before-initialize", "usage", "flood",
    }  # fmt: skip
    assert required <= names
    printed = subprocess.run(
        [*FAKE, "--scenario", "park", "--sleep-scale", "0.5", "--print-scenario"],
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    ).stdout
    data = json.loads(printed)
    assert data["sleep_scale"] == 0.5
    assert data["prompts"][0][1] == {"kind": "sleep", "seconds": 2.5}


def test_park_pauses_between_chunks(spawn: Spawn) -> None:
    pipe, _ = spawn("park", sleep_scale=0.05)
    sid = handshake(pipe)
    before, response = run_prompt(pipe, sid)
    assert chunk_texts(before) == ["P1", "P2"]
    assert response["result"]["stopReason"] == "end_turn"


# ---------------------------------------------------------------------------
# the handle and the fixtures
# ---------------------------------------------------------------------------


def test_fake_agent_handle(fake_acp_agent: Callable[..., FakeAgent]) -> None:
    agent = fake_acp_agent("permission", cancel="unsupported", slow_death_ms=10)
    assert agent.command[:3] == FAKE
    assert "--set" in agent.command and "cancel=unsupported" in agent.command
    assert agent.command_line.startswith(sys.executable)
    assert agent.received() == [] and agent.methods() == []
    dict_agent = fake_acp_agent({"extends": "echo"})
    assert Path(dict_agent.source).is_file()


def test_agy_host_home_isolates_env(agy_host_home: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert os.environ["HOME"] == str(agy_host_home.home)
    # every AGY_ variable of the caller is gone; warm agents are off (no keeper outlives a test)
    assert [k for k in os.environ if k.startswith("AGY_")] == ["AGY_HOST_KEEP_ALIVE_MINUTES"]
    assert os.environ["AGY_HOST_KEEP_ALIVE_MINUTES"] == "0"
    assert agy_host_home.config_path == agy_host_home.config_home / "agy-host" / "config.toml"
    assert agy_host_home.state_dir == agy_host_home.state_home / "agy-host"
    path = agy_host_home.write_config({"engine": "acp", "acp": {"agent": "fake"}})
    from agy_host import config

    loaded = config.load()
    assert path == agy_host_home.config_path
    assert loaded.engine == "acp" and loaded.acp.agent == "fake"
    agy_host_home.write_config('model = "m1"\n')
    assert config.load().model == "m1"
