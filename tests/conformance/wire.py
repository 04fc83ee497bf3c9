"""Read what :mod:`acp_tee` logged and validate it, both directions, in order.

Used by the conformance tests (the fake ACP agent behind agy-host's engine)
and the interop tests (real third-party agents behind the ``agy-host`` CLI):
wrap the agent command with :func:`tee_argv`, run, then
:func:`validate_tee_log` checks every message agy-host sent and every message
the agent sent against the vendored schema, each response against the
request it answers (:class:`conformance.schema.Exchange`).

A real agent may legitimately send something the stable schema does not
describe yet (a newer or unstable field). That is never skipped wholesale: a
test passes :class:`Deviation` entries naming the exact sender, method, JSON
path and reason, every one of them must match an actual failure (a stale
entry fails the test), and anything not listed fails.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.schema import AcpSchemaError, Exchange, Sender

TEE = Path(__file__).resolve().parent / "acp_tee.py"

__all__ = [
    "TEE",
    "Deviation",
    "TeeLog",
    "WireLine",
    "read_tee_log",
    "read_tee_logs",
    "tee_argv",
    "validate_frames",
    "validate_tee_log",
]


def tee_argv(log: Path, agent: Sequence[str], *, python: str = sys.executable) -> list[str]:
    """The command line that runs ``agent`` behind the tap, logging to ``log``."""
    return [python, str(TEE), str(log), "--", *agent]


@dataclass(frozen=True)
class WireLine:
    """One line of the tap's log: a frame or a raw line, and who sent it."""

    sender: Sender
    line: int
    t: float
    frame: dict[str, Any] | None = None
    raw: str | None = None


@dataclass
class TeeLog:
    lines: list[WireLine] = field(default_factory=list)
    #: The agent's exit status as the tap saw it (negative: a signal); None if the tap was killed.
    exit: int | None = None

    def frames(self, sender: Sender | None = None) -> list[dict[str, Any]]:
        return [w.frame for w in self.lines if w.frame is not None and (sender is None or w.sender == sender)]

    def first(self, sender: Sender, method: str) -> WireLine | None:
        return next((w for w in self.lines if w.sender == sender and w.frame and w.frame.get("method") == method), None)

    def response_to(self, sender: Sender, request: WireLine) -> WireLine | None:
        """The response ``sender`` gave to ``request`` (a line the other side sent)."""
        assert request.frame is not None
        for w in self.lines[self.lines.index(request) + 1 :]:
            f = w.frame
            if w.sender == sender and f is not None and "method" not in f and f.get("id") == request.frame.get("id"):
                return w
        return None


def read_tee_logs(path: Path) -> list[TeeLog]:
    """Every run the tap logged to ``path``, in order (one per agent process)."""
    runs: list[TeeLog] = []
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not text.strip():
            continue
        rec = json.loads(text)
        direction = rec.get("dir")
        if direction == "tap":
            if "start" in rec:
                runs.append(TeeLog())
            elif runs:
                runs[-1].exit = rec.get("exit")
            continue
        if direction not in ("to_agent", "from_agent") or not runs:
            raise AssertionError(f"{path}:{number}: not a tap log line: {text[:200]}")
        sender: Sender = "client" if direction == "to_agent" else "agent"
        runs[-1].lines.append(WireLine(sender, number, float(rec.get("t", 0.0)), rec.get("frame"), rec.get("raw")))
    return runs


def read_tee_log(path: Path) -> TeeLog:
    """The one run logged to ``path`` (an empty log if the tap never started)."""
    runs = read_tee_logs(path) if path.exists() else []
    assert len(runs) <= 1, f"{path} holds {len(runs)} runs; use read_tee_logs"
    return runs[0] if runs else TeeLog()


@dataclass(frozen=True)
class Deviation:
    """A known, reasoned schema failure of a third-party agent's message.

    ``sender``/``method`` (for a response: the method it answers) and ``path``
    (the JSON path :class:`AcpSchemaError` names) must all match; ``reason``
    says why it is tolerated: schema version drift, an unstable method, or a
    genuine agent bug that agy-host copes with.
    """

    sender: Sender
    method: str
    path: str
    reason: str

    def matches(self, sender: Sender, method: str | None, error: AcpSchemaError) -> bool:
        return sender == self.sender and method == self.method and error.path == self.path


def validate_frames(
    items: Iterable[tuple[Sender, dict[str, Any], str | None, str]], *, allow: Sequence[Deviation] = ()
) -> tuple[Exchange, list[Deviation]]:
    """Validate ``(sender, frame, request_method, where)`` items in wire order.

    ``request_method`` names what a response answers when the request id was
    lost (``None``: pair by id). Returns the exchange and the deviations used;
    a failure no deviation covers raises :class:`AssertionError` naming
    ``where``, the path and the frame.
    """
    exchange = Exchange()
    used: list[Deviation] = []
    for sender, frame, request_method, where in items:
        try:
            exchange.feed(sender, frame, request_method=request_method)
        except AcpSchemaError as exc:
            method = exc.method or frame.get("method")
            hit = next((d for d in allow if d.matches(sender, method, exc)), None)
            if hit is None:
                raise AssertionError(f"{where}: {exc}\n{json.dumps(frame)[:2000]}") from None
            used.append(hit)
    return exchange, used


def validate_tee_log(
    log: TeeLog, *, allow: Sequence[Deviation] = (), where: str = "tee log"
) -> tuple[Exchange, list[Deviation]]:
    """Validate every frame of ``log``, both directions. A non-JSON line from
    agy-host fails (it only writes JSON-RPC); a non-JSON line from the agent
    is not a message and is left to the caller (agents print sign-in URLs)."""
    items: list[tuple[Sender, dict[str, Any], str | None, str]] = []
    for w in log.lines:
        if w.frame is None:
            if w.sender == "client":
                raise AssertionError(f"{where} line {w.line}: agy-host wrote a non-JSON line: {w.raw!r}")
            continue
        items.append((w.sender, w.frame, None, f"{where} line {w.line}"))
    return validate_frames(items, allow=allow)
