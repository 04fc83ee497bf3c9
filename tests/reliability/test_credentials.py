"""agy-host never opens an agent's credentials, and never logs the bridge
token. Real ``agy-host`` commands run in a temporary HOME that holds fake
credential files, under an audit hook (``agents/audited_agy_host.py``); a
bridge turn goes end to end through a host tool that raises."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from reliability._support import AGENTS

from agy_host.testing.agents import fake_acp_agent_command
from agy_host.testing.agy_cli.agent import make_fake_agy
from agy_host.testing.isolation import install_plugin, isolated_env

#: Where Antigravity and Google tooling keep credentials (spec: agy-dialects B.7, original-implementation).
CREDENTIALS = [
    ".gemini/antigravity-acp/acp_token.json",
    ".gemini/antigravity-cli/antigravity-oauth-token",
    ".gemini/oauth_creds.json",
    ".config/gcloud/application_default_credentials.json",
]

TOOLS = """
from agy_host import hookimpl
from agy_host.contract.tools import HostTool, ToolResult


async def broken(args):
    raise RuntimeError("tool exploded")


@hookimpl
def agy_host_register_tools(register):
    register(HostTool(name="broken", description="always raises", input_schema={"type": "object"}, call=broken))
"""


class Home:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        self.audit = tmp / "audit.log"
        self.secrets = [self.home / rel for rel in CREDENTIALS]
        for path in self.secrets:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text('{"token": "FAKE-SECRET"}')
            path.chmod(0o600)
        site = install_plugin(tmp / "site", "rel_tools", TOOLS)
        self.env = isolated_env(
            self.home,
            AGY_HOST_TTY="none",
            PYTHONPATH=os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p),
            AUDIT_LOG=str(self.audit),
            AUDIT_FORBIDDEN=os.pathsep.join(str(p) for p in self.secrets),
        )

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, str(AGENTS / "audited_agy_host.py"), *args]
        return subprocess.run(
            argv, env={**self.env, **env}, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL
        )

    def opened(self) -> list[str]:
        return self.audit.read_text().splitlines() if self.audit.exists() else []

    def written_by_host(self) -> str:
        """Everything agy-host keeps on disk (state, config, cache)."""
        out = []
        for base in (self.home / ".local", self.home / ".config" / "agy-host", self.home / ".cache"):
            out += [p.read_text("utf-8", "replace") for p in base.rglob("*") if p.is_file()]
        return "\n".join(out)


def _token_from(agent_log: list[dict[str, Any]]) -> str:
    def walk(node: Any) -> str | None:
        if isinstance(node, dict):
            if node.get("name") == "x-bridge-token" and isinstance(node.get("value"), str):
                return str(node["value"])
            return next((t for v in node.values() if (t := walk(v))), None)
        if isinstance(node, list):
            return next((t for v in node if (t := walk(v))), None)
        return None

    token = walk([e for e in agent_log if e.get("method") == "session/new"])
    assert token and len(token) >= 32, "the agent was not given the bridge token"
    return token


def test_the_audit_hook_sees_an_open(tmp_path: Path) -> None:
    home = Home(tmp_path)
    result = home.run("--version", AUDIT_SELFTEST="1")
    assert result.returncode == 0, result.stderr
    assert home.opened() == [f"open {os.path.realpath(home.secrets[0])}"]


def test_a_bridge_turn_opens_no_credentials_logs_no_token_and_survives_a_raising_tool(tmp_path: Path) -> None:
    home = Home(tmp_path)
    steps = [
        {"mcp_call": {"tool": "broken", "arguments": {}, "prefix": "OK:", "error_prefix": "ERR:"}},
        {"chunk": " AFTER"},
    ]
    agent = fake_acp_agent_command({"prompt": steps}, workdir=tmp_path / "agent")
    result = home.run(
        "run", "--engine", "acp", "--agent", agent.command_line, "--format", "json", "--session", "cred", "go"
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    text = "".join(e.get("delta", "") for e in events if e["type"] == "text")
    assert text.startswith("ERR:") and "tool exploded" in text and text.endswith("AFTER"), text  # the turn went on
    token = _token_from(agent.received())
    assert token not in result.stdout and token not in result.stderr
    assert token not in home.written_by_host()
    assert home.opened() == []
    doctor = home.run("doctor", "--engine", "acp", "--agent", agent.command_line)
    assert token not in doctor.stdout + doctor.stderr
    assert home.opened() == []


@pytest.mark.parametrize("command", [["run", "--engine", "stream-json", "hi"], ["doctor", "--engine", "stream-json"]])
def test_stream_json_commands_open_no_credentials(tmp_path: Path, command: list[str]) -> None:
    home = Home(tmp_path)
    fake = make_fake_agy(tmp_path / "agy", "happy")
    result = home.run(*command, AGY_BIN=str(fake.bin))
    assert result.returncode in (0, 1), result.stderr  # doctor may find things to report; it must not crash
    if command[0] == "run":
        assert result.returncode == 0 and "HELLO" in result.stdout, result.stderr
    assert home.opened() == []
    for path in home.secrets:
        assert path.read_text() == '{"token": "FAKE-SECRET"}'
