"""The recording parser reads every vendored recording, whatever recorder made it."""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

import pytest

from agy_host.testing.replay.recordings import (
    AgentFrame,
    ClientFrame,
    Note,
    RawLine,
    RecordingError,
    parse_line,
    parse_lines,
    read_recording,
)

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "fixtures" / "recorded"
ALL_JSONL = sorted(RECORDED.rglob("*.jsonl"))

# (client, agent, raw, note) per file, counted by hand from the files and
# their NOTE.md descriptions, not by this parser.
EXPECTED = {
    "anyagent-rs-antigravity/acp-01-handshake.jsonl": (2, 2, 0, 0),
    "anyagent-rs-antigravity/acp-02-pong.jsonl": (3, 5, 1, 0),
    "anyagent-rs-antigravity/acp-03-authenticate.jsonl": (2, 2, 0, 0),
    "anyagent-rs-antigravity/acp-04-question.jsonl": (4, 8, 0, 0),
    "anyagent-rs-antigravity/cli-01-handshake.jsonl": (0, 1, 0, 2),
    "anyagent-rs-antigravity/cli-02-pong.jsonl": (1, 4, 0, 2),
    "anyagent-rs-antigravity/cli-05-question-answer.jsonl": (2, 11, 0, 2),
    "anyagent-rs-antigravity/cli-07-cancel.jsonl": (1, 5, 0, 3),
    "anyagent-rs-antigravity/cli-09-config.jsonl": (0, 2, 0, 4),
    "anyagent-rs-antigravity/cli-10-logged-out.jsonl": (0, 1, 0, 1),
    "htui/agy-acp-1.1.1-turn.jsonl": (0, 9, 0, 0),
    "htui/claude-agent-acp-0.48.0-turn.jsonl": (0, 7, 0, 0),
    "mprasanjith-anyagent/gemini-cli-0.46.0-acp-pong.jsonl": (3, 6, 0, 0),
    "mprasanjith-anyagent/agy-cli-stream-json-tools-denied.jsonl": (0, 24, 0, 0),
    "paseo-agy-cli-1.1.14/pong-mode-plan-disable-slash.stdout.jsonl": (0, 6, 0, 0),
    "paseo-agy-cli-1.1.14/error-model-rejected.stdout.jsonl": (0, 1, 0, 0),
}


def _counts(events: list[object]) -> tuple[int, int, int, int]:
    kinds = Counter(type(e).__name__ for e in events)
    return kinds["ClientFrame"], kinds["AgentFrame"], kinds["RawLine"], kinds["Note"]


def _rel(path: Path) -> str:
    return path.relative_to(RECORDED).as_posix()


def test_vendored_recordings_are_present() -> None:
    folders = {p.name for p in RECORDED.iterdir() if p.is_dir()}
    assert folders == {"anyagent-rs-antigravity", "htui", "mprasanjith-anyagent", "paseo-agy-cli-1.1.14"}
    for folder in folders:
        assert (RECORDED / folder / "NOTE.md").is_file(), f"{folder} lost its NOTE.md (source, licence)"
    assert len(ALL_JSONL) == 30


@pytest.mark.parametrize("path", ALL_JSONL, ids=_rel)
def test_every_line_becomes_one_event(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    lines = [line for line in path.read_text("utf-8").split("\n") if line.strip()]
    with caplog.at_level(logging.WARNING):
        events = read_recording(path)
    assert len(events) == len(lines)
    assert not caplog.records, "a vendored recording produced parser warnings"
    for event, line in zip(events, lines, strict=True):
        assert not (isinstance(event, Note) and event.kind == "unknown")
        if isinstance(event, AgentFrame):
            assert "_t" not in event.frame, "recorder stamp leaked into a frame"
            raw = json.loads(line)
            inner = raw.get("body", raw)
            # everything but recorder keys survives
            if "direction" not in raw:
                assert event.frame == {k: v for k, v in inner.items() if k != "_t"}


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_event_counts_match_the_files(rel: str) -> None:
    assert _counts(list(read_recording(RECORDED / rel))) == EXPECTED[rel]


def test_anyagent_question_keeps_wire_ids_and_order() -> None:
    events = read_recording(RECORDED / "anyagent-rs-antigravity/acp-04-question.jsonl")
    permission = next(
        e for e in events if isinstance(e, AgentFrame) and e.frame.get("method") == "session/request_permission"
    )
    assert permission.frame["id"] == 0
    answer = events[events.index(permission) + 1]
    assert isinstance(answer, ClientFrame)
    assert answer.frame == {"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "1"}}}
    assert answer.t == pytest.approx(3.928)


def test_raw_stdout_line_is_verbatim() -> None:
    events = read_recording(RECORDED / "anyagent-rs-antigravity/acp-02-pong.jsonl")
    raws = [e for e in events if isinstance(e, RawLine)]
    assert [r.text for r in raws] == [
        "Open the following link to authenticate the ACP server: https://accounts.google.com/o/oauth2/v2/auth?<redacted>"
    ]
    assert raws[0].sent is False and raws[0].line == 9


def test_stream_json_recording_notes_and_stdin_lines() -> None:
    events = read_recording(RECORDED / "anyagent-rs-antigravity/cli-07-cancel.jsonl")
    notes = [e for e in events if isinstance(e, Note)]
    assert [n.kind for n in notes] == ["meta", "note", "note"]
    assert notes[1].data == {"signal": "SIGINT"} and notes[2].data == {"exit": 1}
    sent = [e for e in events if isinstance(e, ClientFrame)]
    assert sent[0].frame["event"] == "user"


def test_htui_result_line_names_the_request_it_answers() -> None:
    events = read_recording(RECORDED / "htui/claude-agent-acp-0.48.0-turn.jsonl")
    last = events[-1]
    assert isinstance(last, AgentFrame)
    assert last.answers == "session/prompt"
    assert last.frame["result"]["usage"]["totalTokens"] == 22913
    assert "method" not in last.frame and last.frame["id"] is None
    first = events[0]
    assert isinstance(first, AgentFrame) and first.answers is None
    assert first.frame["jsonrpc"] == "2.0" and first.frame["method"] == "session/update"
    assert first.frame["params"]["sessionId"] == "<session>"


def test_mprasanjith_direction_out_is_the_client() -> None:
    events = read_recording(RECORDED / "mprasanjith-anyagent/gemini-cli-0.46.0-acp-pong.jsonl")
    assert [type(e).__name__ for e in events[:2]] == ["ClientFrame", "AgentFrame"]
    assert [e.frame["method"] for e in events if isinstance(e, ClientFrame)] == [
        "initialize",
        "session/new",
        "session/prompt",
    ]


def test_parse_line_edge_cases(caplog: pytest.LogCaptureFixture) -> None:
    assert parse_line("   \n") is None
    assert parse_line("not json at all", 4) == RawLine(text="not json at all", line=4)
    assert parse_line("[1, 2]") == RawLine(text="[1, 2]")
    sent_text = parse_line(json.dumps({"_sent": "plain text", "_t": 1}))
    assert sent_text == RawLine(text="plain text", sent=True, t=1.0)
    sent_json = parse_line(json.dumps({"_sent": '{"event": "user"}'}))
    assert sent_json == ClientFrame(frame={"event": "user"})
    # _meta inside a JSON-RPC frame is protocol data, not the recorder's
    frame = {"jsonrpc": "2.0", "method": "x", "params": {}, "_meta": {"k": 1}, "_t": 2.5}
    parsed = parse_line(json.dumps(frame))
    assert parsed == AgentFrame(frame={"jsonrpc": "2.0", "method": "x", "params": {}, "_meta": {"k": 1}}, t=2.5)
    with caplog.at_level(logging.WARNING):
        odd = parse_line(json.dumps({"body": {"id": 1}, "dir": "sideways"}), 7)
    assert isinstance(odd, Note) and odd.kind == "unknown" and odd.line == 7
    assert "sideways" in caplog.text


def test_line_separator_inside_json_string_does_not_split(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    frame = {"jsonrpc": "2.0", "method": "m", "params": {"text": "a\u2028b\u0085c"}}
    path.write_text(json.dumps(frame, ensure_ascii=False) + "\n\n" + json.dumps(frame) + "\n", "utf-8")
    events = read_recording(path)
    assert [e.frame for e in events if isinstance(e, AgentFrame)] == [frame, frame]


def test_unreadable_recordings_raise_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="not found"):
        read_recording(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(RecordingError, match="not UTF-8"):
        read_recording(bad)


def test_parse_lines_numbers_lines_from_one() -> None:
    events = parse_lines(["", '{"_raw": "x"}', '{"_note": {"exit": 0}}'])
    assert [e.line for e in events] == [2, 3]


def test_recordings_dir_fixture_finds_the_vendored_copy(recordings_dir: Path) -> None:
    assert recordings_dir.resolve() == RECORDED.resolve()
