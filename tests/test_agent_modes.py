"""``--mode`` is the agent's (issue 26 item 9): any mode an ACP agent
advertises is passed (``plan`` on the Gemini CLI), another is refused with
the list, ``ask --mode plan`` plans in the agent's own mode, and ``doctor``
shows the modes and capabilities the agent really advertises. Through the
real CLI against the kit's fake ACP agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp_cli import agy_host, run_turn

from agy_host.testing.agents import FakeAgent, fake_acp_agent_command

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")

#: What the Gemini CLI 0.46 answers in ``session/new`` (tests/fixtures, mprasanjith-anyagent).
GEMINI_MODES = {
    "currentModeId": "default",
    "availableModes": [
        {"id": "default", "name": "Default", "description": "Prompts for approval"},
        {"id": "autoEdit", "name": "Auto Edit", "description": "Auto-approves edit tools"},
        {"id": "yolo", "name": "YOLO", "description": "Auto-approves all tools"},
        {"id": "plan", "name": "Plan", "description": "Read-only mode"},
    ],
}


def gemini_like(tmp_path: Path, **options: Any) -> FakeAgent:
    """An agent with the Gemini CLI's modes in the ``modes`` field and no config options."""
    return fake_acp_agent_command(
        "happy", workdir=tmp_path / "agents", modes=GEMINI_MODES, config_options=None, **options
    )


def set_modes(agent: FakeAgent) -> list[str]:
    return [m["params"]["modeId"] for m in agent.requests("session/set_mode")]


def test_a_mode_the_agent_advertises_is_passed_plan_included(tmp_path: Path) -> None:
    agent = gemini_like(tmp_path)
    proc = run_turn(tmp_path, agent, "--mode", "plan")
    assert proc.returncode == 0, proc.stderr
    assert set_modes(agent) == ["plan"]
    assert agent.requests("session/prompt"), "the turn ran"


def test_a_mode_the_agent_does_not_advertise_is_refused_with_the_list(tmp_path: Path) -> None:
    agent = gemini_like(tmp_path)
    proc = run_turn(tmp_path, agent, "--mode", "accept-edits")
    assert proc.returncode == 1, proc.stderr
    assert "has no mode 'accept-edits'; it advertises: default, autoEdit, yolo, plan" in proc.stderr
    assert set_modes(agent) == [] and not agent.requests("session/prompt"), "refused before the prompt"


def test_the_mode_config_option_is_read_too(tmp_path: Path) -> None:
    """The fake's default: modes as the ``mode`` config option (no ``plan``)."""
    agent = fake_acp_agent_command("happy", workdir=tmp_path / "agents")
    proc = run_turn(tmp_path, agent, "--mode", "plan")
    assert proc.returncode == 1, proc.stderr
    assert "has no mode 'plan'; it advertises: default, auto_edit, yolo" in proc.stderr
    assert "agy-host ask --mode plan" in proc.stderr
    proc = run_turn(tmp_path, agent, "--mode", "yolo")
    assert proc.returncode == 0, proc.stderr
    sets = [m["params"] for m in agent.requests("session/set_config_option") if m["params"]["configId"] == "mode"]
    assert [s["value"] for s in sets] == ["yolo"]


def test_ask_plan_runs_in_the_agents_own_plan_mode(tmp_path: Path) -> None:
    """Not through the agy CLI: the agent plans itself (there is no agy here)."""
    agent = gemini_like(tmp_path)
    proc = agy_host(tmp_path, "ask", "--agent", agent.command_line, "--mode", "plan", "--format", "json", "plan it")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert (report["status"], report["engine"], report["mode"]) == ("ok", "acp", "plan")
    assert set_modes(agent) == ["plan"]


def test_doctor_shows_what_the_agent_advertises(tmp_path: Path) -> None:
    """The sandbox agent takes no images and reports no usage: doctor must not say it does."""
    proc = agy_host(tmp_path, "doctor", "--agent", "sandbox")
    capabilities = next(line for line in proc.stdout.splitlines() if "capabilities" in line and "advertised" in line)
    assert "images" not in capabilities and "reports_usage" not in capabilities, capabilities
    assert "load_session" in capabilities and "resources" in capabilities
    agent = gemini_like(tmp_path)
    proc = agy_host(tmp_path, "doctor", "--agent", agent.command_line)
    assert "default, autoEdit, yolo, plan (current: default)" in proc.stdout, proc.stdout
    capabilities = next(line for line in proc.stdout.splitlines() if "capabilities" in line and "advertised" in line)
    assert "plan_mode" in capabilities


def test_the_help_says_modes_are_the_agents(tmp_path: Path) -> None:
    for command in ("run", "chat", "ask"):
        out = " ".join(agy_host(tmp_path, command, "--help").stdout.split())
        assert "--mode MODE The agent's mode, by the agent's own name" in out, out
        assert "accept-edits" not in out


def test_the_mode_switch_an_always_answer_causes_is_a_notice_not_answer_text(tmp_path: Path) -> None:
    """The Gemini CLI's "Allow for this session" on an edit switches it to
    ``autoEdit`` and it says ``[MODE_UPDATE] autoEdit`` as a message chunk
    (new-user trial): after the person answered "always", that chunk is the
    agent's notice, not part of the answer."""
    from agy_host.testing.terminal import Pty

    options = [
        {"optionId": "proceed_always", "name": "Allow for this session", "kind": "allow_always"},
        {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
        {"optionId": "cancel", "name": "Reject", "kind": "reject_once"},
    ]
    branches = {
        "proceed_always": [{"chunk": "[MODE_UPDATE] autoEdit"}, {"chunk": "EDITED"}],
        "*": [{"chunk": "EDITED"}],
    }
    tool = {"toolCallId": "write-1", "title": "Writing to out.txt", "kind": "edit"}
    scenario = {"prompt": [{"permission": {"tool_call": tool, "options": options, "branches": branches}}]}
    agent = fake_acp_agent_command(scenario, workdir=tmp_path / "agents", modes=GEMINI_MODES, config_options=None)
    with Pty() as tty:
        tty.type("1\n")  # 1) Allow for this session
        proc = agy_host(
            tmp_path, "run", "--agent", agent.command_line, "--permissions", "ask", "-f", "json", "go", tty=tty.path
        )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    [end] = [e for e in lines if e["type"] == "turn_end"]
    assert end["response"] == "EDITED", proc.stdout
    assert [e["message"] for e in lines if e.get("code") == "agent-mode"] == ["the agent's mode is now autoEdit"]
