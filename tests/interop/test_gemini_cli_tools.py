"""A Python program's tools, and the bridge's question tool, on the real
Gemini CLI (``gemini --acp``, 0.61.0) with its model scripted, through the
Python API as docs/python.md shows it (issue 26 items 5, 6 and 7).

Item 5: the Gemini CLI parses a result's first text block into
``structuredContent`` when none was sent, and its MCP client refuses a call
whose structured content is not an object: ``add`` answering ``42`` failed
while the run exited 0. Every kind of value a function returns must reach
the model, and a tool error the agent reports must be in the result.
Item 6: the Gemini CLI hides every tool named ``ask_user`` (its own built-in,
left out in ACP mode); the bridge's question tool has a name of its own.
Item 7: the Gemini CLI asks permission before each MCP tool; for the
question tool the permission policy is not asked.

The Gemini CLI starts MCP servers in a trusted folder only (in any other its
model is never told about the bridge): the project is trusted here.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from interop.cli_runs import no_leftovers
from interop.provision import AgentLaunch
from interop.provision_gemini import GeminiCli

import agy_host
from agy_host.testing.models.api import ModelApiProcess
from agy_host_bridge_mcp.testing import value_tools

pytestmark = pytest.mark.interop

#: How the Gemini CLI names a tool of the bridge to its model.
PREFIX = "mcp_agy-host-bridge_"


def broken() -> int:
    """A tool that raises."""
    raise ValueError("no such number")


#: Each function, and what the model must be handed as its output.
TOOLS = {fn: text for fn, (text, _structured) in value_tools().items()}


class Gemini:
    """The Gemini CLI in a trusted project, a home, and a scripted model."""

    def __init__(self, gemini: GeminiCli, env: dict[str, str], tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.project = tmp_path / "project"
        self.project.mkdir()
        self.launch: AgentLaunch = gemini.launch(tmp_path)
        assert self.launch.home is not None
        trusted = self.launch.home / ".gemini" / "trustedFolders.json"
        trusted.write_text(json.dumps({str(self.project): "TRUST_FOLDER"}))
        self.env = {**env, "AGY_HOST_TTY": "none", "GEMINI_API_KEY": "scripted"}
        self.api: ModelApiProcess | None = None

    def serve(self, replies: list[list[dict[str, Any]]]) -> None:
        self.api = ModelApiProcess(self.tmp / "model", {"turns": [replies]})
        self.env["GOOGLE_GEMINI_BASE_URL"] = self.api.url

    def turn(self, prompt: str, **options: Any) -> tuple[Any, list[Any]]:
        events: list[Any] = []

        async def main() -> Any:
            agent = shlex.join(self.launch.argv)
            async with agy_host.open_session(agent=agent, env=self.env, cwd=self.project, **options) as s:
                with trio.fail_after(90):
                    async for event in s.prompt(prompt):
                        events.append(event)
                return s.result

        return trio.run(main), events

    def outputs(self) -> dict[str, dict[str, Any]]:
        """What the model was handed for each tool call, by the tool's name."""
        assert self.api is not None
        found: dict[str, dict[str, Any]] = {}
        for request in self.api.requests():
            for content in (request.get("body") or {}).get("contents", []):
                for part in content.get("parts", []):
                    response = part.get("functionResponse")
                    if response is not None:
                        found[response["name"].removeprefix(PREFIX)] = response["response"]
        return found

    def close(self, ctx: str = "") -> None:
        if self.api is not None:
            self.api.close()
        no_leftovers(self.launch, ctx)


@pytest.fixture
def gemini(gemini_cli: GeminiCli, isolated_env: dict[str, str], tmp_path: Path) -> Iterator[Gemini]:
    made = Gemini(gemini_cli, isolated_env, tmp_path)
    yield made
    if made.api is not None:
        made.api.close()


def calls(*names: str) -> list[list[dict[str, Any]]]:
    return [[{"call": {"name": PREFIX + name, "args": {}}}] for name in names]


def test_every_kind_of_value_a_python_tool_returns_reaches_the_gemini_cli(gemini: Gemini) -> None:
    tools = [*TOOLS, broken]
    gemini.serve([*calls(*(fn.__name__ for fn in tools)), [{"text": "done"}]])
    # the Gemini CLI asks before each MCP tool: allowed, the results are what is tested
    result, events = gemini.turn("use every tool", tools=tools, permissions="auto")
    outputs = gemini.outputs()
    ctx = f"result: {result}\nmodel was handed: {json.dumps(outputs, indent=1)[:4000]}"
    for fn, text in TOOLS.items():
        handed = outputs.get(fn.__name__, {})
        assert "error" not in handed, f"{fn.__name__}: the Gemini CLI refused the result\n{ctx}"
        assert handed.get("output", "").endswith(f"<untrusted_context>\n{text}\n</untrusted_context>"), ctx
    assert "provided the following image data with mime-type: image/png" in outputs["picture"]["output"], ctx
    # the tool that raised: an error result, refused by the agent as a tool error, visible in the result
    assert "ValueError: no such number" in outputs["broken"].get("error", ""), ctx
    assert result.exit_code == 0 and result.response == "done", ctx
    [failed] = result.tool_errors
    assert failed.startswith("broken (agy-host-bridge MCP Server): ") and "no such number" in failed, ctx
    notices = [e for e in events if isinstance(e, agy_host.Notice) and e.code == "host-tool-failed"]
    assert [n.message.split(":")[0] for n in notices] == [
        "the agent reports host tool 'broken' as failed after agy-host answered it"
    ], ctx
    gemini.close(ctx)


def test_the_question_tool_reaches_the_gemini_cli_and_skips_the_permission_policy(gemini: Gemini) -> None:
    question = {"question": "Red or blue?", "choices": ["red", "blue"]}
    gemini.serve([[{"call": {"name": PREFIX + "agy_host_ask_user", "args": question}}], [{"tool_result": True}]])
    refused: list[Any] = []
    asked: list[Any] = []

    def refuse_all(request: Any) -> bool:
        refused.append(request)
        return False

    def answer(q: Any) -> str:
        asked.append(q)
        return "blue"

    result, events = gemini.turn("ask me", permissions=refuse_all, on_question=answer)
    assert gemini.api is not None
    offered = [
        f["name"]
        for t in gemini.api.requests()[0]["body"].get("tools", [])
        for f in t.get("functionDeclarations", [])
        if f["name"].startswith(PREFIX)
    ]
    ctx = f"result: {result}\nbridge tools the model was offered: {offered}\nrefused: {refused}"
    assert PREFIX + "agy_host_ask_user" in offered, ctx
    assert PREFIX + "ask_user" not in offered, f"the Gemini CLI hides the old name (its built-in's)\n{ctx}"
    assert refused == [] and [q.message for q in asked] == ["Red or blue?"], ctx
    [answered] = [e for e in events if isinstance(e, agy_host.PermissionAnswered)]
    assert answered.policy == "question" and answered.title == "agy_host_ask_user (agy-host-bridge MCP Server)", ctx
    assert "The user chose: blue" in result.response and result.exit_code == 0, ctx
    gemini.close(ctx)
