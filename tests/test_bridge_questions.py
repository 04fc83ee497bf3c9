"""The bridge's question tool through the public API (issue 26 items 6 and 7),
against the kit's fake ACP agent, a real process that calls the bridge over
real HTTP.

Item 6: the tool is ``agy_host_ask_user`` (the Gemini CLI hides every tool
called ``ask_user``, its own built-in's name); the old name stays, as an
alias answered the same way. Item 7: agents ask permission before an MCP
tool (fast-agent does, titled ``agy-host-bridge/<tool>``; the Gemini CLI as
``<tool> (agy-host-bridge MCP Server)``). For the question tool that request
is not put to the permission policy, so a callback that refuses everything
does not stop the question: ``on_question`` answers it. The same on the real
agents: ``tests/interop/test_gemini_cli_tools.py``,
``tests/interop/test_bridge_fast_agent.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

import agy_host
from agy_host.testing.agents import fake_acp_agent_command
from agy_host.testing.isolation import isolated_env

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")
pytest.importorskip("agy_host_bridge_mcp.hooks", reason="the bridge is not installed")

#: What fast-agent and the Gemini CLI ask before they call a bridge tool.
TITLES = {
    "fast-agent": "agy-host-bridge/{tool}",
    "gemini-cli": "{tool} (agy-host-bridge MCP Server)",
    "claude-code": "mcp__agy-host-bridge__{tool}",
}
QUESTION = {"question": "Red or blue?", "choices": ["red", "blue"]}


def asked_then_called(tool: str, title: str) -> dict[str, Any]:
    """The agent asks permission for ``tool`` (titled ``title``); allowed, it
    calls the tool; refused, it says so."""
    call = {"toolCallId": "call-1", "title": title.format(tool=tool), "kind": "other", "status": "pending"}
    return {
        "prompt": [
            {
                "permission": {
                    "tool_call": call,
                    "branches": {
                        "allow": [{"mcp_call": {"tool": tool, "arguments": QUESTION}}],
                        "reject": [{"chunk": "REFUSED"}],
                    },
                }
            },
            {"stop": "end_turn"},
        ]
    }


def run(tmp_path: Path, scenario: dict[str, Any]) -> tuple[Any, list[Any], list[Any], list[Any]]:
    """One turn with a permissions callback that refuses everything and an
    ``on_question`` that answers ``blue``."""
    env = isolated_env(tmp_path / "home", AGY_HOST_TTY="none")
    (tmp_path / "project").mkdir(exist_ok=True)
    agent = fake_acp_agent_command(scenario, workdir=tmp_path / "agents")
    refused: list[Any] = []
    questions: list[Any] = []
    events: list[Any] = []

    def refuse_all(request: agy_host.PermissionRequest) -> bool:
        refused.append(request)
        return False

    def answer(question: Any) -> str:
        questions.append(question)
        return "blue"

    async def main() -> Any:
        async with agy_host.open_session(
            agent=agent.command_line,
            env=env,
            cwd=tmp_path / "project",
            permissions=refuse_all,
            on_question=answer,
        ) as s:
            async for event in s.prompt("ask me"):
                events.append(event)
            return s.result

    return trio.run(main), refused, questions, events


@pytest.mark.parametrize("agent", sorted(TITLES))
def test_the_question_tool_is_not_put_to_the_permission_policy(tmp_path: Path, agent: str) -> None:
    result, refused, questions, events = run(tmp_path, asked_then_called("agy_host_ask_user", TITLES[agent]))
    assert refused == [], "the permissions callback was asked about a question"
    assert [(q.tool, q.message, q.choices) for q in questions] == [
        ("agy_host_ask_user", "Red or blue?", ["red", "blue"])
    ]
    assert result.response == "tool result: The user chose: blue", result
    assert result.exit_code == 0 and result.permissions_refused == 0, result
    [answered] = [e for e in events if isinstance(e, agy_host.PermissionAnswered)]
    assert (answered.selected, answered.policy) == ("allow", "question"), answered
    assert "question broker" in answered.reason


def test_the_old_name_is_an_alias_answered_the_same_way(tmp_path: Path) -> None:
    result, refused, questions, _ = run(tmp_path, asked_then_called("ask_user", TITLES["fast-agent"]))
    assert refused == [] and [q.tool for q in questions] == ["ask_user"]
    assert result.response == "tool result: The user chose: blue" and result.exit_code == 0, result


def test_any_other_tool_is_still_the_policys_to_refuse(tmp_path: Path) -> None:
    """Only the bridge's question tool skips the policy: another bridge tool,
    or a tool whose name merely ends the same way, is refused as before."""
    result, refused, questions, _ = run(tmp_path, asked_then_called("agy_host_ask_user", "mcp__other__{tool}x"))
    assert [r.title for r in refused] == ["mcp__other__agy_host_ask_userx"] and questions == []
    assert result.response == "REFUSED" and result.exit_code == 5, result
    result, refused, _, _ = run(tmp_path, asked_then_called("usage_summary", TITLES["fast-agent"]))
    assert [r.title for r in refused] == ["agy-host-bridge/usage_summary"] and result.response == "REFUSED"


async def test_the_bridge_offers_the_new_name_and_the_alias(tmp_path: Path) -> None:
    from agy_host.plugins import Plugins

    tools = {t.name: t for t in Plugins({}).tools()}
    assert tools["agy_host_ask_user"].asks_user and tools["ask_user"].asks_user
    assert "prefer agy_host_ask_user" in tools["ask_user"].description


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.mark.parametrize("agent", sorted(TITLES))
def test_a_programs_own_tool_is_allowed_without_the_policy_and_the_lists_still_rule(tmp_path: Path, agent: str) -> None:
    """Agents ask permission before every MCP tool; for a function the
    program passed as ``tools=`` the program's offer is its consent, so the
    fail-closed default (no ``permissions=``) does not refuse it. The tool
    lists still do."""
    call = {"toolCallId": "call-1", "title": TITLES[agent].format(tool="add"), "kind": "other", "status": "pending"}
    scenario = {
        "prompt": [
            {
                "permission": {
                    "tool_call": call,
                    "branches": {
                        "allow": [{"mcp_call": {"tool": "add", "arguments": {"a": 40, "b": 2}}}],
                        "reject": [{"chunk": "REFUSED"}],
                    },
                }
            },
            {"stop": "end_turn"},
        ]
    }
    cwd = tmp_path / "project"
    cwd.mkdir()
    env = isolated_env(tmp_path / "home", AGY_HOST_TTY="none")

    def turn(**kw: Any) -> Any:
        agent_cmd = fake_acp_agent_command(scenario, workdir=tmp_path / "agents")
        return agy_host.run("sum", agent=agent_cmd.command_line, env=env, cwd=cwd, tools=[add], **kw)

    allowed = turn()
    assert allowed.exit_code == 0 and "tool result: 42" in allowed.response, allowed
    refused = turn(disallowed_tools=["*add*"])  # the lists match the agent's own name for the call
    assert refused.exit_code == 5 and "REFUSED" in refused.response, refused
