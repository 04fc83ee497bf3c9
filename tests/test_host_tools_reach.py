"""Host tools that cannot reach the agent stop the session before it opens
(issue 26 item 4).

After the README's set-up without the bridge (``./core ./plugins/acp_engine``),
``agy_host.run(..., tools=[add])`` on an ACP agent exited 0 and the model was
told ``Tool "add" not found``. Here agy-host runs as installed without the
bridge: a child whose ``PYTHONPATH`` starts with an empty distribution of the
bridge's name, which shadows the installed one
(:func:`agy_host.testing.isolation.hide_distribution`), so no bridge plugin is
found, exactly as when it is not installed. The kit's fake ACP agent is the
agent; it must never be started.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agy_host.testing.agents import FakeAgent, fake_acp_agent_command
from agy_host.testing.isolation import hide_distribution, install_plugin, isolated_env

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")
pytest.importorskip("agy_host_bridge_mcp.hooks", reason="the bridge is not installed (nothing to hide)")

#: The end of the install hint, from a clone (``./plugins/bridge_mcp``, or
#: the clone's own absolute folder) and in the hint for an index.
INSTALL = "plugins/bridge_mcp`"
TOOLS = """
from agy_host import hookimpl
from agy_host.contract.tools import HostTool, ToolResult


async def echo(args):
    return ToolResult(text="echo")


@hookimpl
def agy_host_register_tools(register):
    register(HostTool(name="host_echo", description="echo", input_schema={"type": "object"}, call=echo))
"""
PROGRAM = """
import json, sys
import agy_host

def add(a: int, b: int = 2) -> int:
    "Add two numbers."
    return a + b

try:
    r = agy_host.run("what is 40 + 2?", agent=sys.argv[1], tools=[add])
    print(json.dumps({"exit_code": r.exit_code, "response": r.response}))
except agy_host.AgyHostError as exc:
    print(json.dumps({"error": type(exc).__name__, "exit_code": exc.exit_code, "message": str(exc)}))
"""
ADD = {"prompt": [{"mcp_call": {"tool": "add", "arguments": {"a": 40}}}, {"stop": "end_turn"}]}


class Setup:
    """A project, a home, the fake agent, and the child's ``PYTHONPATH``."""

    def __init__(self, tmp_path: Path, *, bridge: bool) -> None:
        self.tmp = tmp_path
        self.cwd = tmp_path / "project"
        self.cwd.mkdir()
        site = tmp_path / "site"
        site.mkdir()
        if not bridge:
            hide_distribution(site, "agy-host-bridge-mcp")
        install_plugin(site, "agyt_reach_tools", TOOLS)
        path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
        self.env = isolated_env(tmp_path / "home", AGY_HOST_TTY="none", AGY_HOST_ENGINE="acp", PYTHONPATH=path)
        self.agent: FakeAgent = fake_acp_agent_command(ADD, workdir=tmp_path / "agents")

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *argv],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=90,
            stdin=subprocess.DEVNULL,
        )

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run("-m", "agy_host.cli.main", *args)

    def program(self) -> dict[str, object]:
        script = self.tmp / "program.py"
        script.write_text(textwrap.dedent(PROGRAM))
        done = self.run(str(script), self.agent.command_line)
        assert done.returncode == 0, done.stderr
        found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
        return found

    def agent_started(self) -> bool:
        return bool(self.agent.received())


def test_a_programs_tools_without_the_bridge_stop_the_session_before_the_agent_starts(tmp_path: Path) -> None:
    setup = Setup(tmp_path, bridge=False)
    got = setup.program()
    assert got["error"] == "EngineUnavailable" and got["exit_code"] == 1, got
    message = str(got["message"])
    assert "host tools 'add', " in message and "cannot reach the agent" in message, message
    assert "MCP bridge (agy-host-bridge-mcp)" in message and INSTALL in message, message
    assert not setup.agent_started()


def test_a_plugins_tools_without_the_bridge_stop_run_before_the_agent_starts(tmp_path: Path) -> None:
    setup = Setup(tmp_path, bridge=False)
    done = setup.cli("run", "--agent", setup.agent.command_line, "--format", "json", "go")
    assert done.returncode == 1, done.stderr
    assert "'host_echo'" in done.stderr and "cannot reach the agent" in done.stderr and INSTALL in done.stderr
    [last] = [json.loads(line) for line in done.stdout.splitlines() if line.strip()][-1:]
    assert last["type"] == "done" and last["exit_code"] == 1 and INSTALL in json.dumps(last), last
    assert not setup.agent_started()


def test_config_show_and_doctor_say_the_bridge_is_not_there(tmp_path: Path) -> None:
    setup = Setup(tmp_path, bridge=False)
    shown = setup.cli("config", "show")
    assert shown.returncode == 0, shown.stderr
    bridge = shown.stdout.split("[bridge]\n", 1)[1]
    assert bridge.startswith("enabled = false\n"), shown.stdout
    [said] = [line for line in shown.stdout.splitlines() if line.startswith("# [bridge] is off here: ")]
    assert said.startswith("# [bridge] is off here: the MCP bridge is not installed; install it: `pip install ")
    assert INSTALL in said, said
    as_json = json.loads(setup.cli("config", "show", "--format", "json").stdout)
    assert as_json["config"]["bridge"]["enabled"] is False and INSTALL in as_json["inactive"]["bridge"]

    doctor = setup.cli("doctor", "--format", "json", "--agent", setup.agent.command_line)
    [section] = [s for s in json.loads(doctor.stdout)["sections"] if s["title"] == "host tools"]
    rows = {r["label"]: r for r in section["rows"]}
    assert "host_echo" in rows["registered"]["value"]
    reach = rows["reach the agent"]
    assert reach["status"] == "error" and reach["value"].startswith("no: the acp engine"), reach
    assert INSTALL in reach["value"]
    assert doctor.returncode == 1


def test_with_the_bridge_the_same_tools_reach_the_agent(tmp_path: Path) -> None:
    setup = Setup(tmp_path, bridge=True)
    got = setup.program()
    assert got == {"exit_code": 0, "response": "tool result: 42"}, got
    shown = setup.cli("config", "show")
    assert shown.stdout.split("[bridge]\n", 1)[1].startswith("enabled = true\n") and "is off here" not in shown.stdout
    doctor = setup.cli("doctor", "--format", "json", "--agent", setup.agent.command_line)
    [section] = [s for s in json.loads(doctor.stdout)["sections"] if s["title"] == "host tools"]
    reach = {r["label"]: r for r in section["rows"]}["reach the agent"]
    assert (reach.get("status", "ok"), reach["value"]) == ("ok", "through the MCP bridge (agy-host-bridge-mcp)")


def test_a_bridge_turned_off_on_purpose_refuses_a_programs_tools_only(tmp_path: Path) -> None:
    """``[bridge] enabled = false`` is the user's choice: plugins' tools are
    then not offered, and runs go on; a program that passes ``tools=`` still
    asked for tools no agent would see."""
    setup = Setup(tmp_path, bridge=True)
    setup.env["AGY_HOST_BRIDGE"] = "0"
    setup.agent = fake_acp_agent_command("happy", workdir=tmp_path / "agents")
    done = setup.cli("run", "--agent", setup.agent.command_line, "go")
    assert done.returncode == 0, done.stderr
    got = setup.program()
    assert got["error"] == "EngineUnavailable", got
    assert "host tool 'add' cannot reach" in str(got["message"]) and "is turned off" in str(got["message"]), got
