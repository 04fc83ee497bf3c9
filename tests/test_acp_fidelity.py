"""What real ACP agents were seen doing that agy-host got wrong (issue 24):
through the real CLI against the kit's fake ACP agent, which is scripted to
behave as the real agent did."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp_cli import agy_host, run_turn

from agy_host.testing.agents import fake_acp_agent_command

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")


def test_a_validation_error_shows_the_field_paths_the_agent_refused(tmp_path: Path) -> None:
    """A ``-32602`` answer carries ACP's own validation errors in
    ``data.errors[]`` (pydantic ``loc``/``msg``, zod ``path``/``message``):
    the user sees which field of the request was refused."""
    data = {
        "errors": [
            {"loc": ["prompt", 0, "text"], "msg": "Field required", "type": "missing"},
            {"path": ["sessionId"], "message": "Expected string"},
        ]
    }
    script = {"prompt": [{"error": {"code": -32602, "message": "Invalid params", "data": data}}]}
    agent = fake_acp_agent_command(script, workdir=tmp_path / "agents")
    proc = run_turn(tmp_path, agent)
    assert proc.returncode == 1, proc.stderr
    assert "prompt.0.text: Field required" in proc.stderr, proc.stderr
    assert "sessionId: Expected string" in proc.stderr, proc.stderr


def _events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def _turn_end(stdout: str) -> dict[str, Any]:
    [end] = [e for e in _events(stdout) if e.get("type") == "turn_end"]
    return end


class Agent:
    """One agent command across runs (its command line names the session's
    binding), whose scenario file is rewritten between them."""

    def __init__(self, tmp_path: Path, scenario: dict[str, Any]) -> None:
        self.path = tmp_path / "scenario.json"
        self.then(scenario)
        self.fake = fake_acp_agent_command(self.path, workdir=tmp_path / "agents")

    def then(self, scenario: dict[str, Any]) -> Agent:
        self.path.write_text(json.dumps(scenario))
        return self

    def methods(self) -> list[str]:
        return [m["method"] for m in self.fake.received() if "method" in m]


def test_history_replayed_after_the_load_answer_is_never_the_new_answer(tmp_path: Path) -> None:
    """The Gemini CLI answers ``session/load`` and then replays the old
    prompt and answer: the second command's text, ``turn_end.response`` and
    transcript hold only the new answer."""
    agent = Agent(tmp_path, {"prompt": [{"chunk": "OLD REPLY FULL TEXT"}]})
    proc = run_turn(tmp_path, agent.fake, "--session", "work")
    assert proc.returncode == 0, proc.stderr
    agent.then({"prompt": [{"chunk": "NEW ANSWER"}], "load": "replay-after", "replay_delay_ms": 50})
    proc = run_turn(tmp_path, agent.fake, "--session", "work", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert "session/load" in agent.methods()
    texts = "".join(e["delta"] for e in _events(proc.stdout) if e.get("type") == "text")
    assert texts == "NEW ANSWER" and _turn_end(proc.stdout)["response"] == "NEW ANSWER", proc.stdout
    assert "OLD" not in proc.stdout
    transcripts = [p for p in (tmp_path / "home").rglob("*") if p.is_file() and "transcript" in str(p)]
    assert transcripts and not any("OLD USER" in p.read_text() for p in transcripts), transcripts


def test_resume_of_a_conversation_the_agent_cannot_load_exits_4_with_its_reason(tmp_path: Path) -> None:
    agent = Agent(tmp_path, {})
    assert run_turn(tmp_path, agent.fake, "--session", "work").returncode == 0
    agent.then({"load": "fails"})
    proc = run_turn(tmp_path, agent.fake, "--session", "work", "--resume", "--format", "json")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    end = _turn_end(proc.stdout)
    assert end["error_kind"] == "no_session" and "unknown session" in end["error"], end
    assert agent.methods().count("session/new") == 1  # the first run's only


def test_without_resume_a_new_conversation_is_said_in_json_and_at_the_terminal(tmp_path: Path) -> None:
    agent = Agent(tmp_path, {"session_id": "conv-old"})
    assert run_turn(tmp_path, agent.fake, "--session", "work").returncode == 0
    agent.then({"load": "fails", "session_id": "conv-new"})
    proc = run_turn(tmp_path, agent.fake, "--session", "work", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    end = _turn_end(proc.stdout)
    assert (end["replaced_conversation_id"], end["conversation_id"]) == ("conv-old", "conv-new"), end
    notices = [
        e for e in _events(proc.stdout) if e.get("type") == "notice" and e.get("code") == "conversation-replaced"
    ]
    assert len(notices) == 1 and "could not continue conversation conv-old" in notices[0]["message"], notices
    agent.then({"load": "fails", "session_id": "conv-3"})
    plain = run_turn(tmp_path, agent.fake, "--session", "work")
    assert plain.returncode == 0 and "could not continue conversation conv-new" in plain.stderr, plain.stderr


async def test_the_python_api_resume_fails_with_exit_4_when_the_agent_cannot_continue(tmp_path: Path) -> None:
    import agy_host
    from agy_host.testing.isolation import isolated_env

    env = isolated_env(tmp_path / "home", AGY_HOST_ENGINE="acp", AGY_HOST_TTY="none")
    agent = Agent(tmp_path, {})
    command = agent.fake.command_line
    async with agy_host.open_session(agent=command, env=env, cwd=tmp_path, session="py") as s:
        assert (await s.prompt("hi").wait()).exit_code == 0
    agent.then({"load": "fails"})
    async with agy_host.open_session(agent=command, env=env, cwd=tmp_path, session="py", resume=True) as s:
        result = await s.prompt("hi").wait()
    assert (result.exit_code, result.error_kind) == (4, "no_session"), result


def _withdrawing(request: dict[str, Any]) -> dict[str, Any]:
    """A prompt whose request the agent withdraws after 0.5 s, then goes on."""
    branches = {"error": [{"chunk": "WITHDRAWN"}], "result": [{"chunk": "ANSWERED"}]}
    return {"prompt": [{"request": {**request, "branches": branches, "withdraw_after": 0.5}}]}


def _answers_to_withdrawn(agent: Any) -> list[dict[str, Any]]:
    return [m for m in agent.received() if isinstance(m.get("error"), dict) and m["error"].get("code") == -32800]


def test_a_withdrawn_permission_request_leaves_the_terminal_and_is_answered_cancelled(tmp_path: Path) -> None:
    """The agent withdraws its permission request while the person reads
    it: the prompt goes with a notice, and the agent gets -32800."""
    import time

    from agy_host.testing.terminal import Pty

    permission = {
        "method": "session/request_permission",
        "params": {
            "sessionId": "<session>",
            "toolCall": {"toolCallId": "t1", "title": "Delete the build folder", "kind": "delete"},
            "options": [
                {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                {"optionId": "no", "name": "Deny", "kind": "reject_once"},
            ],
        },
    }
    agent = fake_acp_agent_command(_withdrawing(permission), workdir=tmp_path / "agents")
    with Pty() as tty:
        started = time.monotonic()
        proc = agy_host(tmp_path, "run", "--agent", agent.command_line, "--permissions", "ask", "go", tty=tty.path)
        took = time.monotonic() - started
        screen = tty.screen()
    context = f"{proc.stdout}\n{proc.stderr}\n--- terminal ---\n{screen}"
    assert "Delete the build folder" in screen, context  # it was asked
    assert "withdrew its permission request ('Delete the build folder')" in proc.stderr, context
    assert proc.returncode == 0 and "WITHDRAWN" in proc.stdout, context
    assert len(_answers_to_withdrawn(agent)) == 1, agent.received()
    assert took < 30, context  # not held until a permission timeout


async def test_a_withdrawn_question_cancels_the_python_callback(tmp_path: Path) -> None:
    import trio

    import agy_host
    from agy_host.testing.isolation import isolated_env

    question = {
        "method": "elicitation/create",
        "params": {
            "sessionId": "<session>",
            "mode": "form",
            "message": "Which branch?",
            "requestedSchema": {"type": "object", "properties": {"b": {"type": "string"}}},
        },
    }
    agent = fake_acp_agent_command(_withdrawing(question), workdir=tmp_path / "agents")
    env = isolated_env(tmp_path / "home", AGY_HOST_ENGINE="acp", AGY_HOST_TTY="none")
    state = {"called": False, "cancelled": False}

    async def on_question(_question: Any) -> str:
        state["called"] = True
        try:
            await trio.sleep(60)
        except trio.Cancelled:
            state["cancelled"] = True
            raise
        return "main"

    async with agy_host.open_session(agent=agent.command_line, env=env, cwd=tmp_path, on_question=on_question) as s:
        with trio.fail_after(30):
            result = await s.prompt("go").wait()
    assert state == {"called": True, "cancelled": True}
    assert result.exit_code == 0 and "WITHDRAWN" in result.response, result
    assert len(_answers_to_withdrawn(agent)) == 1
