"""``--trace`` on the stream-json engine: the real CLI against the kit's fake
``agy`` CLI, a real subprocess. The stdin line of each turn, every stdout
line (a step, a line that is not JSON, the result), the CLI's stderr, and no
API key from the environment or printed by the CLI in the file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from agy_host.testing.agy_cli.agent import make_fake_agy
from agy_host.testing.isolation import isolated_env
from agy_host.testing.trace import read_trace

ENV_KEY = "env-gemini-key-0123456789"
GOOGLE_KEY = "AIzaSyZ9y8X7w6V5u4T3s2R1q0PoNmLkJiHgFeD"  # the shape of one, not a real key

SCENARIO: dict[str, Any] = {
    "turns": [
        [
            {"stderr": f"agy: using GEMINI_API_KEY={ENV_KEY}"},
            {"raw": "a line that is not JSON"},
            {"say": ["HE", "LLO"]},
            {"say": f"your key is {GOOGLE_KEY}"},
        ],
        [{"echo": True}],
    ]
}


def agy_host(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "agy_host.cli.main", "run", "--engine", "stream-json", "--format", "json"]
    return subprocess.run(
        [*argv, *args],
        env=isolated_env(tmp_path / "home", AGY_HOST_TTY="none", GEMINI_API_KEY=ENV_KEY) | env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
    )


def test_run_with_trace_writes_stdin_stdout_and_stderr_redacted(tmp_path: Path) -> None:
    agy = make_fake_agy(tmp_path / "fake-agy", SCENARIO)
    target = tmp_path / "trace.jsonl"
    first = agy_host(tmp_path, agy.env, "--session", "s", "--trace", str(target), "hello")
    assert first.returncode == 0, first.stderr
    second = agy_host(tmp_path, {**agy.env, "AGY_HOST_TRACE": str(target)}, "--session", "s", "again")
    assert second.returncode == 0, second.stderr
    trace = read_trace(target, secrets=[ENV_KEY, GOOGLE_KEY])
    assert {e.engine for e in trace} == {"stream-json"}
    sent = trace.objects("out")
    assert [f["message"]["content"] for f in sent] == ["hello", "again"], "one stdin line per turn, both runs"
    assert sent == [line for line in agy.received() if "message" in line], "what agy read, as it read it"
    got = trace.frames("in")
    assert "a line that is not JSON" in got
    kinds = [f.get("event") for f in got if isinstance(f, dict)]
    assert kinds.count("init") == 2 and kinds.count("result") == 2 and "step_update" in kinds, kinds
    texts = [str(f) for f in got]
    assert any("your key is [redacted]" in t for t in texts)
    assert "agy: using GEMINI_API_KEY=[redacted]" in trace.frames("stderr")
