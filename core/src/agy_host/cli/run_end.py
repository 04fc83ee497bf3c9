"""How ``agy-host run`` ends, whichever way its turn ran.

The closing line on stderr (the error, the ending signal, or the
interruption), the exit code, and ``--format json``'s ``done`` document.
The full command (:mod:`agy_host.cli.run_cmd`) and the thin client of a
warm turn (:mod:`agy_host.keeper.thin`) both end here, so the last thing a
script reads cannot differ between them. No trio and no typer: the thin
client imports this.
"""

from __future__ import annotations

import signal
import sys
from typing import TYPE_CHECKING

import msgspec

from agy_host.exit_codes import ExitCode

if TYPE_CHECKING:
    from agy_host.contract.turn_result import TurnResult


def end_of_run(
    *,
    fmt: str,
    session: str,
    result: TurnResult | None,
    error: str,
    return_code: int | None,
    interrupted: bool,
    terminated: signal.Signals | None,
) -> int:
    """Say how the run ended and return its exit code: the result's, else
    ``return_code`` (a keeper's refusal), else 1 for an error and 130 for an
    interruption; an ending signal (SIGTERM, SIGHUP) makes it ``128 + n``."""
    if error:
        print(f"agy-host: error: {error}", file=sys.stderr, flush=True)
    elif terminated is not None:
        print(f"agy-host: ended by {terminated.name}", file=sys.stderr, flush=True)
    elif interrupted:
        print("agy-host: interrupted", file=sys.stderr, flush=True)
    code = result.exit_code if result is not None else (ExitCode.ERROR if error else ExitCode.INTERRUPTED)
    if return_code is not None and result is None:
        code = return_code
    if terminated is not None:
        code = 128 + int(terminated)
    if fmt == "json":
        print_done(session, result, code, error)
    return int(code)


def print_done(session: str, result: TurnResult | None, code: int, error: str) -> None:
    """``--format json``'s last line (docs/json-events.md)."""
    from agy_host.builtins.json_times import ms
    from agy_host.contract.events import EVENT_SCHEMA_VERSION

    done = {
        "type": "done",
        "version": EVENT_SCHEMA_VERSION,
        "stop_reason": result.stop_reason if result else ("aborted" if code == ExitCode.INTERRUPTED else "error"),
        "exit_code": code,
        "session": session,
        "conversation_id": result.conversation_id if result else None,
        "usage": result.usage if result else None,
        "cumulative_usage": result.cumulative_usage if result else None,
        "duration_s": ms(result.duration_s) if result else None,
        "error": (result.error if result else error) or None,
    }
    sys.stdout.write(msgspec.json.encode(done).decode() + "\n")
    sys.stdout.flush()


__all__ = ["end_of_run", "print_done"]
