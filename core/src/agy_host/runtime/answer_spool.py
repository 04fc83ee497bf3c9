"""The turn's answer as it streams: in memory, or past a mebibyte in a file.

The turn layer keeps every text delta of a turn: the answer it returns and
writes to the transcript. A program asked for it (``TurnResult.response``),
so there it stays in memory, the deltas joined once at the turn's end. A
command that asked for none (``agy-host run``: the text went to the
terminal as it came) spills it instead: past :data:`SPILL_CHARS` the deltas
go, UTF-8, to an unnamed temporary file (``O_TMPFILE``, mode 0600, gone
when closed or when the process dies), and the turn's end reads them back a
slice at a time for the transcript and ``--format json``'s ``turn_end``.
A 12 MB answer then costs the command one slice of memory instead of two
copies of the answer (the deltas and their join).
"""

from __future__ import annotations

import codecs
import os
import tempfile
from collections.abc import Iterator
from typing import IO

from agy_host.contract.answer import SLICE_CHARS

#: Characters held in memory before a spilling answer goes to its file.
SPILL_CHARS = 1 << 20

#: Bytes read back from the file at a time.
_READ_BYTES = 1 << 20


class AnswerText:
    """Text deltas in order; :meth:`text` joins them, :meth:`slices` reads
    them back in order a slice at a time. ``spill``: past :data:`SPILL_CHARS`
    in memory, move them to a temporary file (in ``spill_dir``, the system's
    temporary directory by default)."""

    __slots__ = ("_chars", "_file", "_held", "_parts", "_spill", "_spill_dir")

    def __init__(self, *, spill: bool = False, spill_dir: str | None = None) -> None:
        self._parts: list[str] = []
        self._held = 0
        self._chars = 0
        self._spill = spill
        self._spill_dir = spill_dir
        self._file: IO[bytes] | None = None

    def append(self, delta: str) -> None:
        self._parts.append(delta)
        self._held += len(delta)
        self._chars += len(delta)
        if self._spill and self._held >= SPILL_CHARS:
            self._flush()

    def __len__(self) -> int:
        return self._chars

    def __bool__(self) -> bool:
        return self._chars > 0

    @property
    def spilled(self) -> bool:
        """Some of the text is in the file, not in memory."""
        return self._file is not None

    def _flush(self) -> None:
        if self._file is None:
            self._file = tempfile.TemporaryFile(dir=self._spill_dir)  # noqa: SIM115 - closed by close()
        write = self._file.write
        for part in self._parts:
            write(part.encode("utf-8", "surrogatepass"))
        self._parts.clear()
        self._held = 0

    def text(self) -> str:
        """The whole text as one string (read back from the file, if spilled)."""
        if self._file is None:
            joined = "".join(self._parts)
            self._parts[:] = [joined] if joined else []
            return joined
        return "".join(self.slices())

    def slices(self) -> Iterator[str]:
        """The whole text in order, at most :data:`SLICE_CHARS` characters a
        slice; the file is read a mebibyte at a time (a character split
        between two reads is decoded whole)."""
        if self._file is not None:
            self._file.flush()
            fd = self._file.fileno()
            decoder = codecs.getincrementaldecoder("utf-8")("surrogatepass")
            offset = 0
            while True:
                data = os.pread(fd, _READ_BYTES, offset)
                offset += len(data)
                text = decoder.decode(data, final=not data)
                if text:
                    yield text
                if not data:
                    break
        for part in self._parts:
            for start in range(0, len(part), SLICE_CHARS):
                yield part[start : start + SLICE_CHARS]

    def __iter__(self) -> Iterator[str]:
        return self.slices()

    def close(self) -> None:
        """Forget the text and remove the file."""
        self._parts.clear()
        self._held = self._chars = 0
        if self._file is not None:
            self._file.close()
            self._file = None


__all__ = ["SPILL_CHARS", "AnswerText"]
