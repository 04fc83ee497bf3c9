"""``--format text`` to a pipe: stdout is the agent's answer exactly as the
agent wrote it, even when tool lines and warnings go to stderr mid-answer
(a line break is added before a side line only when both streams are one
terminal, where a person reads them interleaved)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agy_host.testing.agents import fake_acp_agent_command
from agy_host.testing.isolation import isolated_env


def test_a_side_line_mid_answer_adds_nothing_to_a_piped_stdout(tmp_path: Path) -> None:
    call = {"toolCallId": "t1", "title": "Read notes", "kind": "read", "status": "completed"}
    agent = fake_acp_agent_command(
        {"prompt": [{"chunk": "before "}, {"tool_call": call}, {"chunk": "after"}, {"stop": "end_turn"}]},
        workdir=tmp_path / "agents",
    )
    project = tmp_path / "project"
    project.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "agy_host.cli.main", "run", "--agent", agent.command_line, "--format", "text", "go"],
        env=isolated_env(tmp_path / "home", AGY_HOST_TTY="none"),
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Read notes" in proc.stderr, proc.stderr
    assert proc.stdout == "before after\n", repr(proc.stdout)
