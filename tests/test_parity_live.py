"""The live check's plumbing (``nox -s parity-live``, ``tests/parity --live``),
proven on fakes, since this machine has no real, signed-in Antigravity.

Each test runs the live suite the way the nox session does (pytest with
``--live``, in a subprocess), pointed at fakes through the variables a user
sets: ``AGY_ACP_BIN`` and ``AGY_BIN`` (the engines' own binary resolution)
and ``AGY_HOST_LIVE_AGENT``. The fakes do real turns over real pipes, so the
turns the suite announces can be counted on the fakes' own logs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from parity.live import LIVE_SECTION

from agy_host.testing.agy_cli.agent import make_fake_agy

REPO = Path(__file__).resolve().parents[1]
FAKE_ACP = [sys.executable, "-m", "agy_host.testing.acp.agent"]
#: What agy says when its quota runs out (agy-dialects.md B.6), as a JSON-RPC error of the prompt.
QUOTA_ERROR = {
    "error": {
        "code": -32603,
        "message": "Internal error",
        "data": {"details": "RESOURCE_EXHAUSTED (code 429): Individual quota reached. Resets in 34m13s."},
    }
}

NEEDED = ("agy_host_acp", "agy_host_stream_json", "agy_host_bridge_mcp")
pytestmark = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in NEEDED),
    reason="the live check needs both Antigravity engines and the bridge installed",
)


def fake_acp(tmp_path: Path, name: str, *sets: str) -> tuple[str, Path]:
    """A fake ACP agent command and its log."""
    log = tmp_path / f"{name}.jsonl"
    argv = [*FAKE_ACP, "--scenario", "happy", "--set", "session_id=generate", "--log", str(log)]
    for item in sets:
        argv += ["--set", item]
    return shlex.join(argv), log


def executable(path: Path, command: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\nexec {command}\n")
    path.chmod(0o755)
    return path


def prompts(log: Path) -> int:
    """``session/prompt`` requests in a fake ACP agent's log."""
    if not log.exists():
        return 0
    return sum(1 for line in log.read_text().splitlines() if json.loads(line).get("method") == "session/prompt")


def live(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``pytest tests/parity --live ARGS`` with nothing real to find: HOME
    and PATH of the test's own, no agy-host or agy variables but ``env``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AGY_", "PYTEST", "XDG_", "GEMINI_"))}
    base.update(HOME=str(tmp_path / "home"), PATH=f"{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin")
    (tmp_path / "home").mkdir(exist_ok=True)
    argv = [sys.executable, "-m", "pytest", "tests/parity", "--live", "-p", "no:cacheprovider", *args]
    return subprocess.run(argv, cwd=REPO, env={**base, **env}, capture_output=True, text=True, timeout=300, check=False)


def test_without_agy_host_live_nothing_runs_and_it_says_so(tmp_path: Path) -> None:
    agent, log = fake_acp(tmp_path, "agent")
    proc = live(tmp_path, AGY_HOST_LIVE_AGENT=agent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "live check skipped: AGY_HOST_LIVE=1 is not set" in proc.stderr
    assert not log.exists(), "nothing was started"


def test_with_nothing_found_or_signed_in_it_skips_in_one_line(tmp_path: Path) -> None:
    nothing = live(tmp_path, AGY_HOST_LIVE="1")
    assert nothing.returncode == 0, nothing.stdout + nothing.stderr
    [line] = [x for x in nothing.stderr.splitlines() if "live check" in x]
    assert "no signed-in agent to run against" in line
    assert "acp: Antigravity's ACP server not found" in line and "`agy-host acp install`" in line
    assert "stream-json: agy not found (PATH: agy)" in line and "agent: $AGY_HOST_LIVE_AGENT is not set" in line

    server, _ = fake_acp(tmp_path, "server", "auth_required=true")
    agent, agent_log = fake_acp(tmp_path, "agent", "auth_required=true", "auth_message=please log in")
    agy = make_fake_agy(tmp_path / "agy", "happy", signed_in=False)
    unsigned = live(
        tmp_path,
        AGY_HOST_LIVE="1",
        AGY_ACP_BIN=str(executable(tmp_path / "bin" / "agy_acp_server.par", server)),
        AGY_BIN=str(agy.bin),
        AGY_HOST_LIVE_AGENT=agent,
    )
    assert unsigned.returncode == 0, unsigned.stdout + unsigned.stderr
    [line] = [x for x in unsigned.stderr.splitlines() if "live check" in x]
    assert "acp: " in line and "agy_acp_server.par not signed in" in line and "`agy-host acp-auth`" in line
    assert f"stream-json: {agy.bin} is not signed in: run `agy` once to sign in" in line
    assert "agent: " in line and "not signed in (please log in)" in line
    assert prompts(agent_log) == 0, "the ACP sign-in checks spend no turn"


def test_the_live_path_runs_real_turns_and_counts_them_first(tmp_path: Path) -> None:
    server, server_log = fake_acp(tmp_path, "server")
    agent, agent_log = fake_acp(tmp_path, "agent")
    agy = make_fake_agy(tmp_path / "agy", "happy")
    proc = live(
        tmp_path,
        "-k",
        "test_01 or test_03 or test_15",
        AGY_HOST_LIVE="1",
        AGY_ACP_BIN=str(executable(tmp_path / "bin" / "agy_acp_server.par", server)),
        AGY_BIN=str(agy.bin),
        AGY_HOST_LIVE_AGENT=agent,
    )
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    announced = "live check: 9 tests will spend 12 agent turns on real models (and 1 spent checking agy's sign-in)"
    assert announced in out
    assert out.index(announced) < out.index("passed"), "the count comes before anything runs"
    assert f"on acp: Antigravity's ACP server {tmp_path / 'bin' / 'agy_acp_server.par'} (AGY_ACP_BIN)" in out
    assert f"on stream-json: agy {agy.bin} (AGY_BIN)" in out
    assert "on agent: AGY_HOST_LIVE_AGENT=" in out
    assert "9 passed" in out
    # four turns on each target, as announced (two of them at once, in-process); agy's sign-in check is one more
    assert (prompts(server_log), prompts(agent_log), len(agy.received())) == (4, 4, 5)


def test_the_first_quota_error_stops_the_live_check(tmp_path: Path) -> None:
    agent, log = fake_acp(tmp_path, "agent", f"prompt={json.dumps([QUOTA_ERROR])}")
    proc = live(tmp_path, AGY_HOST_LIVE="1", AGY_HOST_LIVE_AGENT=agent)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    [count] = re.findall(r"live check: (\d+) tests will spend (\d+) agent turns", proc.stdout)
    assert f"{count[0]} tests, {count[1]} agent turns per target" in LIVE_SECTION, "docs/parity.md says what it costs"
    [line] = [x for x in proc.stdout.splitlines() if "live check stopped at" in x]
    assert "test_live.py::test_01_text_streams_as_deltas[agent]" in line
    assert "the agent reports a quota or rate limit:" in line and "RESOURCE_EXHAUSTED (code 429)" in line
    assert prompts(log) == 1, "nothing ran after the first quota error"

    agy = make_fake_agy(tmp_path / "agy", "quota")
    at_sign_in = live(tmp_path, AGY_HOST_LIVE="1", AGY_BIN=str(agy.bin))
    assert at_sign_in.returncode == 2, at_sign_in.stdout + at_sign_in.stderr
    assert "live check stopped while checking agy's sign-in: the agent reports a quota" in at_sign_in.stderr
    assert len(agy.received()) == 1


def test_docs_parity_says_how_to_run_the_live_check_as_the_report_writes_it() -> None:
    doc = (REPO / "docs" / "parity.md").read_text()
    assert LIVE_SECTION.rstrip("\n") + "\n" in doc, "docs/parity.md is written by the report: rerun it or copy the text"
    assert "AGY_HOST_LIVE=1 nox -s parity-live" in (REPO / "README.md").read_text()
