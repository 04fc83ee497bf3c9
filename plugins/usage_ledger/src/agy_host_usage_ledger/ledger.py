"""The ledger file: one JSON line per finished turn.

``$XDG_STATE_HOME/agy-host/usage-ledger.jsonl`` (``AGY_HOST_USAGE_LEDGER``
names another file). Each line is appended with a single ``write`` on an
``O_APPEND`` descriptor while holding an exclusive ``flock`` on the file, so
concurrent agy-host processes never interleave or tear lines. Reading is
tolerant: a line that does not decode (a crash mid-write on a full disk, a
hand edit) is counted and skipped, never fatal. Lines carry a format
version ``v``; unknown fields of newer versions are ignored.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import msgspec

from agy_host.contract.events import UsageCounts

LEDGER_VERSION = 1
LEDGER_NAME = "usage-ledger.jsonl"
PATH_ENV = "AGY_HOST_USAGE_LEDGER"


class LedgerEntry(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One finished turn."""

    v: int = LEDGER_VERSION
    #: When the turn ended, ``2026-12-02T15:24:00Z``.
    ts: str
    session: str = ""
    engine: str = ""
    agent: str = ""
    model: str = ""
    conversation_id: str | None = None
    #: The host stop reason: ``stop``, ``error`` or ``aborted``.
    stop_reason: str
    agent_stop_reason: str = ""
    error_kind: str | None = None
    duration_s: float
    #: The agent's own tool calls (cards), and host tools it called.
    tool_calls: int = 0
    host_tool_calls: int = 0
    #: ``None`` when the agent reported no usage for the turn.
    usage: UsageCounts | None = None


class Totals(msgspec.Struct, kw_only=True):
    """A summary of ledger entries."""

    turns: int = 0
    by_stop_reason: dict[str, int] = msgspec.field(default_factory=dict)
    duration_s: float = 0.0
    tool_calls: int = 0
    host_tool_calls: int = 0
    #: Turns whose agent reported usage; the token sums cover only those.
    turns_with_usage: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    #: Currency -> amount, for agents that report a cost.
    cost: dict[str, float] = msgspec.field(default_factory=dict)


class Ledger(msgspec.Struct, kw_only=True):
    """What :func:`read` found."""

    path: str
    entries: list[LedgerEntry]
    #: ``line N: why`` for every line that was skipped.
    skipped: list[str] = msgspec.field(default_factory=list)


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(LedgerEntry)


def ledger_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    override = env.get(PATH_ENV, "")
    if override:
        return Path(override).expanduser()
    from agy_host.config import state_dir

    return state_dir(env) / LEDGER_NAME


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def append(entry: LedgerEntry, path: Path) -> None:
    """Append one line, atomically with respect to other appenders."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = memoryview(_encoder.encode(entry) + b"\n")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        while data:  # a regular file takes it in one write; loop for the pathological case
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)  # closing releases the lock


def read(path: Path) -> Ledger:
    """Every readable entry, oldest first; an absent file is an empty ledger."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Ledger(path=str(path), entries=[])
    entries: list[LedgerEntry] = []
    skipped: list[str] = []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            entries.append(_decoder.decode(line))
        except (msgspec.DecodeError, RecursionError) as exc:
            skipped.append(f"line {number}: {exc}")
    return Ledger(path=str(path), entries=entries, skipped=skipped)


def select(entries: list[LedgerEntry], *, session: str | None = None, last: int | None = None) -> list[LedgerEntry]:
    chosen = [e for e in entries if session is None or e.session == session]
    if last is not None:
        chosen = chosen[-last:] if last > 0 else []
    return chosen


def merge_usage(base: UsageCounts | None, update: UsageCounts | None) -> UsageCounts | None:
    """``update``'s known fields over ``base``'s: agents report a turn's usage
    in pieces (ACP: the context and cost in ``usage_update``, the tokens in the
    prompt response), each report superseding only what it says."""
    if base is None or update is None:
        return update if base is None else base
    known = {k: v for k, v in msgspec.structs.asdict(update).items() if v is not None}
    return msgspec.structs.replace(base, **known)


def total_tokens(usage: UsageCounts) -> int | None:
    if usage.total_tokens is not None:
        return usage.total_tokens
    if usage.input_tokens is not None or usage.output_tokens is not None:
        return (usage.input_tokens or 0) + (usage.output_tokens or 0)
    return None


def summarize(entries: Iterable[LedgerEntry]) -> Totals:
    totals = Totals()
    for e in entries:
        totals.turns += 1
        totals.by_stop_reason[e.stop_reason] = totals.by_stop_reason.get(e.stop_reason, 0) + 1
        totals.duration_s += e.duration_s
        totals.tool_calls += e.tool_calls
        totals.host_tool_calls += e.host_tool_calls
        u = e.usage
        if u is None:
            continue
        totals.turns_with_usage += 1
        totals.input_tokens += u.input_tokens or 0
        totals.output_tokens += u.output_tokens or 0
        totals.total_tokens += total_tokens(u) or 0
        if u.cost_amount is not None:
            currency = u.cost_currency or "?"
            totals.cost[currency] = round(totals.cost.get(currency, 0.0) + u.cost_amount, 6)
    return totals


def summary_line(totals: Totals) -> str:
    """``3 turns (stop 2, error 1) in 4.2s; usage reported for 2: in 2000, out 468, total 3668``."""
    if totals.turns == 0:
        return "no turns recorded"
    stops = ", ".join(f"{k} {v}" for k, v in sorted(totals.by_stop_reason.items()))
    line = f"{totals.turns} turn{'s' if totals.turns != 1 else ''} ({stops}) in {totals.duration_s:.1f}s"
    if totals.tool_calls or totals.host_tool_calls:
        line += f"; tool calls {totals.tool_calls}, host tool calls {totals.host_tool_calls}"
    if totals.turns_with_usage == 0:
        return line + "; no usage reported"
    line += (
        f"; usage reported for {totals.turns_with_usage}: in {totals.input_tokens}, "
        f"out {totals.output_tokens}, total {totals.total_tokens}"
    )
    if totals.cost:
        line += "; cost " + ", ".join(f"{amount:g} {cur}" for cur, amount in sorted(totals.cost.items()))
    return line


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)


def format_table(entries: list[LedgerEntry]) -> str:
    """The entries as aligned text columns, then the summary line."""
    header = ("ended", "session", "engine", "stop", "time", "in", "out", "total")
    rows = [header]
    for e in entries:
        u = e.usage
        rows.append(
            (
                e.ts,
                e.session or "?",
                e.engine or "?",
                e.stop_reason + (f" ({e.error_kind})" if e.error_kind else ""),
                f"{e.duration_s:.1f}s",
                _num(u.input_tokens) if u else "-",
                _num(u.output_tokens) if u else "-",
                _num(total_tokens(u)) if u else "-",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.append(summary_line(summarize(entries)))
    return "\n".join(lines)


__all__ = [
    "LEDGER_NAME",
    "LEDGER_VERSION",
    "PATH_ENV",
    "Ledger",
    "LedgerEntry",
    "Totals",
    "append",
    "format_table",
    "ledger_path",
    "merge_usage",
    "read",
    "select",
    "summarize",
    "summary_line",
    "total_tokens",
    "utc_now",
]
