"""The real harness when something around it fails: a harness that freezes
mid-turn. Real processes throughout: ``agy-host run`` as a subprocess, the
pinned ``localharness``, the kit's scripted model API over HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .conftest import HarnessHome


def _children(pid: int, named: str) -> list[int]:
    """Live children of ``pid`` whose command line holds ``named``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == pid and named.encode() in cmdline and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_ctrl_c_on_a_frozen_harness_exits_within_seconds_and_leaves_nothing(hhome: HarnessHome) -> None:
    """issue 28 item 8: the harness is SIGSTOPped while the model streams, then
    Ctrl-C. It would never go idle, and used to cost the cancel grace plus the
    exit graces (7.7 s); it does not answer a ping, so it is killed at once."""
    hhome.serve({"turns": [[[{"text": "A1 "}, {"sleep": 30}, {"text": "never"}]]]})
    argv = [sys.executable, "-m", "agy_host.cli.main", "run", "--engine", "harness", "--format", "json"]
    proc = subprocess.Popen(
        [*argv, "--session", "frozen", "go"],
        env=hhome.env,
        cwd=hhome.cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    harness: list[int] = []
    try:
        assert proc.stdout is not None
        seen = ""
        while "A1" not in seen:
            line = proc.stdout.readline()
            assert line, (seen, proc.communicate(timeout=30))
            seen += line
        harness = _children(proc.pid, "localharness")
        assert len(harness) == 1, harness
        os.kill(harness[0], signal.SIGSTOP)
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        waited = time.monotonic() - started
        assert proc.returncode == 130, (out, err)
        assert waited < 5, f"Ctrl-C on a frozen harness took {waited:.1f}s"
        assert not _running(harness[0]), "the frozen harness outlived agy-host"
        events = [json.loads(line) for line in (seen + out).splitlines() if line.startswith("{")]
        assert [e for e in events if e.get("code") == "harness-frozen"], events
        end = next(e for e in events if e.get("type") == "turn_end")
        assert end["stop_reason"] == "aborted" and end["response"] == "A1 ", end
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in harness:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
