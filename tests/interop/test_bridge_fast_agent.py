"""The MCP bridge with a real third-party ACP agent: fast-agent-mcp honours
client-provided ``mcpServers`` (with the token header) and, with its
``passthrough`` model, ``***CALL_TOOL <server>__<tool> {json}`` makes it call
that tool. Through ``agy-host run``: the agent calls the host tool over real
HTTP, the turn parks (``tool_use``), the host runs the tool, the agent gets
the result and ends its turn with it; a second run on the same session
(``session/load``, which carries ``mcpServers`` again) does it once more."""

from __future__ import annotations

import json
import shlex
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from interop.provision import FastAgent
from interop.rawacp import kill_all, wait_gone
from interop.test_acp_agents import RUN_TIMEOUT

pytestmark = pytest.mark.interop


def run(cli: Path, argv: list[str], session: str, prompt: str, *, env: dict[str, str], cwd: Path) -> tuple[Any, str]:
    cmd = [str(cli), "run", "--agent", shlex.join(argv), "--format", "json", "--session", session]
    cmd += ["--permissions", "auto", prompt]  # fast-agent asks before every MCP tool; the round trip is tested here
    proc = subprocess.run(
        cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL
    )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    ctx = f"$ {shlex.join(cmd)}\nexit {proc.returncode}\n{proc.stdout[-5000:]}\n--- stderr ---\n{proc.stderr[-3000:]}"
    return (proc, events), ctx


def test_fast_agent_calls_a_host_tool_through_the_bridge(
    agy_host_cli: Path, fast_agent: FastAgent, tools_env: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    launch = fast_agent.launch(tmp_path)
    session = f"bridge-{uuid.uuid4().hex[:8]}"
    try:
        for turn in ("first", "second"):
            token = f"{turn}-{uuid.uuid4().hex[:8]}"
            prompt = f'***CALL_TOOL agy-host-bridge__host_echo {{"token": "{token}"}}'
            (proc, events), ctx = run(agy_host_cli, launch.argv, session, prompt, env=tools_env, cwd=workdir)
            assert proc.returncode == 0, ctx
            uses = [e for e in events if e["type"] == "tool_use"]
            assert [(u["name"], u["args"]) for u in uses] == [("host_echo", {"token": token})], ctx
            text = "".join(e.get("delta", "") for e in events if e["type"] == "text")
            assert f'host echo: {{"token": "{token}"}}' in text, ctx
            assert [e["stop_reason"] for e in events if e["type"] == "turn_end"] == ["stop"], ctx
            assert events[-1]["type"] == "done" and events[-1]["exit_code"] == 0, ctx
    finally:
        left = wait_gone(launch.marker)
        if left:
            kill_all(launch.marker)
    assert not left, f"fast-agent processes left behind: {left}"


def test_fast_agent_asks_the_bridges_question_past_a_policy_that_refuses_tools(
    fast_agent: FastAgent, isolated_env: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    """fast-agent asks permission before every MCP tool (``agy-host-bridge/<tool>``).
    A permissions callback that allows only reads, searches and edits refused
    the bridge's question tool, and ``on_question`` was never called (issue 26
    item 7): the question tool goes straight to the question broker."""
    import trio

    import agy_host

    launch = fast_agent.launch(tmp_path)
    env = {**isolated_env, "AGY_HOST_TTY": "none"}
    asked: list[Any] = []
    decided: list[Any] = []

    def reads_only(request: Any) -> bool:
        decided.append(request.title)
        return request.tool_kind in ("read", "search", "edit")

    def answer(question: Any) -> str:
        asked.append(question)
        return "blue"

    async def main() -> Any:
        prompt = '***CALL_TOOL agy-host-bridge__agy_host_ask_user {"question": "Red or blue?"}'
        agent = shlex.join(launch.argv)
        async with agy_host.open_session(
            agent=agent, env=env, cwd=workdir, permissions=reads_only, on_question=answer
        ) as s:
            events = [e async for e in s.prompt(prompt)]
            return s.result, events

    try:
        result, events = trio.run(main)
    finally:
        left = wait_gone(launch.marker)
        if left:
            kill_all(launch.marker)
    ctx = f"{result}\nasked the policy about: {decided}"
    assert decided == [] and [q.message for q in asked] == ["Red or blue?"], ctx
    [answered] = [e for e in events if isinstance(e, agy_host.PermissionAnswered)]
    assert (answered.title, answered.policy) == ("agy-host-bridge/agy_host_ask_user", "question"), ctx
    assert "The user answered: blue" in result.response and result.exit_code == 0, ctx
    assert not left, f"fast-agent processes left behind: {left}"
