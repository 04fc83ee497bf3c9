"""What every benchmark shares: paths, the fake agent's command, memory
readings from ``/proc``, the one-JSON-line result protocol of measurement
subprocesses, and statistics.

Stdlib only, and no import of ``agy_host``: the SDK client runs this module's
helpers from the SDK's own venv (``bench/clients/``).

Measurement protocol: each measurement runs in a fresh subprocess (so peak
RSS is that measurement's alone) which prints exactly one line
``BENCH-RESULT {json}`` on stdout; everything else it prints is ignored.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
RESULT_PREFIX = "BENCH-RESULT "

#: About 60 bytes of text per chunk, as the issue asks.
FLOOD_TEXT = "The quick brown fox jumps over the lazy dog, 0123456789 abcd"
#: Prompt 1 answers at once (spawn, initialize, session/new and one round trip
#: are paid there); prompt 2 and later flood. Every client measures prompt 2.
WARM_THEN_FLOOD = [[{"stop": "end_turn"}], [{"flood": True}, {"stop": "end_turn"}]]
FAKE_MODULE = "agy_host.testing.acp.agent"


def fake_agent_command(
    python: str, scenario: str, *, settings: Mapping[str, Any] | None = None, session_id: str | None = None
) -> list[str]:
    """``python -m agy_host.testing.acp.agent`` with ``--set`` knobs (JSON values)."""
    cmd = [python, "-m", FAKE_MODULE, "--scenario", scenario]
    for key, value in (settings or {}).items():
        cmd += ["--set", f"{key}={json.dumps(value, separators=(',', ':'))}"]
    if session_id is not None:
        cmd += ["--session-id", session_id]
    return cmd


def flood_agent_command(python: str, count: int, *, warm_prompt: bool = True, text: str = FLOOD_TEXT) -> list[str]:
    settings: dict[str, Any] = {"flood_count": count, "flood_text": text}
    if warm_prompt:
        settings["prompts"] = WARM_THEN_FLOOD
    return fake_agent_command(python, "flood", settings=settings)


def scale_agent_command(python: str, count: int, sessions: int, *, text: str = FLOOD_TEXT) -> list[str]:
    """B4's agent: a fresh session id per ``session/new``; the first
    ``sessions`` prompts (one warm prompt per session) answer at once, every
    later one floods. (The fake agent numbers prompts per process, not per
    session.)"""
    prompts: list[list[dict[str, Any]]] = [[{"stop": "end_turn"}] for _ in range(sessions)]
    prompts.append([{"flood": True}, {"stop": "end_turn"}])
    settings = {"flood_count": count, "flood_text": text, "prompts": prompts}
    return fake_agent_command(python, "flood", settings=settings, session_id="generate")


# ---------------------------------------------------------------------------
# memory
# ---------------------------------------------------------------------------


def proc_status(pid: int | str = "self") -> dict[str, int]:
    """``Vm*`` fields of ``/proc/<pid>/status`` in KiB (empty when unreadable)."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Vm"):
                    key, _, rest = line.partition(":")
                    parts = rest.split()
                    if parts and parts[0].isdigit():
                        out[key] = int(parts[0])
    except OSError:
        pass
    return out


def reset_peak(pid: int | str = "self") -> bool:
    """Reset ``VmHWM`` to the current RSS (``echo 5 > /proc/<pid>/clear_refs``,
    Linux >= 4.0), so the peak read later is the peak of what came after."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def cpu_seconds(pid: int | str = "self") -> float:
    """User + system CPU time of a process so far (all its threads)."""
    if pid == "self":
        return time.process_time()
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return float("nan")
    # fields[0] is the state (field 3); utime and stime are fields 14 and 15
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class MemoryWindow:
    """RSS at the start of a window, the peak RSS within it, and the CPU time
    spent in it, for one process (the CPU time is what a loaded machine
    disturbs least)."""

    pid: int | str = "self"
    rss_start_kb: int = 0
    peak_reset: bool = False
    hwm_end_kb: int = 0
    rss_end_kb: int = 0
    cpu_start: float = 0.0
    cpu_s: float = 0.0

    def start(self) -> None:
        self.peak_reset = reset_peak(self.pid)
        self.rss_start_kb = proc_status(self.pid).get("VmRSS", 0)
        self.cpu_start = cpu_seconds(self.pid)

    def stop(self) -> None:
        self.cpu_s = cpu_seconds(self.pid) - self.cpu_start
        st = proc_status(self.pid)
        self.hwm_end_kb = st.get("VmHWM", 0)
        self.rss_end_kb = st.get("VmRSS", 0)

    @property
    def growth_kb(self) -> int:
        """Peak within the window minus RSS at its start (an upper bound on the
        turn's growth when the peak could not be reset)."""
        return max(0, self.hwm_end_kb - self.rss_start_kb)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rss_start_kb": self.rss_start_kb,
            "peak_kb": self.hwm_end_kb,
            "rss_end_kb": self.rss_end_kb,
            "growth_kb": self.growth_kb,
            "peak_reset": self.peak_reset,
            "cpu_s": self.cpu_s,
        }


# ---------------------------------------------------------------------------
# result protocol
# ---------------------------------------------------------------------------


#: Runs one command and reports its wall time and peak RSS. ``wait4``'s
#: ``ru_maxrss`` also counts the memory of the process that spawned the
#: command (its pages before ``exec``), so the runner, which may hold much
#: (B9's history), must not be that process: this small one is. The
#: command's stdout goes to ``/dev/null``.
_LAUNCH = """
import os, sys, time
t0 = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ,
                     file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - t0, usage.ru_maxrss, usage.ru_utime + usage.ru_stime, flush=True)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def launch(python: str, cmd: list[str], *, env: Mapping[str, str], cwd: Path) -> tuple[float, int, float]:
    """Run ``cmd`` (stdout to ``/dev/null``) from a small launcher: its wall
    time, its peak RSS in KiB (its largest process, agents included) and the
    CPU seconds of it and its children."""
    import shlex
    import subprocess

    proc = subprocess.run(
        [python, "-S", "-c", _LAUNCH, *cmd],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=dict(env),
        cwd=cwd,
        check=False,
    )
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-5:]
        raise RuntimeError(f"{shlex.join(cmd[:3])}... exited {proc.returncode}: {' | '.join(tail)}")
    wall, rss, cpu = proc.stdout.split()
    return float(wall), int(rss), float(cpu)


def emit_result(result: Mapping[str, Any]) -> None:
    sys.stdout.write(RESULT_PREFIX + json.dumps(dict(result), separators=(",", ":")) + "\n")
    sys.stdout.flush()


def parse_result(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            value = json.loads(line[len(RESULT_PREFIX) :])
            return value if isinstance(value, dict) else None
    return None


def now() -> float:
    """The clock every measurement uses (``CLOCK_MONOTONIC``: comparable across processes)."""
    return time.monotonic()


# ---------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------


@dataclass
class Series:
    """Repeated measurements of one quantity."""

    values: list[float] = field(default_factory=list)

    def add(self, value: float) -> None:
        self.values.append(value)

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else float("nan")

    @property
    def spread(self) -> float:
        """(max - min) / median: how far apart the runs were."""
        if len(self.values) < 2 or not self.median:
            return 0.0
        return (max(self.values) - min(self.values)) / self.median

    def percentile(self, p: float) -> float:
        return percentile(self.values, p)


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank style percentile with linear interpolation (``p`` in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * p / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def fmt_seconds(value: float) -> str:
    if math.isnan(value):
        return "-"
    if value >= 10:
        return f"{value:.1f} s"
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 0.01:
        return f"{value * 1000:.0f} ms"
    return f"{value * 1000:.2f} ms"


def fmt_mb(kb: float) -> str:
    if math.isnan(kb):
        return "-"
    return f"{kb / 1024:.1f} MB"


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra or {})
    return env


__all__ = [
    "FLOOD_TEXT",
    "RESULT_PREFIX",
    "WARM_THEN_FLOOD",
    "MemoryWindow",
    "Series",
    "child_env",
    "emit_result",
    "fake_agent_command",
    "flood_agent_command",
    "fmt_mb",
    "fmt_seconds",
    "now",
    "parse_result",
    "percentile",
    "proc_status",
    "reset_peak",
    "scale_agent_command",
]
