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
    cmd = [str(cli), "run", "--agent", shlex.join(argv), "--format", "json", "--session", session, prompt]
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
