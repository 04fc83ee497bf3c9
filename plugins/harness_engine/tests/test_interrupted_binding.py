"""Issue 28 item 1 on the real ``localharness``: a second signal during the
cancel grace of a session's first turn leaves the session bound.

The harness is frozen (SIGSTOP) while the model streams, so it cannot answer
the host's ``haltRequest`` and the first signal's abort waits out the cancel
grace; the second signal, 0.2 s later, stops waiting for it, and the turn
never settles. The binding was written only when a turn settled, so the
session's next command started a new conversation."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agy_host.testing.store import read_bindings

from .conftest import HarnessHome


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def harness_pids(ancestor: int) -> list[int]:
    """The ``localharness`` processes below ``ancestor``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"localharness" not in cmdline:
            continue
        pid = int(entry.name)
        while pid > 1 and pid != ancestor:
            pid = _parent(pid)
        if pid == ancestor:
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_second_signal_in_the_cancel_grace_keeps_a_fresh_sessions_binding(
    hhome: HarnessHome, sig: signal.Signals
) -> None:
    hhome.serve({"turns": [[[{"text": "A1 "}, {"hang": True}]], [[{"echo": True}]]]})
    hhome.configure(harness={"cancel_grace_seconds": 30.0})
    argv = [sys.executable, "-m", "agy_host.cli.main", "run", "--engine", "harness", "--format", "json"]
    pipe = subprocess.PIPE
    proc = subprocess.Popen([*argv, "--session", "t1", "go"], env=hhome.env, cwd=hhome.cwd, stdout=pipe, stderr=pipe)
    frozen: list[int] = []
    try:
        assert proc.stdout is not None and proc.stderr is not None
        seen = b""
        deadline = time.monotonic() + 60
        while b"A1" not in seen and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen += line
        assert b"A1" in seen, (seen, proc.stderr.read() if proc.poll() is not None else "")
        frozen = harness_pids(proc.pid)
        assert frozen, "no harness process found"
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        proc.send_signal(sig)
        time.sleep(0.2)
        proc.send_signal(sig)
        proc.wait(timeout=60)
        err = proc.stderr.read().decode()
        assert proc.returncode == (130 if sig == signal.SIGINT else 128 + sig), err
        assert "not waiting for the agent any longer" in err, err
        binding = read_bindings(hhome.state).get("t1@harness")
        assert binding is not None, f"the session binding was lost: {err}"
    finally:
        for pid in frozen:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    run = hhome.turn("t1", "two")
    assert run.returncode == 0, run
    assert run.end["conversation_id"] == binding["conversation_id"], run
    assert not [n for n in run.of("notice") if n.get("code") == "conversation-replaced"], run
