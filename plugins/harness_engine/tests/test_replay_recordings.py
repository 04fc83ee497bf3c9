"""Real harness traffic (``recordings/harness-0.1.22`` beside this file, recorded
with ``scripts/record_harness.py``) replayed through the engine's turn: every
frame decodes, and the turn maps it as the live engine did."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agy_host_harness import outcome, wire
from agy_host_harness.turn import HarnessTurn

from agy_host.contract.events import (
    Activity,
    TextActivity,
    ThoughtActivity,
    ToolDoneActivity,
    ToolStartActivity,
    UsageActivity,
)
from agy_host.contract.prompt import TextBlock
from agy_host.engine.driver import TurnRequest
from agy_host.testing.contract import collect

RECORDINGS = Path(__file__).resolve().parent / "recordings" / "harness-0.1.22"


def _frames(name: str) -> list[dict[str, Any]]:
    """The recording's WebSocket frames (a wire trace also holds the
    bootstrap and the harness's stderr)."""
    entries = [json.loads(line) for line in (RECORDINGS / name).read_text().splitlines() if line.strip()]
    return [e for e in entries if e["dir"] in ("in", "out") and "bootstrap" not in e["frame"]]


async def replay(name: str) -> tuple[HarnessTurn, list[Activity], list[dict[str, Any]]]:
    """The recording's incoming frames through a fresh turn, as the driver routes them."""
    frames = _frames(name)
    request = TurnRequest(session="replay", prompt=[TextBlock(text="go")], cwd="/tmp")
    turn = HarnessTurn(request)
    sent: list[dict[str, Any]] = []
    for entry in frames:
        frame = entry["frame"]
        if entry["dir"] == "out":
            sent.append(frame)
            if "userInput" in frame:
                turn.sent = True
            continue
        event = wire.decode(json.dumps(frame))
        init = event.initialize_conversation_response
        if init is not None:
            turn.start(init.cascade_id, init.cumulative_usage)
            continue
        turn.on_event(event)
    turn.emit_usage()
    turn.handle.finish(outcome.settle(turn, None) if turn.wire_done.is_set() else turn.failed("cut", "internal"))
    acts = await collect(turn.handle, seconds=5)
    return turn, acts, sent


@pytest.mark.parametrize("name", sorted(p.name for p in RECORDINGS.glob("*.jsonl")))
def test_every_recorded_frame_decodes(name: str) -> None:
    for entry in _frames(name):
        if entry["dir"] == "in":
            wire.decode(json.dumps(entry["frame"]))


@pytest.mark.trio
async def test_text_thinking_and_usage_replay() -> None:
    turn, acts, sent = await replay("text-thinking-usage.jsonl")
    assert "".join(a.delta for a in acts if isinstance(a, TextActivity)) == "Hello there."
    assert "".join(a.delta for a in acts if isinstance(a, ThoughtActivity)) == "Let me think."
    [usage] = [a for a in acts if isinstance(a, UsageActivity)]
    assert (usage.turn.input_tokens, usage.turn.output_tokens, usage.turn.thinking_tokens) == (42, 7, 3)
    assert turn.handle.outcome is not None and turn.handle.outcome.status == "ok"
    assert sent[0]["config"]["budgetConfig"]["maxModelCalls"] == 50, "every conversation gets a budget"


@pytest.mark.trio
async def test_tools_replay_as_cards_with_kinds_output_and_diff() -> None:
    turn, acts, _ = await replay("tools.jsonl")
    started = [a for a in acts if isinstance(a, ToolStartActivity)]
    done = {a.name: a for a in acts if isinstance(a, ToolDoneActivity)}
    assert [a.kind for a in started] == ["edit", "execute", "read"]
    assert done["edit_file"].diff is not None and done["edit_file"].diff.new_text == "one\ntwo\n"
    assert "one\ntwo" in done["run_command"].output
    assert "notes.txt" in done["list_dir"].output
    assert turn.handle.outcome is not None and turn.handle.outcome.response == "Done."


@pytest.mark.trio
async def test_halt_replay_goes_idle_after_the_host_cancel() -> None:
    turn, acts, sent = await replay("halt-on-inactivity.jsonl")
    assert {"haltRequest": True} in sent, "agy-host cancelled with the harness's own halt"
    assert turn.wire_done.is_set(), "the harness went idle after the halt"
    assert "".join(a.delta for a in acts if isinstance(a, TextActivity)) == "partial "
