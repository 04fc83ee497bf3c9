"""Every result carries structured content an MCP client accepts (issue 26
item 5): the official SDK client calls Python functions served as host
tools over real HTTP, for each kind of value a function returns.

The Gemini CLI (0.61) parses a result's first text block into
``structuredContent`` when the server sends none, and its MCP client then
refuses the call unless that is an object: ``add`` answering ``42`` was a
failed tool call. The same kinds of values against the real Gemini CLI are
in ``tests/interop/test_gemini_cli_tools.py``. A call the agent still
reports as failed is in the turn's result (the fake ACP agent reports one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agy_host.contract.tools import ToolResult
from agy_host.runtime.python_tools import tool_from_function
from agy_host_bridge_mcp.testing import host_tool, mcp_client, running_bridge, value_tools

#: function -> (the text the agent reads, the structured content it gets)
PYTHON = value_tools()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_python_functions_value_comes_with_an_object(tmp_path: Path, mode: str) -> None:
    tools = [tool_from_function(fn) for fn in PYTHON]
    async with running_bridge(tmp_path, tools) as bridge, mcp_client(bridge, mode) as client:
        got = {fn: await client.call_tool(fn.__name__, {}) for fn in PYTHON}
    for fn, (text, structured) in PYTHON.items():
        result = got[fn]
        assert not result.is_error, (fn.__name__, result)
        assert result.content[-1].text == text, fn.__name__
        assert result.structured_content == structured, fn.__name__
    [picture] = [fn for fn in PYTHON if fn.__name__ == "picture"]
    assert [c.type for c in got[picture].content] == ["image", "text"]


#: a plugin's text -> the structured content sent with it
PLUGIN = {
    "7": {"result": 7},
    '"quoted"': {"result": "quoted"},
    "[1, 2]": {"result": [1, 2]},
    '{"a": 1}': {"a": 1},
    "null": {"result": None},
    "plain words": None,
    "": None,
}


async def test_a_plugin_tools_text_that_is_json_is_sent_as_an_object(tmp_path: Path) -> None:
    tools = [host_tool(f"t{i}", ToolResult(text=text)) for i, text in enumerate(PLUGIN)]
    async with running_bridge(tmp_path, tools) as bridge, mcp_client(bridge) as client:
        results = [await client.call_tool(f"t{i}", {}) for i in range(len(PLUGIN))]
    assert [r.structured_content for r in results] == list(PLUGIN.values())
    assert [r.content[0].text for r in results] == list(PLUGIN)


def test_a_host_tool_the_agent_reports_failed_is_in_the_result(tmp_path: Path) -> None:
    """The agent refused what the host answered (as the Gemini CLI did with a
    bare number): the failure is in ``TurnResult.tool_errors`` and a
    ``host-tool-failed`` notice, not only in a tool card. A failure of the
    agent's own tool is in ``tool_errors`` alone."""
    import trio

    import agy_host
    from agy_host.testing.agents import fake_acp_agent_command
    from agy_host.testing.isolation import isolated_env

    refused = {"toolCallId": "c1", "status": "failed", "title": "number (agy-host-bridge MCP Server)"}
    refused["content"] = [{"type": "content", "content": {"type": "text", "text": "expected record"}}]
    own = {"toolCallId": "c2", "status": "failed", "title": "read_file", "kind": "read"}
    script = {
        "prompt": [
            {"mcp_call": {"tool": "number", "arguments": {}}},
            {"tool_call_update": refused},
            {"tool_call_update": own},
            {"stop": "end_turn"},
        ]
    }
    agent = fake_acp_agent_command(script, workdir=tmp_path / "agents")
    env = isolated_env(tmp_path / "home", AGY_HOST_TTY="none")
    notices: list[agy_host.Notice] = []

    async def main() -> Any:
        tools = [fn for fn in PYTHON if fn.__name__ == "number"]
        async with agy_host.open_session(agent=agent.command_line, env=env, cwd=tmp_path, tools=tools) as s:
            async for event in s.prompt("go"):
                if isinstance(event, agy_host.Notice) and event.code == "host-tool-failed":
                    notices.append(event)
            return s.result

    result = trio.run(main)
    assert result.exit_code == 0 and result.response == "tool result: 42", result
    assert result.tool_errors == ["number (agy-host-bridge MCP Server): expected record", "read_file: tool failed"]
    [notice] = notices
    assert (
        notice.message == "the agent reports host tool 'number' as failed after agy-host answered it: expected record"
    )
