"""Subprocess helpers the start-up and exit tests share (this folder is on
``sys.path``, see conftest.py)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence


def python_says(code: str, env: Mapping[str, str] | None = None) -> str:
    """The last line ``python -c CODE`` prints (a fresh interpreter: what a
    command imports is counted from nothing)."""
    proc = subprocess.run(
        [sys.executable, "-c", code], env=None if env is None else dict(env), capture_output=True, text=True, timeout=60
    )
    lines = proc.stdout.splitlines()
    return lines[-1] if lines else f"(nothing; stderr: {proc.stderr[-2000:]})"


def interrupted(
    argv: Sequence[str], env: Mapping[str, str], ready: Callable[[], bool], *, what: str
) -> subprocess.CompletedProcess[str]:
    """Run ``argv``, send it SIGINT (Ctrl-C) once ``ready()`` (within 60 s,
    else the test fails saying ``what`` never happened), and wait for it."""
    proc = subprocess.Popen(list(argv), env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not ready():
            assert time.monotonic() < deadline, f"{what} never happened"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
