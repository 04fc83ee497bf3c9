"""What real ACP agents were seen doing that agy-host got wrong (issue 24):
through the real CLI against the kit's fake ACP agent, which is scripted to
behave as the real agent did."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp_cli import run_turn

from agy_host.testing.agents import fake_acp_agent_command

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")


def test_a_validation_error_shows_the_field_paths_the_agent_refused(tmp_path: Path) -> None:
    """A ``-32602`` answer carries ACP's own validation errors in
    ``data.errors[]`` (pydantic ``loc``/``msg``, zod ``path``/``message``):
    the user sees which field of the request was refused."""
    data = {
        "errors": [
            {"loc": ["prompt", 0, "text"], "msg": "Field required", "type": "missing"},
            {"path": ["sessionId"], "message": "Expected string"},
        ]
    }
    script = {"prompt": [{"error": {"code": -32602, "message": "Invalid params", "data": data}}]}
    agent = fake_acp_agent_command(script, workdir=tmp_path / "agents")
    proc = run_turn(tmp_path, agent)
    assert proc.returncode == 1, proc.stderr
    assert "prompt.0.text: Field required" in proc.stderr, proc.stderr
    assert "sessionId: Expected string" in proc.stderr, proc.stderr
