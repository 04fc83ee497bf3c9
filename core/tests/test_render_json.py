"""The JSON event stream: every line carries the schema version, every event
type and field is documented in docs/json-events.md (and nothing documented
is missing from the code), and a run against a real ACP agent ends with one
``done`` whose ids match the store."""

from __future__ import annotations

import io
import json
import re
import typing
from pathlib import Path

import msgspec
import pytest

from agy_host.builtins.json_slices import SLICE_CHARS
from agy_host.builtins.json_times import rounded_times
from agy_host.builtins.renderers import JsonRenderer, QuietRenderer
from agy_host.cli.ask_report import AskReport
from agy_host.cli.exit_codes import EXIT_CODES
from agy_host.contract import events
from agy_host.contract.rendering import RenderOptions

DOC = Path(__file__).resolve().parents[2] / "docs" / "json-events.md"
DONE_FIELDS = {
    "stop_reason",
    "exit_code",
    "session",
    "conversation_id",
    "usage",
    "cumulative_usage",
    "duration_s",
    "error",
}


def documented() -> dict[str, set[str]]:
    """``### `name` `` headings (and the usage/ask sections) -> the fields of their table."""
    sections: dict[str, set[str]] = {}
    current: str | None = None
    for line in DOC.read_text("utf-8").splitlines():
        heading = re.match(r"^##+ `?([\w -]+?)`?(?: --format json`)?$", line)
        if line.startswith("#"):
            current = None
            if heading:
                current = heading.group(1).strip()
                sections[current] = set()
            continue
        cell = re.match(r"^\| `(\w+)` \|", line)
        if current is not None and cell:
            sections[current].add(cell.group(1))
    return sections


def struct_fields(cls: type) -> set[str]:
    return {f.encode_name for f in msgspec.inspect.type_info(cls).fields}  # type: ignore[attr-defined]


@pytest.mark.parametrize("cls", typing.get_args(events.HostEvent), ids=lambda c: c.__name__)
def test_every_event_and_field_is_documented(cls: type) -> None:
    tag = cls.__struct_config__.tag  # type: ignore[attr-defined]
    docs = documented()
    assert tag in docs, f"docs/json-events.md has no section for {tag!r}"
    assert docs[tag] == struct_fields(cls), f"{tag}: documented fields differ from the code"


def test_usage_counts_done_and_ask_are_documented() -> None:
    docs = documented()
    assert docs["Usage counts"] == struct_fields(events.UsageCounts)
    assert docs["done"] == DONE_FIELDS
    assert docs["ask"] == struct_fields(AskReport)


def test_exit_codes_are_documented() -> None:
    text = DOC.read_text("utf-8")
    for code in EXIT_CODES:
        assert re.search(rf"^\| {int(code)} \|", text, re.MULTILINE), f"exit code {code} not in the doc"


SAMPLE: list[events.HostEvent] = [
    events.TurnStarted(session="s", engine="acp"),
    events.TextDelta(delta="hi"),
    events.ThoughtDelta(delta="hm"),
    events.ToolCard(call_id="c", name="n", status="done", diff=events.FileDiff(path="p", new_text="x")),
    events.PermissionAnswered(call_id="c", title="t", options=[], selected=None, policy="auto"),
    events.UsageReport(turn=events.UsageCounts(input_tokens=1)),
    events.Notice(message="m"),
    events.ToolUseRequested(call_id="b", name="read"),
    events.TurnEnded(stop_reason="stop", duration_s=1.0, response="hi"),
]


def test_json_lines_carry_version_and_type_and_round_trip() -> None:
    buf = io.StringIO()
    renderer = JsonRenderer(RenderOptions(stream=buf))
    for event in SAMPLE:
        renderer.handle(event)
    lines = buf.getvalue().splitlines()
    assert len(lines) == len(SAMPLE)
    decoder = msgspec.json.Decoder(events.HostEvent)
    for line, event in zip(lines, SAMPLE, strict=True):
        obj = json.loads(line)
        assert obj["version"] == events.EVENT_SCHEMA_VERSION
        assert obj["type"] == event.__struct_config__.tag
        assert decoder.decode(line) == event


class _TextWrites(io.TextIOWrapper):
    """A UTF-8 stream over bytes that counts what was written to it as text."""

    text_chars = 0

    def write(self, s: str) -> int:
        self.text_chars += len(s)
        return super().write(s)


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
def test_json_lines_go_to_a_utf8_streams_bytes_as_encoded(encoding: str) -> None:
    """A flood's answer is not decoded to text and encoded back (on a UTF-8
    stream); text written before a line stays before it."""
    stream = _TextWrites(io.BytesIO(), encoding=encoding)
    renderer = JsonRenderer(RenderOptions(stream=stream))
    stream.write("before\n")
    for event in SAMPLE:
        renderer.handle(event)
    stream.flush()
    lines = stream.buffer.getvalue().decode(encoding).splitlines()  # type: ignore[attr-defined]
    assert lines[0] == "before" and [json.loads(line)["type"] for line in lines[1:]] == [
        e.__struct_config__.tag for e in SAMPLE
    ]
    assert stream.text_chars == (len("before\n") if encoding == "utf-8" else len("".join(lines)) + len(lines))


class _Pieces(io.BytesIO):
    """A byte buffer that keeps the size of each write."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def write(self, b: typing.Any) -> int:
        self.sizes.append(len(b))
        return super().write(b)


def test_a_long_answers_turn_end_is_the_same_line_written_a_slice_at_a_time() -> None:
    """A 12 MB answer's ``turn_end`` is not encoded into one more 12 MB
    buffer: the same bytes as a whole encoding, in pieces of about a MiB."""
    piece = 'plain "quoted" \\ back\nslash \u00e9t\u00e9 \U0001f600 \x01 '
    text = piece * (3 * SLICE_CHARS // len(piece))
    event = events.TurnEnded(stop_reason="stop", duration_s=1.23456, response=text, conversation_id="c")
    raw = _Pieces()
    stream = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    JsonRenderer(RenderOptions(stream=stream)).handle(event)
    short = io.StringIO()
    JsonRenderer(RenderOptions(stream=short)).handle(event)
    assert raw.getvalue().decode() == short.getvalue()
    assert json.loads(raw.getvalue())["response"] == text
    assert len(raw.sizes) > 3 and max(raw.sizes) < 3 * SLICE_CHARS, raw.sizes


def test_quiet_prints_the_final_answer_only(capsys: pytest.CaptureFixture[str]) -> None:
    buf = io.StringIO()
    renderer = QuietRenderer(RenderOptions(stream=buf))
    for event in SAMPLE:
        renderer.handle(event)
    renderer.handle(events.TurnEnded(stop_reason="error", duration_s=1.0, error="boom"))
    assert buf.getvalue() == "hi\n"
    assert "error: boom" in capsys.readouterr().err


def test_a_real_run_ends_with_the_documented_done(cli: typing.Any) -> None:
    code, out, _ = cli("run", "--format", "json", "--session", "j", "!usage", "!tool", "!thought", "hi")
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert all(line["version"] == 1 for line in lines)
    docs = documented()
    for line in lines[:-1]:
        assert set(line) - {"type", "version"} <= docs[line["type"]], line
    done = lines[-1]
    assert done["type"] == "done"
    assert set(done) - {"type", "version"} == DONE_FIELDS
    assert done["conversation_id"] == lines[-2]["conversation_id"]


def _times(value: typing.Any) -> list[float]:
    """Every float under a key ending in ``_s``, anywhere in ``value``."""
    if isinstance(value, dict):
        found = [v for k, v in value.items() if k.endswith("_s") and isinstance(v, float)]
        return found + [t for v in value.values() for t in _times(v)]
    return [t for v in value for t in _times(v)] if isinstance(value, list) else []


def test_json_times_are_to_the_millisecond_and_costs_are_not_touched() -> None:
    """Issue 26 item 12: a measured duration printed as 17 digits."""
    buf = io.StringIO()
    renderer = JsonRenderer(RenderOptions(stream=buf))
    usage = events.UsageCounts(input_tokens=3, cost_amount=0.123456789, cost_currency="USD")
    renderer.handle(events.ToolCard(call_id="t", name="read", status="done", duration_s=0.12345678901))
    renderer.handle(events.TurnEnded(stop_reason="stop", duration_s=1.23456789012, usage=usage))
    tool, end = (json.loads(line) for line in buf.getvalue().splitlines())
    assert (tool["duration_s"], end["duration_s"]) == (0.123, 1.235)
    assert end["usage"]["cost_amount"] == 0.123456789
    doc = rounded_times({"idle_s": 2.0004999, "sessions": [{"started_s": 1.9999999}], "cost": 0.123456789})
    assert doc == {"idle_s": 2.0, "sessions": [{"started_s": 2.0}], "cost": 0.123456789}


def test_a_real_run_and_ask_print_times_to_the_millisecond(cli: typing.Any) -> None:
    code, out, _ = cli("run", "--format", "json", "!tool", "hi")
    assert code == 0
    code, report, _ = cli("ask", "--format", "json", "hi")
    assert code == 0
    times = [t for line in [*out.splitlines(), report] for t in _times(json.loads(line))]
    assert times and all(round(t, 3) == t for t in times), times
