"""The turn's answer as it streams: kept in memory, or spilled to a file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agy_host.contract.answer import SLICE_CHARS, answer_slices, answer_text, spooled_answer
from agy_host.contract.events import TurnEnded
from agy_host.runtime.answer_spool import SPILL_CHARS, AnswerText


def _open_files() -> set[str]:
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            continue  # the directory's own descriptor, closed by now
    return found


def test_kept_in_memory_the_text_is_joined_once() -> None:
    answer = AnswerText()
    for delta in ("a", "b" * SPILL_CHARS, "c"):
        answer.append(delta)
    assert not answer.spilled and len(answer) == SPILL_CHARS + 2
    assert answer.text() == "a" + "b" * SPILL_CHARS + "c"
    assert answer.text() is answer.text()


def test_a_spilling_answer_leaves_memory_past_a_mebibyte_and_reads_back_whole(tmp_path: Path) -> None:
    """Characters of every UTF-8 length, across the file's read boundaries:
    each slice decodes whole characters."""
    piece = "a\u00e9\u4e2d\U0001f600\n"  # 1, 2, 3 and 4 bytes
    deltas = [piece * 1000 for _ in range(700)]
    answer = AnswerText(spill=True, spill_dir=str(tmp_path))
    before = _open_files()
    for delta in deltas:
        answer.append(delta)
    assert answer.spilled
    assert list(tmp_path.iterdir()) == [], "the file has no name"
    whole = "".join(deltas)
    slices = list(answer.slices())
    assert "".join(slices) == whole and max(map(len, slices)) <= SLICE_CHARS
    assert "".join(answer) == whole, "iterable again (the transcript and turn_end both read it)"
    assert answer.text() == whole and len(answer) == len(whole)
    answer.close()
    assert _open_files() <= before, "closing removes the file"
    assert not answer and list(answer.slices()) == []


def test_an_answer_under_the_threshold_never_touches_the_disk(tmp_path: Path) -> None:
    answer = AnswerText(spill=True, spill_dir=str(tmp_path / "nowhere"))
    answer.append("short")
    assert not answer.spilled and answer.text() == "short"


def test_answer_slices_read_the_response_or_the_spool_while_the_event_is_handled() -> None:
    whole = TurnEnded(stop_reason="stop", duration_s=1.0, response="x" * (SLICE_CHARS + 5))
    assert [len(s) for s in answer_slices(whole)] == [SLICE_CHARS, 5]
    assert answer_text(whole) is whole.response
    elided = TurnEnded(stop_reason="stop", duration_s=1.0, response_elided=True)
    with spooled_answer(["spo", "oled"]):
        assert list(answer_slices(elided)) == ["spo", "oled"] and answer_text(elided) == "spooled"
    with pytest.raises(LookupError, match="spool is gone"):
        answer_slices(elided)
