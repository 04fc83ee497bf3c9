"""A small line editor for ``chat``, on the trio loop: history and editing keys.

Why not ``readline``: it blocks a thread, and the agent's driver lives on the
trio loop for the whole chat; a thread stuck in ``readline()`` cannot be
cancelled, and GNU readline's own signal handling fights trio's. This
editor reads the terminal in non-canonical mode with
``trio.lowlevel.wait_readable``, so it never blocks the loop and Ctrl-C at
the prompt is a key (clear the line), not a signal. While a turn runs the
terminal is back in canonical mode with signals on (Ctrl-C is SIGINT, which
aborts the turn), so the ``ask`` permission policy can read an answer there.

Keys: printable text, Backspace, Delete, Left/Right (Ctrl-B/F), Home/End
(Ctrl-A/E), Alt-B/F and Ctrl-Left/Right (word), Ctrl-W (delete word), Ctrl-U
/ Ctrl-K (kill to start / end), Up/Down (Ctrl-P/N, history), Ctrl-L (clear
screen), Ctrl-C (clear the line), Ctrl-D (delete, or end the chat on an empty
line), Ctrl-Z (suspend), Tab (completes a ``/name`` being typed from
:attr:`LineEditor.completions`, the chat's and the agent's commands; lists
them when several fit; elsewhere it inserts spaces), Enter. Bracketed paste keeps pasted newlines in
the prompt. Long lines scroll horizontally instead of wrapping, so a redraw
never has to know how many rows the line took.

History is kept in ``$XDG_STATE_HOME/agy-host/chat-history`` (one JSON
string per line, newest last, capped).
"""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import re
import signal
import sys
import termios
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import trio

HISTORY_LIMIT = 1000
ESC_TIMEOUT_S = 0.05
PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_SEQUENCES = {
    "\x1b[A": "up",
    "\x1b[B": "down",
    "\x1b[C": "right",
    "\x1b[D": "left",
    "\x1bOA": "up",
    "\x1bOB": "down",
    "\x1bOC": "right",
    "\x1bOD": "left",
    "\x1b[H": "home",
    "\x1b[F": "end",
    "\x1bOH": "home",
    "\x1bOF": "end",
    "\x1b[1~": "home",
    "\x1b[7~": "home",
    "\x1b[4~": "end",
    "\x1b[8~": "end",
    "\x1b[3~": "delete",
    "\x1b[1;5C": "word-right",
    "\x1b[1;5D": "word-left",
    "\x1bf": "word-right",
    "\x1bb": "word-left",
    "\x1b\x7f": "kill-word",
    PASTE_START: "paste-start",
    PASTE_END: "paste-end",
}
_CONTROLS = {
    "\r": "enter",
    "\n": "enter",
    "\x03": "interrupt",
    "\x04": "eof",
    "\x7f": "backspace",
    "\x08": "backspace",
    "\x01": "home",
    "\x05": "end",
    "\x02": "left",
    "\x06": "right",
    "\x0b": "kill-end",
    "\x15": "kill-start",
    "\x17": "kill-word",
    "\x0c": "clear",
    "\x10": "up",
    "\x0e": "down",
    "\x1a": "suspend",
}


def char_width(ch: str) -> int:
    if ch == "\n":
        return 1  # shown as ↵
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def visible_width(text: str) -> int:
    return sum(char_width(c) for c in _ANSI.sub("", text))


class History:
    """Entries oldest first; persisted one JSON string per line."""

    def __init__(self, path: Path | None, limit: int = HISTORY_LIMIT) -> None:
        self.path = path
        self.limit = limit
        self.entries: list[str] = []
        if path is not None:
            self._load(path)

    def _load(self, path: Path) -> None:
        try:
            lines = path.read_text("utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return
        for line in lines[-self.limit :]:
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, str):
                self.entries.append(value)

    def add(self, line: str) -> None:
        if not line.strip() or (self.entries and self.entries[-1] == line):
            return
        self.entries.append(line)
        del self.entries[: -self.limit]
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(line) + "\n")
            if len(self.entries) == self.limit:
                self._compact()
        except OSError:
            pass  # history is a convenience; never fail a turn over it

    def _compact(self) -> None:
        assert self.path is not None
        from agy_host.fsutil import write_atomic

        write_atomic(self.path, "".join(json.dumps(e) + "\n" for e in self.entries).encode("utf-8"))


class Buffer:
    """The line being edited: text, cursor, and history navigation."""

    def __init__(self, history: History) -> None:
        self.text = ""
        self.pos = 0
        self._history = history
        self._index = len(history.entries)
        self._draft = ""

    def insert(self, s: str) -> None:
        self.text = self.text[: self.pos] + s + self.text[self.pos :]
        self.pos += len(s)

    def key(self, name: str) -> None:
        t, p = self.text, self.pos
        if name == "backspace" and p > 0:
            self.text, self.pos = t[: p - 1] + t[p:], p - 1
        elif name == "delete" and p < len(t):
            self.text = t[:p] + t[p + 1 :]
        elif name == "left":
            self.pos = max(0, p - 1)
        elif name == "right":
            self.pos = min(len(t), p + 1)
        elif name == "home":
            self.pos = 0
        elif name == "end":
            self.pos = len(t)
        elif name == "kill-end":
            self.text = t[:p]
        elif name == "kill-start":
            self.text, self.pos = t[p:], 0
        elif name == "kill-word":
            start = self._word_left()
            self.text, self.pos = t[:start] + t[p:], start
        elif name == "word-left":
            self.pos = self._word_left()
        elif name == "word-right":
            i = p
            while i < len(t) and not t[i].isalnum():
                i += 1
            while i < len(t) and t[i].isalnum():
                i += 1
            self.pos = i
        elif name in ("up", "down"):
            self._navigate(-1 if name == "up" else 1)

    def complete(self, names: Iterable[str]) -> list[str]:
        """Tab on a ``/name`` being typed (the cursor in its first word): the
        one name that fits is completed (with a space), several are completed
        as far as they agree; the names that fit are returned when that adds
        nothing, for the editor to list. Anything else: four spaces."""
        word = self.text[: self.pos]
        if not word.startswith("/") or any(c.isspace() for c in word):
            self.insert("    ")
            return []
        fits = sorted({n for n in names if n.startswith(word)})
        if not fits:
            return []
        rest = self.text[self.pos :]
        first, last = fits[0], fits[-1]  # sorted: what these two share, all share
        if len(fits) == 1:
            done = first if rest.startswith(" ") else first + " "
        else:
            done = first[: next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), len(first))]
        self.text, self.pos = done + rest, len(done)
        return fits if len(fits) > 1 and done == word else []

    def _word_left(self) -> int:
        i = self.pos
        while i > 0 and not self.text[i - 1].isalnum():
            i -= 1
        while i > 0 and self.text[i - 1].isalnum():
            i -= 1
        return i

    def _navigate(self, step: int) -> None:
        entries = self._history.entries
        target = self._index + step
        if target < 0 or target > len(entries):
            return
        if self._index == len(entries):
            self._draft = self.text
        self._index = target
        self.text = self._draft if target == len(entries) else entries[target]
        self.pos = len(self.text)


class LineEditor:
    """Reads one line at a time from a terminal, without blocking trio."""

    def __init__(self, *, fd: int = 0, out: IO[str] | None = None, history: History | None = None) -> None:
        self.fd = fd
        self.out = out or sys.stdout
        self.history = history or History(None)
        #: What Tab completes after ``/`` (the chat sets it; asked at each Tab).
        self.completions: Callable[[], Iterable[str]] | None = None
        self._saved = termios.tcgetattr(fd)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    # -- terminal modes ---------------------------------------------------------------

    def _set(self, attrs: list[Any]) -> None:
        with contextlib.suppress(termios.error):
            termios.tcsetattr(self.fd, termios.TCSADRAIN, attrs)

    def _editing_attrs(self) -> list[Any]:
        attrs: list[Any] = list(self._saved)
        iflag, lflag, cc = attrs[0], attrs[3], list(attrs[6])
        assert isinstance(iflag, int) and isinstance(lflag, int)
        attrs[0] = iflag & ~(termios.IXON | termios.ICRNL | termios.INLCR)
        attrs[3] = lflag & ~(termios.ICANON | termios.ECHO | termios.ISIG | termios.IEXTEN)
        cc[termios.VMIN] = 1
        cc[termios.VTIME] = 0
        attrs[6] = cc
        return attrs

    def restore(self) -> None:
        """The terminal as it was before the chat."""
        self._set(list(self._saved))

    @contextlib.contextmanager
    def turn_mode(self) -> Iterator[None]:
        """While a turn runs, the terminal as the user had it, with signals on:
        Ctrl-C is SIGINT (it aborts the turn), and a permission prompt of the
        ``ask`` policy reads an echoed, line-edited answer from ``/dev/tty``."""
        attrs: list[Any] = list(self._saved)
        lflag = attrs[3]
        assert isinstance(lflag, int)
        attrs[3] = lflag | termios.ISIG | termios.ICANON | termios.ECHO
        self._set(attrs)
        try:
            yield
        finally:
            self.restore()

    # -- reading ------------------------------------------------------------------------

    async def _read(self) -> str | None:
        await trio.lowlevel.wait_readable(self.fd)
        try:
            data = os.read(self.fd, 4096)
        except BlockingIOError:
            return ""
        if not data:
            return None
        return self._decoder.decode(data)

    async def _more(self) -> str:
        """What follows an incomplete escape sequence, if it comes quickly."""
        with trio.move_on_after(ESC_TIMEOUT_S):
            return await self._read() or ""
        return ""

    def _write(self, s: str) -> None:
        self.out.write(s)
        self.out.flush()

    def _columns(self) -> int:
        try:
            return os.get_terminal_size(self.out.fileno()).columns
        except (OSError, ValueError, AttributeError):
            return 80

    def _redraw(self, prompt: str, buf: Buffer) -> None:
        shown = buf.text.replace("\n", "↵")
        avail = max(10, self._columns() - visible_width(prompt) - 1)
        cursor = sum(char_width(c) for c in shown[: buf.pos])
        start = 0
        while cursor - sum(char_width(c) for c in shown[:start]) >= avail:
            start += 1
        window, width = "", 0
        for ch in shown[start:]:
            if width + char_width(ch) > avail:
                break
            window += ch
            width += char_width(ch)
        col = visible_width(prompt) + cursor - sum(char_width(c) for c in shown[:start])
        self._write("\r" + prompt + window + "\x1b[K\r" + (f"\x1b[{col}C" if col else ""))

    async def read_line(self, prompt: str) -> str | None:
        """One line; ``None`` at end of input (Ctrl-D on an empty line)."""
        buf = Buffer(self.history)
        self._set(self._editing_attrs())
        self._write("\x1b[?2004h")
        pending = ""
        pasting = False
        try:
            self._redraw(prompt, buf)
            while True:
                chunk = await self._read()
                if chunk is None:
                    self._write("\n")
                    return None
                pending += chunk
                while pending:
                    if pending[0] == "\x1b":
                        if pasting and not PASTE_END.startswith(pending[: len(PASTE_END)]):
                            pending = pending[1:]  # an escape inside a paste: dropped, never inserted
                            continue
                        name, used = _match_escape(pending) if not pasting else ("paste-end", len(PASTE_END))
                        if used == 0 or (pasting and not pending.startswith(PASTE_END)):
                            more = await self._more()
                            if more:
                                pending += more
                                continue
                            name, used = None, len(pending)  # incomplete and nothing follows: dropped
                        pending = pending[used:]
                        if name == "paste-start":
                            pasting = True
                        elif name == "paste-end":
                            pasting = False
                        elif name is not None:
                            buf.key(name)
                        continue
                    ch, pending = pending[0], pending[1:]
                    if pasting:
                        buf.insert("\n" if ch in "\r\n" else ch)
                        continue
                    action = _CONTROLS.get(ch)
                    if action == "enter":
                        buf.pos = len(buf.text)
                        self._redraw(prompt, buf)
                        self._write("\n")
                        if buf.text.strip():
                            self.history.add(buf.text)
                        return buf.text
                    if action == "eof":
                        if not buf.text:
                            self._write("\n")
                            return None
                        buf.key("delete")
                    elif action == "interrupt":
                        hint = "" if buf.text else "\x1b[2m(Ctrl-D or /exit leaves the chat)\x1b[0m"
                        self._write("^C\n" + (hint + "\n" if hint else ""))
                        buf = Buffer(self.history)
                    elif action == "clear":
                        self._write("\x1b[H\x1b[2J")
                    elif action == "suspend":
                        self._suspend()
                    elif action is not None:
                        buf.key(action)
                    elif ch == "\t":
                        fits = buf.complete(self.completions() if self.completions is not None else ())
                        if fits:
                            self._write("\n" + "  ".join(fits) + "\n")
                    elif ch >= " ":
                        buf.insert(ch)
                self._redraw(prompt, buf)
        finally:
            self._write("\x1b[?2004l")
            self.restore()

    def _suspend(self) -> None:
        self._write("\n")
        self.restore()
        os.kill(os.getpid(), signal.SIGTSTP)
        self._set(self._editing_attrs())


def _match_escape(pending: str) -> tuple[str | None, int]:
    """``(key, length)`` of the escape sequence at the start of ``pending``;
    ``(None, 0)`` when it may still be incomplete; ``(None, n)`` to skip an
    unknown complete sequence."""
    for seq, name in _SEQUENCES.items():
        if pending.startswith(seq):
            return name, len(seq)
    if any(seq.startswith(pending) for seq in _SEQUENCES) or pending in ("\x1b", "\x1b[", "\x1bO"):
        return None, 0
    match = re.match(r"\x1b\[[0-9;]*[~A-Za-z]", pending)
    if match:
        return None, match.end()
    if re.fullmatch(r"\x1b\[[0-9;]*", pending):
        return None, 0
    return None, min(2, len(pending))


class PipeReader:
    """``chat`` with stdin not a terminal: one prompt per line, no echo."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream or sys.stdin

    async def read_line(self, prompt: str) -> str | None:
        line = await trio.to_thread.run_sync(self.stream.readline, abandon_on_cancel=True)
        if not line:
            return None
        return str(line).rstrip("\n")

    @contextlib.contextmanager
    def turn_mode(self) -> Iterator[None]:
        yield

    def restore(self) -> None:
        return None


__all__ = ["HISTORY_LIMIT", "Buffer", "History", "LineEditor", "PipeReader", "char_width", "visible_width"]
