"""Tool cards as real ACP agents title them (issue 24): through the real CLI
against the kit's fake ACP agent playing the agents' recorded shapes
(``claude-edit``, ``gemini-tools``), in ``--format json`` and at the terminal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp_cli import run_turn

from agy_host.testing.agents import fake_acp_agent_command

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")


def cards(stdout: str) -> list[tuple[str, str, str, str]]:
    events: list[dict[str, Any]] = [json.loads(line) for line in stdout.splitlines()]
    return [
        (e["call_id"], e["status"], e.get("kind", "other"), e.get("title", "")) for e in events if e["type"] == "tool"
    ]


def test_a_card_takes_the_title_the_agent_gives_it_later(tmp_path: Path) -> None:
    """claude-agent-acp titles an edit "Edit", then "Edit src/app.ts": the
    card is shown again with the new title, and ends with it."""
    agent = fake_acp_agent_command("claude-edit", workdir=tmp_path / "agents")
    proc = run_turn(tmp_path, agent, "--format", "json", "--permissions", "auto")  # cards are tested, not asking
    assert proc.returncode == 0, proc.stderr
    edit = "toolu_01EditAppTs"
    assert cards(proc.stdout) == [
        (edit, "started", "edit", "Edit"),
        (edit, "started", "edit", "Edit src/app.ts"),
        (edit, "done", "edit", "Edit src/app.ts"),
    ]
    shown = run_turn(tmp_path, agent, "--format", "text", "--permissions", "auto").stderr.splitlines()
    assert "[tool] Edit (started)" in shown and "[tool] Edit src/app.ts (started)" in shown, shown
    assert any(line.startswith("[tool] Edit src/app.ts (done") for line in shown), shown


def test_a_gemini_cli_call_is_titled_by_its_permission_request(tmp_path: Path) -> None:
    """The Gemini CLI sends no tool_call for a call it asks about: the card
    starts when the call is allowed, titled by the request (never ``other``,
    never the previous call's), and keeps that title when the call's end
    carries none."""
    agent = fake_acp_agent_command("gemini-tools", workdir=tmp_path / "agents")
    proc = run_turn(tmp_path, agent, "--format", "json", "--permissions", "auto")  # cards are tested, not asking
    assert proc.returncode == 0, proc.stderr
    read, todos, shell = (
        "read_file__read_file_1_0",
        "write_todos__write_todos_2_0",
        "run_shell_command__run_shell_command_3_0",
    )
    assert cards(proc.stdout) == [
        (read, "started", "read", "a.txt"),
        (read, "done", "read", "a.txt"),
        (todos, "started", "other", "Set 1 todo(s)"),
        (todos, "done", "other", "Set 1 todo(s)"),
        (shell, "started", "execute", "make build"),
        (shell, "failed", "execute", "make build"),
    ]
    shown = run_turn(tmp_path, agent, "--format", "text", "--permissions", "auto").stderr
    assert "[tool] Set 1 todo(s) (done" in shown and "[tool] make build (failed" in shown, shown
    assert "[tool] other" not in shown, shown
