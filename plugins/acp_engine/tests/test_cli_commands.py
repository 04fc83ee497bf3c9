"""The ACP plugin's CLI surface, through the real ``agy-host`` console script."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

AGY_HOST = Path(sys.executable).with_name("agy-host")

pytestmark = pytest.mark.skipif(not AGY_HOST.exists(), reason=f"agy-host console script not installed at {AGY_HOST}")


def fake(scenario: str) -> str:
    return shlex.join([sys.executable, "-m", "agy_host.testing.acp.agent", "--scenario", scenario])


def run(tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGY_")}
    env["AGY_HOST_KEEP_ALIVE_MINUTES"] = "0"  # cold: no keeper outlives the test
    env.update(extra)
    env.update(
        HOME=str(tmp_path),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        PATH=str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin",
        AGY_HOST_ENGINE="acp",  # other engines may be installed next to this one
    )
    return subprocess.run(
        [str(AGY_HOST), *args], capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL
    )


def test_acp_auth_lists_antigravitys_methods_and_the_settings_shapes(tmp_path: Path) -> None:
    info = '{"name": "antigravity-acp", "title": "Google Antigravity", "version": "1.3.0"}'
    proc = run(tmp_path, "acp-auth", "--agent", f"{fake('auth-required')} --set 'agent_info={info}'")
    assert proc.returncode == 0, proc.stderr
    assert "oauth-personal   Log in with Google" in proc.stdout
    assert '{"auth": {"type": "gemini-api-key"}}' in proc.stdout
    assert "never reads, writes or prints credentials" in proc.stdout


def test_acp_auth_with_an_unstartable_agent_fails_clearly(tmp_path: Path) -> None:
    proc = run(tmp_path, "acp-auth", "--agent", "/nonexistent/agent")
    assert proc.returncode == 1
    assert "could not ask the agent: agent command not found: '/nonexistent/agent'" in proc.stderr


def test_run_against_an_agent_that_needs_a_sign_in(tmp_path: Path) -> None:
    proc = run(tmp_path, "run", "--agent", fake("auth-required"), "hi")
    assert proc.returncode == 1
    assert "needs a sign-in (session/new)" in proc.stderr
    assert "agy-host acp-auth" in proc.stderr


def test_fresh_install_runs_a_real_turn_on_the_sandbox_agent_and_says_so(tmp_path: Path) -> None:
    proc = run(tmp_path, "run", "Hello sandbox")
    assert proc.returncode == 0, proc.stderr
    assert "You said: Hello sandbox" in proc.stdout
    assert "sandbox agent" in proc.stderr


def test_doctor_shows_every_binary_path_tried(tmp_path: Path) -> None:
    proc = run(tmp_path, "doctor")
    assert proc.returncode in (0, 1), proc.stderr
    assert "binary (PATH):" in proc.stdout and "agy_acp_server.par: not on PATH" in proc.stdout
    assert f"{tmp_path}/.local/opt/agy-acp/current/agy_acp_server.par: does not exist" in proc.stdout


def test_a_named_binary_that_is_missing_fails_the_run_instead_of_falling_back(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "agy_acp_server.par"
    proc = run(tmp_path, "run", "hi", AGY_ACP_BIN=str(missing))
    assert proc.returncode == 1, proc
    assert f"AGY_ACP_BIN names Antigravity's ACP server as {missing}, which does not exist" in proc.stderr
    assert "You said" not in proc.stdout, "the turn ran on the sandbox agent instead"
    doctor = run(tmp_path, "doctor", AGY_ACP_BIN=str(missing))
    assert doctor.returncode == 1 and "not found" in doctor.stdout and "sandbox" not in doctor.stdout, doctor.stdout
