"""The line framing every engine reads its agent with
(:class:`agy_host.agent_process.LineSplitter`)."""

from __future__ import annotations

import json

from agy_host.agent_process import MAX_LINE_BYTES, LineSplitter


def test_splitter_reassembles_frames_split_at_every_byte() -> None:
    frames = [
        json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"text": "é" * i}}).encode()
        for i in range(5)
    ]
    stream = b"\n".join(frames) + b"\n"
    for cut in range(1, len(stream)):
        buf = LineSplitter()
        a, _ = buf.feed(stream[:cut])
        b, _ = buf.feed(stream[cut:])
        assert a + b == frames


def test_splitter_refuses_oversized_line_and_recovers() -> None:
    buf = LineSplitter(max_line=10)
    lines, dropped = buf.feed(b"x" * 8)
    assert (lines, dropped) == ([], 0)
    lines, dropped = buf.feed(b"y" * 8)  # now 16 bytes without newline: refused at once, discard mode
    assert (lines, dropped) == ([], 1)
    lines, dropped = buf.feed(b"zz\nok\n")
    assert (lines, dropped) == ([b"ok"], 0)  # the rest of the refused line is skipped, counted once


def test_splitter_drops_long_complete_line() -> None:
    buf = LineSplitter(max_line=4)
    lines, dropped = buf.feed(b"abcdefgh\nabc\n")
    assert lines == [b"abc"]
    assert dropped == 1


def test_splitter_accepts_a_line_of_exactly_the_limit_in_pieces() -> None:
    buf = LineSplitter(max_line=6)
    assert buf.feed(b"abc") == ([], 0)
    assert buf.feed(b"def\nnext") == ([b"abcdef"], 0)
    assert buf.pending == b"next"


def test_splitter_never_lets_the_rest_of_a_refused_line_through() -> None:
    buf = LineSplitter(max_line=4)
    assert buf.feed(b"xxxxx") == ([], 1)  # refused as soon as it is too long
    assert buf.feed(b"yyyy") == ([], 0)  # still the refused line: skipped, not counted again
    assert buf.feed(b"yyAFTER\nok\n") == ([b"ok"], 0)


def test_splitter_flush_returns_the_unterminated_line_once() -> None:
    buf = LineSplitter()
    assert buf.max_line == MAX_LINE_BYTES
    buf.feed(b'{"a": 1}\n{"b"')
    buf.feed(b": 2}")
    assert buf.flush() == b'{"b": 2}'
    assert buf.flush() == b""
    assert buf.feed(b"fresh\n") == ([b"fresh"], 0)
