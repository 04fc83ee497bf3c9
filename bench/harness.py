"""The runner's machinery: cases, interleaved repetition, tables, targets.

A benchmark module builds :class:`Case` objects (one per client: ours, the
peers, the floor) whose ``run`` performs one measurement and returns a dict
of numbers. :func:`interleave` runs every case ``repeats`` times, rotating the
order each round (ours, then the peers, then the floor, then starting one
further along), so a slow minute on a shared machine hits every client, not
only one. Medians and spreads come from :class:`~bench.common.Series`.
"""

from __future__ import annotations

import math
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.common import Series, fmt_mb, fmt_seconds, parse_result


class Skip(Exception):
    """This case cannot run here; the message says why (shown in the table)."""


@dataclass
class Case:
    name: str
    #: ``ours``, ``peer``, ``floor`` or ``ref`` (a reference row, not compared)
    kind: str
    run: Callable[[], Mapping[str, Any]]
    note: str = ""


@dataclass
class Outcome:
    case: Case
    series: dict[str, Series] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    skipped: str = ""
    failed: str = ""

    def median(self, metric: str) -> float:
        s = self.series.get(metric)
        return s.median if s is not None and s.n else math.nan

    def spread(self, metric: str) -> float:
        s = self.series.get(metric)
        return s.spread if s is not None else math.nan


def interleave(cases: Sequence[Case], repeats: int, *, log: Callable[[str], None] | None = None) -> list[Outcome]:
    outcomes = [Outcome(case) for case in cases]
    for rnd in range(repeats):
        order = list(range(len(cases)))
        shift = rnd % max(1, len(order))
        order = order[shift:] + order[:shift]
        for i in order:
            out = outcomes[i]
            if out.skipped or out.failed:
                continue
            started = time.monotonic()
            try:
                values = out.case.run()
            except Skip as exc:
                out.skipped = str(exc)
                if log:
                    log(f"  {out.case.name}: skipped: {exc}")
                continue
            except Exception as exc:
                out.failed = f"{type(exc).__name__}: {exc}"
                if log:
                    log(f"  {out.case.name}: FAILED: {out.failed}")
                continue
            for key, value in values.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    out.extra[key] = value
                    continue
                out.series.setdefault(key, Series()).add(float(value))
            if log:
                log(f"  [{rnd + 1}/{repeats}] {out.case.name}: {_brief(values)} ({time.monotonic() - started:.1f}s)")
    return outcomes


def _brief(values: Mapping[str, Any]) -> str:
    parts = []
    for key in ("turn_s", "total_s", "wall_s", "p50_ms"):
        if key in values and isinstance(values[key], (int, float)):
            v = float(values[key])
            parts.append(f"{key}={v:.1f}" if key.endswith("_ms") else f"{key}={fmt_seconds(v)}")
    return ", ".join(parts) or "ok"


def run_json_subprocess(
    cmd: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 600
) -> dict[str, Any]:
    """Run one measurement subprocess and return its ``BENCH-RESULT`` line."""
    try:
        proc = subprocess.run(
            list(cmd),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"timed out after {timeout:g}s: {' '.join(cmd)}") from exc
    result = parse_result(proc.stdout)
    if proc.returncode != 0 or result is None:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-12:])
        raise RuntimeError(f"exit {proc.returncode}: {' '.join(cmd[:4])}...\n{tail}")
    return result


# ---------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------


@dataclass
class Column:
    title: str
    render: Callable[[Outcome], str]


def seconds_col(metric: str, title: str) -> Column:
    return Column(title, lambda o: fmt_seconds(o.median(metric)) if metric in o.series else "-")


def spread_col(metric: str, title: str = "spread") -> Column:
    return Column(title, lambda o: f"±{o.spread(metric) * 50:.0f}%" if metric in o.series else "-")


def mb_col(metric: str, title: str) -> Column:
    return Column(title, lambda o: fmt_mb(o.median(metric)) if metric in o.series else "-")


def ms_col(metric: str, title: str, digits: int = 2) -> Column:
    return Column(title, lambda o: f"{o.median(metric):.{digits}f} ms" if metric in o.series else "-")


def ratio_col(metric: str, base: Callable[[], float], title: str, *, invert: bool = False) -> Column:
    """``value / base`` (or ``base / value`` when ``invert``), e.g. "how many
    times slower than ours"."""

    def render(o: Outcome) -> str:
        b = base()
        v = o.median(metric)
        if math.isnan(v) or math.isnan(b) or not v or not b:
            return "-"
        r = b / v if invert else v / b
        return f"{r:.2f}x"

    return Column(title, render)


def markdown_table(outcomes: Sequence[Outcome], columns: Sequence[Column]) -> str:
    head = ["client", *(c.title for c in columns)]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for o in outcomes:
        name = o.case.name
        if o.skipped or o.failed:
            why = f"skipped: {o.skipped}" if o.skipped else f"FAILED: {o.failed.splitlines()[0]}"
            cells = [name, why, *([""] * (len(columns) - 1))]
        else:
            cells = [name, *(c.render(o) for c in columns)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


@dataclass
class Target:
    text: str
    measured: str
    met: bool | None  # None: could not be judged (a case was skipped)

    @property
    def verdict(self) -> str:
        return "n/a" if self.met is None else ("met" if self.met else "NOT met")


@dataclass
class BenchReport:
    key: str
    title: str
    setup: str
    table: str = ""
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str = ""
    raw: dict[str, Any] = field(default_factory=dict)

    def markdown(self) -> str:
        out = [f"### {self.key}: {self.title}", "", self.setup, ""]
        if self.skipped:
            out += [f"**Skipped:** {self.skipped}", ""]
            return "\n".join(out)
        out += [self.table, ""]
        if self.targets:
            out += ["| target | measured | verdict |", "|---|---|---|"]
            out += [f"| {t.text} | {t.measured} | {t.verdict} |" for t in self.targets]
            out.append("")
        out += [f"- {n}" for n in self.notes]
        return "\n".join(out).rstrip() + "\n"


def raw_outcomes(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Every value of every run, for the JSON results file."""
    return {
        o.case.name: {
            "kind": o.case.kind,
            "skipped": o.skipped,
            "failed": o.failed,
            "values": {k: s.values for k, s in o.series.items()},
            "extra": o.extra,
        }
        for o in outcomes
    }


def find(outcomes: Sequence[Outcome], name: str) -> Outcome | None:
    return next((o for o in outcomes if o.case.name == name), None)


def median_of(outcomes: Sequence[Outcome], name: str, metric: str) -> float:
    o = find(outcomes, name)
    return o.median(metric) if o is not None and not (o.skipped or o.failed) else math.nan


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


__all__ = [
    "BenchReport",
    "Case",
    "Column",
    "Outcome",
    "Skip",
    "Target",
    "find",
    "interleave",
    "log",
    "markdown_table",
    "mb_col",
    "median_of",
    "ms_col",
    "ratio_col",
    "raw_outcomes",
    "run_json_subprocess",
    "seconds_col",
    "spread_col",
]
