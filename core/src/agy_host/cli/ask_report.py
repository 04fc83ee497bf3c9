"""What ``ask`` reports: one status line, or one JSON document (see
docs/json-events.md). Shared by the turn path and the print-mode plan path."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from agy_host.cli.exit_codes import ExitCode

if TYPE_CHECKING:
    from agy_host.contract.turn_result import TurnResult

AskStatus = Literal["ok", "aborted", "timeout", "error"]


class AskReport(msgspec.Struct, kw_only=True):
    """What ``ask --format json`` prints (see docs/json-events.md)."""

    version: int = 1
    type: str = "ask"
    status: AskStatus
    text: str
    duration_s: float
    session: str
    conversation_id: str | None = None
    engine: str
    mode: str | None = None
    exit_code: int
    error: str | None = None
    usage: Any = None
    #: The command that continues this conversation.
    resume: str | None = None


def status_of(result: TurnResult | None) -> AskStatus:
    if result is None or result.stop_reason == "aborted":
        return "aborted"
    if result.stop_reason == "error":
        return "timeout" if result.error_kind in ("timeout", "inactivity") else "error"
    return "ok"


def exit_code_of(status: AskStatus) -> int:
    return {"ok": ExitCode.OK, "aborted": ExitCode.INTERRUPTED, "timeout": ExitCode.TIMEOUT}.get(status, ExitCode.ERROR)


def print_report(report: AskReport, fmt: str, *, why: str = "") -> None:
    """The report; ``why`` says what an exit 5 refused (the status line only:
    a refusal chosen on purpose is no error)."""
    if fmt == "json":
        from agy_host.builtins.json_times import ms

        report = msgspec.structs.replace(report, duration_s=ms(report.duration_s))
        sys.stdout.write(msgspec.json.encode(report).decode() + "\n")
        sys.stdout.flush()
        return
    if report.text:
        sys.stdout.write(report.text if report.text.endswith("\n") else report.text + "\n")
        sys.stdout.flush()
    parts = [f"[ask] {report.status} in {report.duration_s:.1f}s", f"session {report.session}"]
    if report.conversation_id:
        parts.append(f"conversation {report.conversation_id}")
    if report.error:
        from agy_host.contract.rendering import SHOWN_LONG_CHARS, clip

        parts.append(f"error: {clip(report.error, SHOWN_LONG_CHARS)}")
    elif why:
        parts.append(f"exit {report.exit_code}: {why}")
    if report.resume:
        parts.append(f"continue: {report.resume}")
    print("; ".join(parts), file=sys.stderr, flush=True)


__all__ = ["AskReport", "AskStatus", "exit_code_of", "print_report", "status_of"]
