"""Framing: what arrives on an agent's stdout becomes the same messages, in
order, whatever the pipe does to it, and bad bytes never end a session.

Both engines read NDJSON (ACP: JSON-RPC 2.0 in ``agy_host_acp.jsonrpc``;
stream-json: agy's events in ``agy_host_stream_json.wire``). The property
tests split the vendored recordings at random byte boundaries; the volume,
size and garbage tests run the real engines against the purpose-built raw
agents in ``agents/`` over real pipes.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability._support import ENGINES, driver, notices, raw_engine, request, stream_json_engine

from agy_host.testing.agy_cli.agent import make_fake_agy
from agy_host.testing.contract import collect, outcome_of, text_of
from agy_host_acp import jsonrpc
from agy_host_stream_json import wire

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"


def _streams() -> dict[str, bytes]:
    """Every vendored NDJSON recording, as the byte stream it was on the wire."""
    files = sorted(p for p in RECORDED.rglob("*") if p.suffix in {".jsonl", ".json"} and p.is_file())
    return {str(p.relative_to(RECORDED)): p.read_bytes() for p in files}


STREAMS = _streams()
ACP_STREAMS = {k: v for k, v in STREAMS.items() if "acp" in k}
CLI_STREAMS = {k: v for k, v in STREAMS.items() if "acp" not in k}


def _cuts(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


def _envelopes(lines: list[bytes]) -> list[object]:
    """What the JSON-RPC layer makes of each line: the decoded object, or the
    error text for garbage (so a changed verdict on a line also shows)."""
    out: list[object] = []
    for line in lines:
        try:
            out.append(msgspec.json.decode(line))
        except msgspec.DecodeError as exc:
            out.append(f"garbage: {exc}")
    return out


def test_the_recordings_are_there() -> None:
    assert len(ACP_STREAMS) >= 5 and len(CLI_STREAMS) >= 10, sorted(STREAMS)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(ACP_STREAMS)), cuts=st.lists(st.integers(min_value=0), max_size=40))
def test_acp_frames_survive_any_split(name: str, cuts: list[int]) -> None:
    data = ACP_STREAMS[name]
    whole = [line for line in data.split(b"\n")[:-1] if line]
    buf = jsonrpc.LineBuffer()
    got: list[bytes] = []
    for piece in _cuts(data, cuts):
        lines, dropped = buf.feed(piece)
        assert dropped == 0
        got += [line for line in lines if line]
    tail = data.rsplit(b"\n", 1)[-1]
    assert buf.pending == tail
    assert got == whole
    assert _envelopes(got) == _envelopes(whole)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(CLI_STREAMS)), cuts=st.lists(st.integers(min_value=0), max_size=40))
def test_stream_json_events_survive_any_split(name: str, cuts: list[int]) -> None:
    data = CLI_STREAMS[name]
    reference = wire.LineBuffer()
    whole = reference.feed(data) + reference.flush()
    buf = wire.LineBuffer()
    got: list[bytes] = []
    for piece in _cuts(data, cuts):
        got += buf.feed(piece)
    got += buf.flush()
    assert got == whole and buf.overflows == 0
    assert [wire.parse(line) for line in got] == [wire.parse(line) for line in whole]


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_million_small_messages_none_lost_or_reordered(tmp_path: Path, engine: str) -> None:
    count = 1_000_000
    async with driver(raw_engine(engine, tmp_path, "numbered", count)) as drv:
        acts = await collect(await drv.run(request(tmp_path)), seconds=120)
    out = outcome_of(acts)
    assert out.status == "ok", out
    text = text_of(acts)
    assert text == "".join(f"{i}," for i in range(count))


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_64_mib_line_is_accepted_and_a_longer_one_refused_visibly(tmp_path: Path, engine: str) -> None:
    """The documented choice (docs/reliability.md): the longer line is skipped
    up to its newline with a warning, and the connection is kept."""
    limit = jsonrpc.MAX_LINE_BYTES if engine == "acp" else wire.LineBuffer().max_line
    assert limit == 64 * 1024 * 1024
    async with driver(raw_engine(engine, tmp_path, "bigline", limit)) as drv:
        acts = await collect(await drv.run(request(tmp_path)), seconds=60)
        assert drv.snapshot().stats["spawns"] == 1  # the refused line did not cost the agent process
        again = await collect(await drv.run(request(tmp_path)), seconds=60)
        snapshot = drv.snapshot()
    out = outcome_of(acts)
    assert out.status == "ok", out
    text = text_of(acts)
    assert text.startswith("x" * 1000) and text.endswith("AFTER")
    assert text.count("x") > limit - 200 and "y" not in text
    warned = [n for n in notices(acts) if str(limit) in n]
    assert len(warned) == 1, notices(acts)
    assert "longer than" in warned[0] or "over" in warned[0]
    assert outcome_of(again).status == "ok" and text_of(again).endswith("AFTER")
    if engine == "acp":
        assert snapshot.stats["spawns"] == 1, snapshot  # the connection was kept for the next turn


@pytest.mark.parametrize("engine", ENGINES)
async def test_garbage_is_reported_and_never_fatal(tmp_path: Path, engine: str) -> None:
    """Invalid UTF-8, NUL bytes, a JSON array (and for JSON-RPC a response to
    an unknown id and a duplicate answer): each one is in the driver's
    lifecycle log (what doctor shows), the first ones are also shown to the
    user, and the turn ends normally with the text sent after them."""
    async with driver(raw_engine(engine, tmp_path, "garbage")) as drv:
        acts = await collect(await drv.run(request(tmp_path)), seconds=30)
        snapshot = drv.snapshot()
    out = outcome_of(acts)
    assert out.status == "ok", out
    assert text_of(acts).endswith("SURVIVED")
    logged = [str(e.data) for e in snapshot.lifecycle if e.event in ("parse-error", "unknown-line")]
    expected = ["not utf-8", "\\x00\\x00", "[{"]
    if engine == "acp":
        expected += ["987654", "already-answered id 1"]  # unknown id; session/new (id 1) answered twice
    for needle in expected:
        assert sum(needle in line for line in logged) == 1, (needle, logged)
    assert len(logged) == len(expected), logged
    assert len(notices(acts)) >= 2  # visible, not only in doctor (the first few; the rest in doctor)
    assert snapshot.stats["spawns"] == 1  # nothing was restarted over it


async def test_acp_a_chunk_with_invalid_utf8_is_kept_and_unknown_updates_are_visible(tmp_path: Path) -> None:
    """A text chunk holding an invalid UTF-8 byte is decoded with a
    replacement character (and a warning), never dropped; an update kind ACP
    does not define is shown once per kind and logged each time; a protocol
    version we do not speak is shown and in doctor."""
    async with driver(raw_engine("acp", tmp_path, "badupdates")) as drv:
        acts = await collect(await drv.run(request(tmp_path)), seconds=30)
        snapshot = drv.snapshot()
    assert outcome_of(acts).status == "ok"
    assert text_of(acts) == "caf\ufffdEND"
    shown = notices(acts)
    assert sum("invalid UTF-8" in n for n in shown) == 1, shown
    assert sum("future_kind" in n for n in shown) == 1, shown
    logged = [e for e in snapshot.lifecycle if e.event == "unknown-update"]
    assert len(logged) == 2 and all("future_kind" in str(e.data) for e in logged)
    # the agent answered initialize with a protocol version we do not speak
    assert sum("protocol version 2" in n for n in shown) == 1, shown
    assert snapshot.extra["protocol"] == "2 (agy-host speaks 1)"


async def test_stream_json_a_delta_with_invalid_utf8_is_kept_with_a_replacement_character(tmp_path: Path) -> None:
    """A stream-json delta holding a byte that is not UTF-8 (the real fake
    ``agy`` writes it raw) is kept with U+FFFD, as on ACP, never dropped with
    the text around it; one warning says so, and the lifecycle log has it."""
    fake = make_fake_agy(tmp_path / "agy", {"turns": [[{"say": "A "}, {"say_bytes": "caf\\xffE"}, {"say": "ND"}]]})
    async with driver(stream_json_engine(tmp_path, fake.bin)) as drv:
        acts = await collect(await drv.run(request(tmp_path)), seconds=30)
        snapshot = drv.snapshot()
    assert outcome_of(acts).status == "ok", outcome_of(acts)
    assert text_of(acts) == "A caf\ufffdEND"
    shown = notices(acts)
    assert shown == ["the agent sent text with invalid UTF-8; the bad bytes are shown as \ufffd"], shown
    assert [e.event for e in snapshot.lifecycle].count("invalid-utf8") == 1
    assert snapshot.extra["invalid_utf8_lines"] == 1
