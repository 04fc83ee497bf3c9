"""The chat's line editor on a real pseudo-terminal: keys in, lines out."""

from __future__ import annotations

import json
import os
import termios
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from agy_host.cli.line_editor import Buffer, History, LineEditor, _match_escape, visible_width


@pytest.fixture
def pty() -> Iterator[tuple[int, int]]:
    master, slave = os.openpty()
    try:
        yield master, slave
    finally:
        os.close(master)
        os.close(slave)


async def read_with(
    pty: tuple[int, int], keys: bytes, history: History | None = None, completions: list[str] | None = None
) -> str | None:
    master, slave = pty
    out = os.fdopen(os.dup(slave), "w", encoding="utf-8")
    editor = LineEditor(fd=slave, out=out, history=history or History(None))
    if completions is not None:
        editor.completions = lambda: completions
    result: list[str | None] = []

    async def read() -> None:
        result.append(await editor.read_line("› "))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read)
            # Keys arrive once the editor has the terminal (as typed keys do):
            # in canonical mode the kernel itself would act on Ctrl-D and Ctrl-U.
            while termios.tcgetattr(slave)[3] & termios.ICANON:
                await trio.sleep(0.01)
            os.write(master, keys)
    out.close()
    return result[0]


@pytest.mark.parametrize(
    ("keys", "line"),
    [
        (b"hello\r", "hello"),
        (b"helo\x1b[D\x1b[Dl\r", "hello"),  # Left Left, insert
        (b"world\x01hello \r", "hello world"),  # Ctrl-A
        (b"abc\x7f\x7fd\r", "ad"),  # Backspace
        (b"one two three\x17\x17four\r", "one four"),  # Ctrl-W twice
        (b"abcdef\x1b[D\x1b[D\x0b\r", "abcd"),  # Ctrl-K
        (b"abcdef\x1b[D\x1b[D\x15\r", "ef"),  # Ctrl-U
        (b"ab\x1b[H\x1b[3~\r", "b"),  # Home, Delete
        (b"x\x1b[200~line one\nline two\x1b[201~\r", "xline one\nline two"),  # bracketed paste
        (b"typo\x03fixed\r", "fixed"),  # Ctrl-C clears the line
        (b"\xc3\xa9t\xc3\xa9\r", "été"),
    ],
)
async def test_keys(pty: tuple[int, int], keys: bytes, line: str) -> None:
    assert await read_with(pty, keys) == line


async def test_ctrl_d_on_an_empty_line_is_end_of_input(pty: tuple[int, int]) -> None:
    assert await read_with(pty, b"\x04") is None


async def test_history_up_down_keeps_the_draft(pty: tuple[int, int], tmp_path: Path) -> None:
    history = History(tmp_path / "h")
    history.add("first")
    history.add("second")
    assert await read_with(pty, b"\x1b[A\x1b[A\r", history) == "first"
    assert await read_with(pty, b"draft\x1b[A\x1b[B\r", history) == "draft"
    assert [json.loads(line) for line in (tmp_path / "h").read_text().splitlines()] == [
        "first",
        "second",
        "first",
        "draft",
    ]
    assert History(tmp_path / "h").entries[-1] == "draft", "history survives a restart"


async def test_the_terminal_is_restored(pty: tuple[int, int]) -> None:
    _, slave = pty
    before = termios.tcgetattr(slave)
    await read_with(pty, b"x\r")
    assert termios.tcgetattr(slave) == before


def test_history_skips_blanks_and_repeats() -> None:
    history = History(None)
    for line in ["a", "a", "  ", "b"]:
        history.add(line)
    assert history.entries == ["a", "b"]


def test_buffer_word_moves() -> None:
    buf = Buffer(History(None))
    buf.insert("alpha beta-gamma")
    buf.key("word-left")
    assert buf.pos == len("alpha beta-")
    buf.key("word-left")
    buf.key("word-right")
    assert buf.pos == len("alpha beta")


def test_escape_sequences() -> None:
    assert _match_escape("\x1b[A") == ("up", 3)
    assert _match_escape("\x1b[") == (None, 0), "incomplete: wait for more"
    assert _match_escape("\x1b[99Zrest") == (None, 5), "unknown but complete: skipped"


def test_wide_characters_count_twice() -> None:
    assert visible_width("\x1b[1m›\x1b[0m 漢字") == 6


SLASH = ["/help", "/model", "/compact", "/commit"]


@pytest.mark.parametrize(
    ("text", "pos", "after", "listed"),
    [
        ("/comp", None, "/compact ", []),  # one fits: completed, with a space
        ("/he", None, "/help ", []),
        ("/c", None, "/com", []),  # several: as far as they agree
        ("/com", None, "/com", ["/commit", "/compact"]),  # no further: listed
        ("/xyz", None, "/xyz", []),  # none fits: nothing happens
        ("/comp be brief", 5, "/compact be brief", []),  # the rest of the line is kept, no second space
        ("fix /comp", None, "fix /comp    ", []),  # not a /name at the start: Tab inserts spaces
        ("/compact now", None, "/compact now    ", []),  # past the name: spaces
    ],
)
def test_tab_completes_a_slash_name(text: str, pos: int | None, after: str, listed: list[str]) -> None:
    buf = Buffer(History(None))
    buf.insert(text)
    if pos is not None:
        buf.pos = pos
    assert buf.complete(SLASH) == sorted(listed)
    assert buf.text == after


def drain(fd: int) -> str:
    """Everything the editor drew so far (a pty hands it over in pieces)."""
    import select

    out = b""
    while select.select([fd], [], [], 0.2)[0]:
        out += os.read(fd, 65536)
    return out.decode()


async def test_tab_in_the_terminal_completes_and_lists(pty: tuple[int, int]) -> None:
    assert await read_with(pty, b"/comp\tbe brief\r", completions=SLASH) == "/compact be brief"
    master, _ = pty
    drain(master)  # what the first line drew
    assert await read_with(pty, b"/com\t\x15\r", completions=SLASH) == ""
    assert "/commit  /compact" in drain(master)
