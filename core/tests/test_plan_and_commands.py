"""The agent's plan and its slash commands, end to end: the real ``agy-host``
CLI in a subprocess against the fake ACP agent's ``plan`` scenario (its
commands sent with the ``session/new`` answer, in the same write, as Claude
and the Gemini CLI do; a plan sent and updated twice; its wire is checked
against the ACP schema in ``tests/conformance``), shown as JSON events, as a
plain checklist and by ``doctor``, and used by ``chat`` (``/help``, an
advertised ``/name`` sent as the prompt)."""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from typing import Any

import pytest

from agy_host.testing.acp.scenarios import BUILTIN

pytestmark = pytest.mark.skipif(
    not any(ep.name == "acp" for ep in metadata.entry_points(group="agy_host.engines")),
    reason="the ACP engine is not installed",
)

COMPACT_HINT = "optional custom summarization instructions"

#: The plan scenario's last plan, sent once more unchanged.
LAST_PLAN = [
    {"content": "Read the failing test", "priority": "high", "status": "completed"},
    {"content": "Fix the parser", "priority": "high", "status": "completed"},
    {"content": "Run the test suite", "priority": "medium", "status": "completed"},
]

#: The plan scenario's prompt without its end.
PROMPT: list[Any] = [step for step in BUILTIN["plan"]["prompt"] if "stop" not in step]


def plan_states(events: list[dict[str, Any]]) -> list[list[str]]:
    return [[e["status"] for e in ev["entries"]] for ev in events if ev["type"] == "plan"]


def test_run_json_has_the_plan_as_it_changes_and_the_commands(
    agy_host_cli: Callable[..., Any], fake_acp_agent: Callable[..., Any]
) -> None:
    agent = fake_acp_agent("plan")
    result = agy_host_cli("run", "--format", "json", "--engine", "acp", "--agent", agent.command_line, "fix it")
    assert result.returncode == 0, result
    events = result.json_lines()
    [commands] = [e["commands"] for e in events if e["type"] == "commands"]
    assert commands[0] == {
        "name": "compact",
        "description": "Clear conversation history but keep a summary in context",
        "input_hint": COMPACT_HINT,
    }
    assert commands[1] == {"name": "review", "description": "Review a pull request"}
    assert plan_states(events) == [
        ["in_progress", "pending", "pending"],
        ["completed", "in_progress", "pending"],
        ["completed", "completed", "completed"],
    ]
    first = next(e for e in events if e["type"] == "plan")
    assert first["entries"][0] == {"content": "Read the failing test", "status": "in_progress", "priority": "high"}
    kinds = [e["type"] for e in events]
    assert kinds.index("plan") < kinds.index("text") < kinds.index("turn_end")


def test_plain_output_prints_the_checklist_once_per_change_and_doctor_lists_the_commands(
    agy_host_cli: Callable[..., Any], fake_acp_agent: Callable[..., Any]
) -> None:
    agent = fake_acp_agent({"extends": "plan", "prompt": [*PROMPT, {"plan": LAST_PLAN}, {"stop": "end_turn"}]})
    result = agy_host_cli("run", "--format", "plain", "--engine", "acp", "--agent", agent.command_line, "fix it")
    assert result.returncode == 0, result
    assert result.stderr.count("[plan]") == 3, "a plan sent again unchanged is not printed again"
    assert "[plan] 1/3 done\n  [x] Read the failing test\n  [~] Fix the parser\n  [ ] Run the test suite\n" in (
        result.stderr
    )
    assert "[plan] 3/3 done" in result.stderr
    assert "[commands]" not in result.stderr, "the command list is shown with --verbose only"
    doctor = agy_host_cli("doctor", env={"AGY_HOST_ENGINE": "acp", "AGY_HOST_AGENT": agent.command_line})
    assert "agent commands:    3: /compact, /review, /model" in doctor.stdout, doctor
    assert f"/compact <{COMPACT_HINT}>  Clear conversation history but keep a summary in context" in doctor.stdout


def test_chat_lists_and_sends_the_agents_commands(
    agy_host_cli: Callable[..., Any], fake_acp_agent: Callable[..., Any]
) -> None:
    """Before the agent advertised anything ``/compact`` is refused; after its
    first turn ``/help`` lists the agent's commands and ``/compact ...`` goes
    to the agent as typed; the chat's own ``/model`` keeps priority and
    ``//model`` reaches the agent's."""
    agent = fake_acp_agent("plan")
    script = ["/compact too early", "first", "/help", "/compact be brief", "/model", "//model x", "/nope", "/exit"]
    result = agy_host_cli(
        "chat", "--engine", "acp", "--agent", agent.command_line, "--format", "plain", input="\n".join(script) + "\n"
    )
    assert result.returncode == 0, result
    out = result.stdout
    words = " ".join(out.split())  # /help pads its columns
    assert "unknown command /compact" in out, "nothing advertised yet: refused, not sent"
    assert "the agent's commands (sent to the agent as typed):" in out
    assert f"/compact <{COMPACT_HINT}> Clear conversation history but keep a summary in context" in words
    assert "/model <model name> Set the AI model (the chat's own runs; //model sends this one)" in words
    assert "Done: /compact be brief" in out, "an advertised command is the agent's prompt"
    assert "Done: /compact too early" not in out
    assert "model: (the agent's default)" in out, "the chat's /model ran"
    assert "Done: /model x" in out
    assert "unknown command /nope" in out
