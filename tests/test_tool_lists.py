"""Tool lists (issue 27 item 3): ``allowed_tools``/``disallowed_tools`` of
the Python API, ``--allow-tool``/``--deny-tool`` of ``run`` (``chat`` and
``ask`` take them too) and the config's ``[permissions]`` lists, applied
before the permission policy, with the kit's fake ACP agent and a host tool
of an installed plugin reached through the MCP bridge; real ``agy-host run``
processes for the flags. The harness's share is in
plugins/harness_engine/tests/test_python_hooks.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import program_kit
import pytest
from program_kit import LOOPS, run_on

import agy_host
from agy_host.testing.agents import FakeAgent
from agy_host.testing.isolation import install_plugin

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")

AGY_HOST = [sys.executable, "-m", "agy_host.cli.main"]
TOOLS = """
from agy_host import hookimpl
from agy_host.contract.tools import HostTool, ToolResult


async def host_echo(args):
    return ToolResult(text="echo " + str(args.get("text", "")))


@hookimpl
def agy_host_register_tools(register):
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    register(HostTool(name="host_echo", description="echo", input_schema=schema, call=host_echo))
"""
SHELL = {"toolCallId": "call-1", "title": "Run run_shell_command?", "kind": "execute", "status": "pending"}
PERMISSION = {
    "permission": {
        "tool_call": SHELL,
        "branches": {"allow": [{"chunk": "P:allow / "}], "reject": [{"chunk": "P:reject / "}]},
    }
}
ECHO = {"mcp_call": {"tool": "host_echo", "arguments": {"text": "hi"}}}
SCENARIO = {"prompt": [PERMISSION, ECHO, {"stop": "end_turn"}]}


class Home(program_kit.Home):
    """The kit's HOME with a plugin's host tool installed for its commands."""

    def __init__(self, tmp_path: Path) -> None:
        site = install_plugin(tmp_path / "site", "list_test_tools", TOOLS)
        paths = [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]
        super().__init__(tmp_path, PYTHONPATH=os.pathsep.join(paths))
        self.config = Path(self.env["XDG_CONFIG_HOME"]) / "agy-host" / "config.toml"

    def agent(self, scenario: Any = SCENARIO) -> FakeAgent:
        return super().agent(scenario)

    def configure(self, text: str) -> None:
        self.config.parent.mkdir(parents=True, exist_ok=True)
        self.config.write_text(text)

    def cli(self, *args: str) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
        argv = [*AGY_HOST, "run", "--agent", self.agent().command_line, "--format", "json", *args, "go"]
        proc = subprocess.run(
            argv, env=self.env, cwd=self.cwd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
        )
        return proc, [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def response(events: list[dict[str, Any]]) -> str:
    [end] = of(events, "turn_end")
    return str(end["response"])


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path)


def test_deny_tool_refuses_a_permission_request_and_a_host_tool_naming_the_pattern(home: Home) -> None:
    """``--deny-tool`` wins over ``--permissions auto``: the agent's request is
    refused by ``disallowed_tools`` (exit 5: its only request), the host tool
    is not run and the agent's error names the list, the pattern and the flag."""
    proc, events = home.cli("--permissions", "auto", "--deny-tool", "kind:execute", "--deny-tool", "host_*")
    assert proc.returncode == 5, proc.stderr
    [asked] = of(events, "permission")
    assert (asked["selected"], asked["policy"]) == ("deny", "disallowed_tools"), asked
    assert asked["reason"] == (
        "'run_shell_command' denied by disallowed_tools pattern 'kind:execute' (--deny-tool, matches kind 'execute')"
    )
    assert response(events) == (
        "P:reject / tool error: host tool 'host_echo' was refused by agy-host: 'host_echo' denied by "
        "disallowed_tools pattern 'host_*' (--deny-tool, matches 'host_echo')"
    )
    [notice] = [n for n in of(events, "notice") if n.get("code") == "tool-denied"]
    assert "host_*" in notice["message"]


def test_allow_tool_allows_before_the_policy_and_deny_tool_wins(home: Home) -> None:
    """``--allow-tool`` allows what ``--permissions deny`` refuses, without
    asking it; the same tool in ``--deny-tool`` too is denied (denied wins)."""
    proc, events = home.cli("--permissions", "deny", "--allow-tool", "run_shell_*")
    assert proc.returncode == 0, proc.stderr
    [asked] = of(events, "permission")
    assert (asked["selected"], asked["policy"]) == ("allow", "allowed_tools"), asked
    assert response(events) == "P:allow / tool result: echo hi"
    proc, events = home.cli("--permissions", "deny", "--allow-tool", "kind:*", "--deny-tool", "RUN_SHELL_COMMAND")
    assert proc.returncode == 5
    [asked] = of(events, "permission")
    assert asked["policy"] == "disallowed_tools" and "'RUN_SHELL_COMMAND'" in asked["reason"], asked


def test_the_configs_lists_apply_and_name_the_file(home: Home) -> None:
    home.configure('[permissions]\npolicy = "auto"\ndisallowed_tools = ["run_shell_command"]\n')
    proc, events = home.cli()
    assert proc.returncode == 5, proc.stderr
    [asked] = of(events, "permission")
    assert asked["reason"] == (
        "'run_shell_command' denied by disallowed_tools pattern 'run_shell_command' "
        f"([permissions] disallowed_tools in {home.config}, matches 'run_shell_command')"
    )
    home.configure('[permissions]\npolicy = "deny"\nallowed_tools = ["kind:execute", "host_echo"]\n')
    proc, events = home.cli()
    assert proc.returncode == 0 and response(events) == "P:allow / tool result: echo hi", proc.stderr


def test_a_list_that_cannot_be_used_exits_2_before_any_turn(home: Home) -> None:
    proc, _ = home.cli("--deny-tool", "x" * 1001)
    assert proc.returncode == 2, proc.stderr
    assert "disallowed_tools: rule 1: pattern: a glob of 1,001 characters (at most 1,000 in one field)" in proc.stderr
    proc, _ = home.cli("--allow-tool", " ")
    assert proc.returncode == 2 and "allowed_tools: the pattern '' (--allow-tool) is empty" in proc.stderr
    home.configure("[permissions]\n" + "disallowed_tools = [" + ", ".join(['"t"'] * 1001) + "]\n")
    proc, _ = home.cli()
    assert proc.returncode == 2 and "disallowed_tools: 1,001 rules (at most 1,000" in proc.stderr, proc.stderr
    logs = "".join(log.read_text() for log in home.tmp.glob("agent-*/fake-acp-*.log"))
    assert "session/prompt" not in logs, "no turn was sent to an agent"


@pytest.mark.parametrize("command", ["chat", "ask"])
def test_chat_and_ask_take_the_flags(home: Home, command: str) -> None:
    help_text = subprocess.run(
        [*AGY_HOST, command, "--help"], env={**home.env, "COLUMNS": "200"}, capture_output=True, text=True, timeout=60
    ).stdout
    assert "--allow-tool" in help_text and "--deny-tool" in help_text


def host_echo(text: str) -> str:
    """Echo the text (the program's own tool)."""
    return f"echo {text}"


@pytest.mark.parametrize("loop", LOOPS)
def test_the_python_lists(home: Home, loop: str) -> None:
    """``allowed_tools=`` allows what ``permissions="deny"`` refuses;
    ``disallowed_tools=`` refuses a host tool (one pattern as a plain str)."""
    options: dict[str, Any] = {"allowed_tools": ["kind:execute"], "disallowed_tools": "host_echo"}
    result = run_on(loop, lambda: home.run(SCENARIO, permissions="deny", tools=[host_echo], **options))
    assert result.response == (
        "P:allow / tool error: host tool 'host_echo' was refused by agy-host: 'host_echo' denied by "
        "disallowed_tools pattern 'host_echo' (disallowed_tools=, matches 'host_echo')"
    ), result
    with pytest.raises(agy_host.UsageError, match="allowed_tools must be a list of tool patterns"):
        agy_host.open_session(env=home.env, allowed_tools=[1])  # type: ignore[list-item]
