"""How a turn ended, in agy's own words: result statuses, exit codes, stderr.

What agy tells a host, by channel (``agy-dialects.md`` B.6):

* ``result.status``: ``SUCCESS`` (``OK`` on old builds) is success; every
  other status (``ERROR``, ``CANCELED``, ``INTERRUPTED``, ...) is a failure
  whose ``result.error`` is the agent's own explanation.
* the exit code after a failed result: 1 (bad model, model/effort conflict,
  not signed in), 2 (flag or slash-command misuse), 3 (quota).
* stderr, where only lines starting ``error:`` or ``AGY_ERROR:`` are
  statements: agy also logs "You are not logged into Antigravity." while it
  signs in silently, which is not a failure. ``AGY_ERROR: {...}`` is JSON.
* the 1.2.17+ print timeout, which looks like success: ``SUCCESS`` with an
  empty response, zero usage and a stderr line ``[agy] print timeout after
  ...``. It is reported as a timeout.

The classification reads the words first and the exit code second, so a
replay without the process's exit status still gets the right kind.
"""

from __future__ import annotations

import re
import time
from typing import Any

import msgspec

from agy_host.contract.events import ErrorKind

SUCCESS = frozenset({"SUCCESS", "OK"})
AUTH_HINT = "Run `agy` once in a terminal to sign in, then retry."
MODELS_HINT = "`agy-host models` lists the model ids agy knows."
INSTALL_HINT = (
    "Install the Antigravity CLI (https://antigravity.google/product/antigravity-cli) and sign in by running `agy`, "
    "or point AGY_BIN (or `stream_json.bin` in the config) at it."
)

_AUTH = re.compile(r"authenticat|not logged in|log in\b|sign in\b|signed in", re.IGNORECASE)
_QUOTA = re.compile(r"quota|RESOURCE_EXHAUSTED|credits balance|exhausted your", re.IGNORECASE)
_USAGE = re.compile(
    r"invalid model selection|not recognized as a known model|conflicts with --effort|--effort|"
    r"answered by the CLI itself|unavailable with --input-format|flag needs an argument|"
    r"flag provided but not defined|invalid value .* for flag",
    re.IGNORECASE,
)
_PROTOCOL = re.compile(r"stream input message|missing the \"event\" field|invalid stream input", re.IGNORECASE)
_TIMEOUT = re.compile(r"timeout waiting for response|print timeout", re.IGNORECASE)
_RESET = re.compile(r"[Rr]esets? in ((?:\d+h)?(?:\d+m)?(?:\d+(?:\.\d+)?s)?)")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([hms])")
PRINT_TIMEOUT_LINE = re.compile(r"print timeout", re.IGNORECASE)


def is_success(status: str) -> bool:
    return status.strip().upper() in SUCCESS


def is_statement(line: str) -> bool:
    """The stderr lines that state a failure (see the module docstring)."""
    head = line.lstrip()[:10].lower()
    return head.startswith(("error:", "agy_error:"))


def agy_error(line: str) -> dict[str, Any] | None:
    """The JSON object of an ``AGY_ERROR: {...}`` line."""
    _, sep, rest = line.partition(":")
    if not sep or not line.lstrip().upper().startswith("AGY_ERROR"):
        return None
    try:
        value = msgspec.json.decode(rest.strip())
    except (msgspec.DecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _seconds(text: str) -> float:
    factor = {"h": 3600.0, "m": 60.0, "s": 1.0}
    return sum(float(n) * factor[u] for n, u in _DURATION.findall(text))


def reset_note(texts: list[str], now: float | None = None) -> str:
    """``quota resets in 34m13s (at about 15:20)`` from agy's "Resets in ...", or ``""``."""
    for text in texts:
        match = _RESET.search(text)
        if match and match.group(1):
            seconds = _seconds(match.group(1))
            at = time.localtime((time.time() if now is None else now) + seconds)
            when = time.strftime("%H:%M" if seconds < 20 * 3600 else "%Y-%m-%d %H:%M", at)
            return f"quota resets in {match.group(1)} (at about {when} local time)"
    return ""


def kind_of(texts: list[str], exit_code: int | None) -> ErrorKind:
    joined = "\n".join(texts)
    if _AUTH.search(joined):
        return "auth"
    if _QUOTA.search(joined) or exit_code == 3:
        return "agent"
    if _PROTOCOL.search(joined):
        return "protocol"
    if _USAGE.search(joined) or exit_code == 2:
        return "usage"
    if _TIMEOUT.search(joined):
        return "timeout"
    return "agent"


def _exit_label(code: int | None) -> str:
    if code is None:
        return ""
    if code < 0:
        import signal

        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def compose(head: str, statements: list[str], kind: ErrorKind, exit_code: int | None) -> str:
    """The message users see: agy's words, its stderr statements, the one hint
    that fixes it, and the exit status."""
    lines = [head]
    for statement in statements:
        text = statement.strip()
        core = re.sub(r"^(?:error|agy_error):\s*", "", text, flags=re.IGNORECASE)
        if core and core not in head and text not in lines:
            lines.append(text)
    details = [agy_error(s) for s in statements]
    for detail in details:
        if detail:
            parts = [str(detail[k]) for k in ("status", "error_code", "code_kind") if detail.get(k) not in (None, "")]
            retry = " (retryable)" if detail.get("retryable") else ""
            if parts:
                lines.append(f"agy error: {' '.join(parts)}{retry}")
    note = reset_note([head, *statements])
    if note:
        lines.append(note)
    joined = "\n".join(lines)
    if kind == "auth" and "log in" not in joined.lower():
        lines.append(AUTH_HINT)
    if kind == "usage" and re.search(r"model", joined, re.IGNORECASE):
        lines.append(MODELS_HINT)
    label = _exit_label(exit_code) if exit_code else ""
    if label:
        lines.append(f"(agy {label})")
    return "\n".join(lines)


def result_failure(
    status: str, error: str, statements: list[str], exit_code: int | None, extra: list[str] | None = None
) -> tuple[str, ErrorKind]:
    """Message and kind of a result that is not a success."""
    texts = [error, *statements, *(extra or [])]
    kind = kind_of(texts, exit_code)
    if error:
        head = f"agy: {error}"
    elif extra:
        head = f"agy: {extra[0]}"
    elif status.strip().upper() == "ERROR":
        head = "agy reported an error without saying which"
    else:
        head = f"agy ended the turn with status {status or '(none)'}"
    return compose(head, statements, kind, exit_code), kind


def death_failure(
    exit_code: int | None, stderr_tail: str, statements: list[str], started: bool
) -> tuple[str, ErrorKind]:
    """Message and kind when agy's output ended without a result."""
    tail = stderr_tail.strip()
    first = tail.split("Usage of agy:")[0].strip()
    if exit_code == 2 and first:
        text = " ".join(line.strip() for line in first.splitlines()[:3])
        return compose(f"agy refused its command line: {text}", statements, "usage", exit_code), "usage"
    if statements:
        kind = kind_of(statements, exit_code)
        return compose(f"agy failed: {statements[0].strip()}", statements[1:], kind, exit_code), kind
    where = "mid-turn" if started else "before it started the turn"
    label = _exit_label(exit_code) or "output closed"
    message = f"agy exited {where} ({label})"
    if tail:
        message += "\n" + tail[-1500:]
    return message, "exited"


__all__ = [
    "AUTH_HINT",
    "INSTALL_HINT",
    "MODELS_HINT",
    "PRINT_TIMEOUT_LINE",
    "SUCCESS",
    "agy_error",
    "compose",
    "death_failure",
    "is_statement",
    "is_success",
    "kind_of",
    "reset_note",
    "result_failure",
]
