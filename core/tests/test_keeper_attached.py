"""What a command attached to a keeper's turn says at Ctrl-C (keeper/attached.py)."""

from __future__ import annotations

import signal

from agy_host.contract.events import Notice, TextDelta, TurnEnded, TurnStarted
from agy_host.keeper import attached


def test_a_queued_command_leaves_the_queue_at_its_first_interrupt() -> None:
    said = attached.interrupt_notice(1, None, queued=True)
    assert said is not None and "leaving the queue" in said and "interrupting" not in said
    assert "SIGTERM: leaving the queue" in (attached.interrupt_notice(1, signal.SIGTERM, queued=True) or "")
    assert "interrupting the turn" in (attached.interrupt_notice(1, None) or "")


def test_the_queue_lasts_from_the_keepers_notice_until_the_turn_starts() -> None:
    busy = Notice(level="info", message="waiting", code=attached.QUEUED)
    queued = False
    seen = []
    for event in [busy, Notice(level="info", message="other"), TurnStarted(session="s", engine="e", agent="a")]:
        queued = attached.still_queued(queued, event)
        seen.append(queued)
    assert seen == [True, True, False]
    assert attached.still_queued(True, TurnEnded(stop_reason="aborted", duration_s=0.0)) is False
    assert attached.still_queued(False, TextDelta(delta="x")) is False
