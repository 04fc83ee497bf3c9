"""The keeper's wire: the answer's text goes as raw UTF-8, everything else
as typed JSON, and a bad frame is refused (keeper/wire.py)."""

from __future__ import annotations

import pytest

from agy_host.contract.events import Notice, TextDelta, ThoughtDelta
from agy_host.keeper import wire

TEXTS = ["hello", "", "héllo wörld ✓ 🚀 日本語", 'quotes " and \\ and \n newlines \x00 \x1b[31m', "\ud800 lone"]


def _frames(data: bytes | bytearray) -> list[bytes]:
    out = []
    view = bytes(data)
    while view:
        size = wire.frame_length(view[: wire.HEADER_SIZE])
        out.append(view[wire.HEADER_SIZE : wire.HEADER_SIZE + size])
        view = view[wire.HEADER_SIZE + size :]
    return out


@pytest.mark.parametrize("text", TEXTS)
def test_text_goes_as_raw_utf8_and_comes_back_the_same(text: str) -> None:
    frame = wire.Event(event=TextDelta(delta=text))
    [body] = _frames(wire.encode_all([frame]))
    assert body[0] == wire.TEXT_FRAME, "not JSON: no escaping of the answer"
    assert body[1:] == text.encode("utf-8", "surrogatepass")
    assert wire.decode_for_client(body) == frame
    assert wire.decode_for_client(memoryview(body)) == frame  # as the thin client reads it


def test_every_other_frame_stays_json_and_the_order_is_kept() -> None:
    frames = [
        wire.Event(event=Notice(level="info", message="n")),
        wire.Event(event=TextDelta(delta="a")),
        wire.Event(event=ThoughtDelta(delta="t")),
        wire.Warning_(message="w"),
        wire.Event(event=TextDelta(delta="b")),
    ]
    bodies = _frames(wire.encode_all(frames))
    assert [b[:1] for b in bodies] == [b"{", b"\x00", b"{", b"{", b"\x00"]
    assert [wire.decode_for_client(b) for b in bodies] == frames


def test_encode_all_appends_to_a_buffer_it_is_given() -> None:
    out = bytearray(b"before")
    wire.encode_all([wire.Warning_(message="w")], out)
    assert out.startswith(b"before") and _frames(out[6:]) == [b'{"kind":"warning","message":"w"}']


@pytest.mark.parametrize("body", [b"\x00\xff\xfe not utf-8", b"not json", b'{"kind":"nope"}'])
def test_a_bad_frame_is_refused_with_a_frame_error(body: bytes) -> None:
    with pytest.raises(wire.FrameError, match="not a keeper answer"):
        wire.decode_for_client(body)


def test_the_keeper_never_takes_a_text_frame() -> None:
    """Text frames go to clients only: a client sending one is refused."""
    with pytest.raises(wire.FrameError, match="not a keeper request"):
        wire.decode_for_keeper(b"\x00hello")
