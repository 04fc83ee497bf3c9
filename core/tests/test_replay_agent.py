"""The replay agent serves each vendored ACP recording back to a real client."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agy_host.testing.agents import FakeAgent
from agy_host.testing.client import AgentPipe, Message, RawOutput
from agy_host.testing.replay.recordings import AgentFrame, ClientFrame, Note, RawLine, read_recording

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "fixtures" / "recorded"

WITH_CLIENT = sorted(
    [
        *RECORDED.glob("anyagent-rs-antigravity/acp-*.jsonl"),
        *RECORDED.glob("mprasanjith-anyagent/gemini-cli-*.jsonl"),
    ]
)
AGENT_ONLY = sorted(RECORDED.glob("htui/*turn.jsonl"))
#: stream-json CLI runs, one process per file (cli-09-config holds two runs)
CLI_RUNS = sorted(
    p
    for p in RECORDED.glob("anyagent-rs-antigravity/cli-*.jsonl")
    if sum(isinstance(e, Note) and e.kind == "meta" for e in read_recording(p)) == 1
)
#: ids the test uses instead of the recorded ones, to prove responses follow the client's ids
ID_SHIFT = 100

Replay = Callable[..., tuple[AgentPipe, FakeAgent]]


@pytest.fixture
def replay(replay_agent: Callable[..., FakeAgent]) -> Iterator[Replay]:
    pipes: list[AgentPipe] = []

    def start(path: Path) -> tuple[AgentPipe, FakeAgent]:
        agent = replay_agent(path)
        pipe = AgentPipe(agent.command)
        pipes.append(pipe)
        return pipe, agent

    yield start
    for pipe in pipes:
        pipe.kill()
        pipe.close()


def _name(path: Path) -> str:
    return path.name


def test_the_recordings_under_test_exist() -> None:
    assert [p.name for p in WITH_CLIENT] == [
        "acp-01-handshake.jsonl",
        "acp-02-pong.jsonl",
        "acp-03-authenticate.jsonl",
        "acp-04-question.jsonl",
        "gemini-cli-0.46.0-acp-pong.jsonl",
    ]
    assert [p.name for p in AGENT_ONLY] == ["agy-acp-1.1.1-turn.jsonl", "claude-agent-acp-0.48.0-turn.jsonl"]


@pytest.mark.parametrize("path", WITH_CLIENT, ids=_name)
def test_replays_recording_with_client_side(path: Path, replay: Replay) -> None:
    """Send the recorded client frames (requests under shifted ids) and expect
    exactly the recorded agent frames back, in order, between them."""
    events = read_recording(path)
    pipe, agent = replay(path)
    id_map: dict[Any, Any] = {}
    expected: list[Message] = []
    sent_methods: list[str] = []

    def check_pending() -> None:
        got = [pipe.read() for _ in expected]
        assert got == expected
        expected.clear()

    for event in events:
        if isinstance(event, ClientFrame):
            check_pending()
            frame = dict(event.frame)
            if "method" in frame and "id" in frame:
                id_map[frame["id"]] = frame["id"] + ID_SHIFT
                frame["id"] = id_map[frame["id"]]
            if isinstance(frame.get("method"), str):
                sent_methods.append(frame["method"])
            pipe.send(frame)
        elif isinstance(event, AgentFrame):
            frame = dict(event.frame)
            if "method" not in frame and frame.get("id") in id_map:
                frame["id"] = id_map[frame["id"]]
            expected.append(frame)
        elif isinstance(event, RawLine):
            expected.append(RawOutput(event.text))
    check_pending()
    assert pipe.drain(0.1) == []
    pipe.close_stdin()
    assert pipe.wait() == 0
    assert agent.methods() == sent_methods
    assert not agent.events("mismatch")


@pytest.mark.parametrize("path", CLI_RUNS, ids=_name)
def test_replays_stream_json_run(path: Path, replay: Replay) -> None:
    """Not ACP: stdin lines are matched by their ``event``; frames the CLI
    printed before reading stdin come at start; the exit code is the recorded one."""
    events = read_recording(path)
    exits = [e.data["exit"] for e in events if isinstance(e, Note) and isinstance(e.data, dict) and "exit" in e.data]
    pipe, agent = replay(path)
    expected: list[Message] = []
    for event in events:
        if isinstance(event, ClientFrame):
            assert [pipe.read() for _ in expected] == expected
            expected.clear()
            pipe.send(event.frame)
        elif isinstance(event, AgentFrame):
            expected.append(event.frame)
    assert [pipe.read() for _ in expected] == expected
    pipe.close_stdin()
    assert pipe.wait() == (exits[-1] if exits else 0)
    assert not agent.events("mismatch")


def _initialize_and_new(pipe: AgentPipe) -> tuple[dict[str, Any], str]:
    init = pipe.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    new = pipe.request("session/new", {"cwd": "/tmp", "mcpServers": []})
    return init["result"], str(new["result"]["sessionId"])


def _placeholder(obj: Any, sid: str) -> Any:
    return json.loads(json.dumps(obj).replace("<session>", sid))


@pytest.mark.parametrize("path", AGENT_ONLY, ids=_name)
def test_replays_agent_only_recording_on_first_prompt(path: Path, replay: Replay) -> None:
    events = read_recording(path)
    updates = [e.frame for e in events if isinstance(e, AgentFrame) and e.answers is None]
    results = [e.frame["result"] for e in events if isinstance(e, AgentFrame) and e.answers == "session/prompt"]
    pipe, _ = replay(path)
    init, sid = _initialize_and_new(pipe)
    assert sid and "<session>" not in sid
    prompt_id = pipe.start_request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]})
    before, response = pipe.wait_response(prompt_id)
    assert before == _placeholder(updates, sid)
    assert response["result"] == (results[0] if results else {"stopReason": "end_turn"})
    if path.name.startswith("agy-acp-1.1.1"):
        # capabilities come from the htui handshake digest next to the turn
        digest = json.loads((path.parent / "agy-acp-1.1.1-handshake.json").read_text())
        assert init["agentCapabilities"] == digest["capabilities"]
        assert init["agentInfo"]["version"] == "agy_acp_server_1.1.1"
        assert [m["id"] for m in init["authMethods"]] == digest["auth_methods"]
    else:
        assert init["agentInfo"]["name"] == "replay-agent"


def test_unexpected_request_gets_an_error_naming_the_expected_one(replay: Replay) -> None:
    pipe, agent = replay(RECORDED / "anyagent-rs-antigravity/acp-02-pong.jsonl")
    pipe.request("initialize", {"protocolVersion": 1})
    wrong = pipe.request("session/load", {"sessionId": "x", "cwd": "/", "mcpServers": []})
    error = wrong["error"]
    assert error["code"] == -32603
    assert "expected request session/new (recording line 3), got request session/load" in error["message"]
    assert error["data"]["expected"]["method"] == "session/new"
    pipe.wait_stderr("expected request session/new")
    assert agent.events("mismatch")
    # the replay did not advance: the recorded request still works
    new = pipe.request("session/new", {"cwd": "/", "mcpServers": []})
    assert new["result"]["sessionId"] == "70e2d0b1-ca33-4249-b764-645d6b19ab20"


def test_notifications_not_in_the_recording_are_ignored(replay: Replay) -> None:
    pipe, agent = replay(RECORDED / "anyagent-rs-antigravity/acp-03-authenticate.jsonl")
    pipe.request("initialize", {"protocolVersion": 1})
    pipe.notify("session/cancel", {"sessionId": "none"})
    assert pipe.request("authenticate", {"methodId": "oauth-personal"})["result"] == {}
    assert agent.methods() == ["initialize", "session/cancel", "authenticate"]
    assert agent.events("ignored-notification") == [{"_fake": "ignored-notification", "method": "session/cancel"}]
    exhausted = pipe.request("session/new", {"cwd": "/", "mcpServers": []})
    assert "no more client messages" in exhausted["error"]["message"]


def test_permission_request_waits_for_the_client_answer(replay: Replay) -> None:
    pipe, agent = replay(RECORDED / "anyagent-rs-antigravity/acp-04-question.jsonl")
    pipe.request("initialize", {"protocolVersion": 1})
    sid = pipe.request("session/new", {"cwd": "/", "mcpServers": []})["result"]["sessionId"]
    prompt_id = pipe.start_request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "?"}]})
    got = pipe.read_until(lambda m: isinstance(m, dict) and m.get("method") == "session/request_permission")
    assert isinstance(got[-1], dict) and got[-1]["id"] == 0
    # nothing more until the client answers
    assert pipe.drain(0.2) == []
    pipe.respond(0, {"outcome": {"outcome": "selected", "optionId": "2"}})
    before, response = pipe.wait_response(prompt_id)
    assert response["result"] == {"stopReason": "end_turn"}
    assert len(before) == 2
    pipe.wait_stderr("differs")
    assert agent.events("answer-differs")[0]["got"] == {"result": {"outcome": {"outcome": "selected", "optionId": "2"}}}


def test_bad_recording_path_fails_clearly(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "agy_host.testing.replay.agent", str(tmp_path / "none.jsonl")],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert proc.returncode == 2
    assert "recording not found" in proc.stderr


def test_replay_agent_fixture_rejects_missing_file(replay_agent: Callable[..., FakeAgent], tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="recording not found"):
        replay_agent(tmp_path / "missing.jsonl")
