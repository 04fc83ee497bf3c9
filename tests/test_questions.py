"""Questions an agent asks (ACP ``elicitation/create``), answered by the
host's broker: through the real ``agy-host`` CLI and the Python API, against
the kit's fake ACP agent process. Every message agy-host sends for them is
checked against the ACP v1 schema (``@agentclientprotocol/sdk`` 2.4.0)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp_cli import agy_host, asking, run_turn
from conformance.schema import validate_client_message

from agy_host.testing.agents import FakeAgent, fake_acp_agent_command
from agy_host.testing.isolation import isolated_env

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")

FORM = {
    "sessionId": "<session>",
    "mode": "form",
    "message": "Which branch should I push to?",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "branch": {"type": "string", "title": "Branch"},
            "force": {"type": "boolean", "title": "Force push", "default": False},
            "reviewers": {"type": "array", "items": {"type": "string", "enum": ["ana", "bo"]}},
        },
        "required": ["branch"],
    },
}
URL = {
    "sessionId": "<session>",
    "mode": "url",
    "message": "Sign in to the deploy service",
    "url": "https://example.com/login",
    "elicitationId": "el-1",
}


#: Antigravity's way of asking: an ``interaction_`` permission request whose options are the answers.
BRANCH_QUESTION = {
    "prompt": [
        {
            "permission": {
                "tool_call": {"toolCallId": "interaction_1", "title": "Which branch?", "kind": "other"},
                "options": [
                    {"optionId": "opt-a", "name": "main", "kind": "allow_once"},
                    {"optionId": "opt-b", "name": "dev", "kind": "allow_once"},
                ],
                "branches": {"opt-b": [{"chunk": "ON DEV"}], "cancelled": [{"chunk": "NO ANSWER"}]},
            }
        }
    ]
}


def answered(agent: FakeAgent) -> list[dict[str, Any]]:
    """What the agent got back for its elicitations, each checked against the schema."""
    responses = [m for m in agent.received() if "result" in m and isinstance(m.get("result"), dict)]
    found = [m for m in responses if "action" in m["result"]]
    for message in found:
        validate_client_message(message, request_method="elicitation/create")
    return [m["result"] for m in found]


def test_a_form_is_answered_from_the_answers_file_and_elicitation_is_advertised(tmp_path: Path) -> None:
    agent = fake_acp_agent_command(asking(FORM), workdir=tmp_path / "agents")
    rules = tmp_path / "answers.toml"
    rules.write_text('[[answer]]\nfield = "branch"\nvalue = "main"\n\n[[answer]]\nfield = "reviewers"\nvalue = "ana"\n')
    proc = run_turn(tmp_path, agent, "--answers", str(rules))
    assert proc.returncode == 0, proc.stderr
    assert "GOT ACCEPT" in proc.stdout
    content = {"branch": "main", "force": False, "reviewers": ["ana"]}
    assert answered(agent) == [{"action": "accept", "content": content}]
    [init] = agent.requests("initialize")
    validate_client_message(init)
    assert init["params"]["clientCapabilities"]["elicitation"] == {"form": {}, "url": {}}
    assert "[question] Which branch should I push to?" in proc.stderr and "answers rule 1, rule 2" in proc.stderr


def test_an_unmatched_question_fails_closed_with_exit_5_never_an_empty_answer(tmp_path: Path) -> None:
    agent = fake_acp_agent_command(asking(FORM), workdir=tmp_path / "agents")
    rules = tmp_path / "answers.json"
    rules.write_text(json.dumps([{"field": "reviewers", "value": "bo"}]))  # the required branch has no rule
    proc = run_turn(tmp_path, agent, "--answers", str(rules), "--format", "json")
    assert proc.returncode == 5, proc.stderr
    assert answered(agent) == [{"action": "cancel"}]
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    [question] = [e for e in events if e["type"] == "question"]
    assert question["unanswered"] is True and question["action"] == "cancel"
    assert "no answer rule matched" in question["reason"]
    done = events[-1]
    assert done["exit_code"] == 5 and "nobody answered" in done["error"]


def test_a_url_question_is_declined_by_a_rule(tmp_path: Path) -> None:
    agent = fake_acp_agent_command(asking(URL), workdir=tmp_path / "agents")
    rules = tmp_path / "answers.toml"
    rules.write_text('[[answer]]\nkind = "url"\ntitle = "*deploy*"\naction = "decline"\n')
    proc = run_turn(tmp_path, agent, "--answers", str(rules))
    assert proc.returncode == 0, proc.stderr
    assert "GOT DECLINE" in proc.stdout
    assert answered(agent) == [{"action": "decline"}]


def test_a_bad_answers_file_is_a_usage_error_naming_the_rule(tmp_path: Path) -> None:
    agent = fake_acp_agent_command(asking(FORM), workdir=tmp_path / "agents")
    rules = tmp_path / "answers.toml"
    rules.write_text('[[answer]]\nfeild = "branch"\nvalue = "main"\n')
    proc = run_turn(tmp_path, agent, "--answers", str(rules))
    assert proc.returncode == 2
    assert "rule 1" in proc.stderr and "feild" in proc.stderr
    assert not agent.requests("initialize"), "no agent is started for a command that cannot answer"


async def test_the_python_api_answers_through_on_question_and_abort_cancels_a_pending_one(tmp_path: Path) -> None:
    import trio

    import agy_host
    from agy_host.contract.interactions import Question

    env = isolated_env(tmp_path / "home", AGY_HOST_ENGINE="acp", AGY_HOST_TTY="none")
    asked: list[Question] = []

    def on_question(question: Question) -> dict[str, Any]:
        asked.append(question)
        return {"branch": "dev"}

    agent = fake_acp_agent_command(asking(FORM), workdir=tmp_path / "a1")
    async with agy_host.open_session(agent=agent.command_line, env=env, cwd=tmp_path, on_question=on_question) as s:
        result = await s.prompt("go").wait()
    assert result.exit_code == 0 and "GOT ACCEPT" in result.response
    assert [q.message for q in asked] == ["Which branch should I push to?"]
    assert [f.name for f in asked[0].fields if f.required] == ["branch"]
    assert answered(agent) == [{"action": "accept", "content": {"branch": "dev"}}]

    waiting = trio.Event()

    async def never(question: Question) -> None:
        waiting.set()
        await trio.sleep_forever()

    agent = fake_acp_agent_command(asking(FORM), workdir=tmp_path / "a2")
    async with agy_host.open_session(agent=agent.command_line, env=env, cwd=tmp_path, on_question=never) as s:
        with trio.fail_after(30):
            async with s.prompt("go") as turn:  # leaving the block aborts the turn
                await waiting.wait()
    assert turn.result is not None and turn.result.exit_code == 130
    assert answered(agent) == [{"action": "cancel"}], "the pending question was answered cancel at once"


def test_an_antigravity_question_is_answered_by_a_rule_and_never_by_auto(tmp_path: Path) -> None:
    """Antigravity asks questions as ``interaction_`` permission requests whose
    options are the answers: a rule picks one by its text; without a rule the
    default policy (``auto``) cancels it and the run exits 5."""
    agent = fake_acp_agent_command(BRANCH_QUESTION, workdir=tmp_path / "agents")
    rules = tmp_path / "answers.toml"
    rules.write_text('[[answer]]\ntitle = "*branch*"\nvalue = "dev"\n')
    proc = run_turn(tmp_path, agent, "--answers", str(rules))
    assert proc.returncode == 0, proc.stderr
    assert "ON DEV" in proc.stdout
    unanswered = fake_acp_agent_command(BRANCH_QUESTION, workdir=tmp_path / "agents-2")
    proc = run_turn(tmp_path, unanswered)
    assert proc.returncode == 5 and "NO ANSWER" in proc.stdout, proc.stderr


def test_an_antigravity_question_is_asked_at_the_terminal_under_the_default_policy(tmp_path: Path) -> None:
    """The broker's order holds for every kind of question: no rule and no
    program answered, so the person at the terminal is asked, under the
    default policy too (``auto`` never picks an answer, but it no longer
    keeps the question from the person)."""
    from agy_host.testing.terminal import Pty

    agent = fake_acp_agent_command(BRANCH_QUESTION, workdir=tmp_path / "agents")
    with Pty() as tty:
        tty.type("2\n")  # 2) dev
        proc = agy_host(tmp_path, "run", "--agent", agent.command_line, "go", tty=tty.path)
        screen = tty.screen()
    context = f"{proc.stdout}\n{proc.stderr}\n--- terminal ---\n{screen}"
    assert "Which branch?" in screen and "dev" in screen, context
    assert proc.returncode == 0 and "ON DEV" in proc.stdout, context


#: A form of two choice fields, the first optional.
CHOICES = {
    "sessionId": "<session>",
    "mode": "form",
    "message": "How should I deploy?",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "region": {"type": "string", "title": "Region", "enum": ["eu", "us"]},
            "size": {"type": "string", "title": "Size", "enum": ["small", "large"]},
        },
        "required": ["size"],
    },
}


def test_enter_skips_an_optional_choice_field_at_the_terminal(tmp_path: Path) -> None:
    """Enter on an optional choice field leaves it unset and the form goes
    on, and each prompt says what Enter and ``0`` do. Enter used to be
    refused ("please type a number from 1 to 2"), so the person's only way
    past the field was ``0``, which cancelled the whole form."""
    from agy_host.service.terminal import MAX_ATTEMPTS
    from agy_host.testing.terminal import Pty

    agent = fake_acp_agent_command(asking(CHOICES), workdir=tmp_path / "agents")
    with Pty() as tty:
        # Region: Enter (skip); Size: 2) large; then Enters nobody reads (where Enter is refused the
        # form gives up on them, rather than the test waiting for its timeout)
        tty.type("\n2\n" + "\n" * MAX_ATTEMPTS)
        proc = agy_host(tmp_path, "run", "--agent", agent.command_line, "go", tty=tty.path)
        screen = tty.screen()
    context = f"{proc.stdout}\n{proc.stderr}\n--- terminal ---\n{screen}"
    assert "Region: 1) eu, 2) us [1-2, Enter to skip, 0 cancels the whole form]: " in screen, context
    assert "Size: 1) small, 2) large [1-2, 0 cancels the whole form]: " in screen, context
    assert "please type a number" not in screen, context
    assert proc.returncode == 0 and "GOT ACCEPT" in proc.stdout, context
    assert answered(agent) == [{"action": "accept", "content": {"size": "large"}}], context


async def test_the_python_callback_answers_an_antigravity_question(tmp_path: Path) -> None:
    import agy_host
    from agy_host.contract.interactions import Question

    agent = fake_acp_agent_command(BRANCH_QUESTION, workdir=tmp_path / "agents")
    env = isolated_env(tmp_path / "home", AGY_HOST_ENGINE="acp", AGY_HOST_TTY="none")
    seen: list[Question] = []

    def on_question(question: Question) -> str:
        seen.append(question)
        return "dev"

    async with agy_host.open_session(agent=agent.command_line, env=env, cwd=tmp_path, on_question=on_question) as s:
        result = await s.prompt("go").wait()
    assert result.exit_code == 0 and "ON DEV" in result.response
    assert [(q.kind, q.message, q.choices) for q in seen] == [("choice", "Which branch?", ["main", "dev"])]


def test_elicitation_complete_is_shown(tmp_path: Path) -> None:
    complete = {"notify": {"method": "elicitation/complete", "params": {"elicitationId": "el-1"}}}
    agent = fake_acp_agent_command({"prompt": [complete, {"chunk": "ok"}]}, workdir=tmp_path / "agents")
    proc = run_turn(tmp_path, agent, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    notices = [e["message"] for e in map(json.loads, proc.stdout.splitlines()) if e["type"] == "notice"]
    assert notices == ["the agent reports the step at the URL it gave is done (el-1)"]
