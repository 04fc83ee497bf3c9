"""What every engine needs from an agent child process, written once.

Engines differ in what they say to their agent (JSON-RPC, agy's events) but
not in how a child is kept under control, and the field lessons apply to
all of them:

* **Line framing that is linear.** Pipe reads are not aligned to newlines,
  and a line may be far bigger than a read (64 MiB is allowed). A partial
  line is kept as a list of pieces and joined once, when its newline
  arrives: re-concatenating the partial on every read is quadratic (a
  64 MiB line in 64 KiB reads copied about 32 GiB). A line longer than the
  limit is refused as soon as it is known to be too long, and the rest of
  it is skipped up to its newline, so the next line is read intact.
"""

from __future__ import annotations

#: The longest line accepted from an agent (64 MiB, like other ACP clients).
MAX_LINE_BYTES = 64 * 1024 * 1024


class LineSplitter:
    """Bytes in, complete lines out (split on ``\\n`` only, newline removed).

    :meth:`feed` returns the complete lines of one read (empty lines
    included; callers decide) and how many lines were refused for exceeding
    :attr:`max_line` during that read; a refusal is counted once, when it is
    detected, and the refused line's remaining bytes are discarded up to its
    newline.
    """

    __slots__ = ("_discarding", "_parts", "_size", "max_line")

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self.max_line = max_line
        self._parts: list[bytes] = []
        self._size = 0
        self._discarding = False

    def feed(self, data: bytes | bytearray | memoryview) -> tuple[list[bytes], int]:
        chunk = data if type(data) is bytes else bytes(data)
        refused = 0
        start = 0
        if self._discarding:
            nl = chunk.find(b"\n")
            if nl < 0:
                return [], 0
            start = nl + 1
            self._discarding = False
        nl = chunk.find(b"\n", start)
        if nl < 0:
            return [], self._keep(chunk[start:] if start else chunk)
        head = chunk[start:nl]
        first: bytes | None = head
        if self._parts:
            if self._size + len(head) > self.max_line:
                first = None
                refused += 1
            else:
                self._parts.append(head)
                first = b"".join(self._parts)
            self._parts, self._size = [], 0
        elif len(head) > self.max_line:
            first = None
            refused += 1
        lines = chunk[nl + 1 :].split(b"\n")
        tail = lines.pop()
        if first is not None:
            lines.insert(0, first)
        if len(chunk) > self.max_line:
            kept = [line for line in lines if len(line) <= self.max_line]
            refused += len(lines) - len(kept)
            lines = kept
        refused += self._keep(tail)
        return lines, refused

    def _keep(self, piece: bytes) -> int:
        """Hold a piece of the unterminated line; 1 when that makes it too long."""
        if not piece:
            return 0
        self._size += len(piece)
        if self._size > self.max_line:
            self._parts, self._size = [], 0
            self._discarding = True
            return 1
        self._parts.append(piece)
        return 0

    @property
    def pending(self) -> bytes:
        """The unterminated line so far (``b""`` while a refused line is skipped)."""
        return b"".join(self._parts)

    def flush(self) -> bytes:
        """The unterminated line at EOF (a line the agent did not finish is still a line)."""
        tail = self.pending
        self._parts, self._size, self._discarding = [], 0, False
        return tail


__all__ = ["MAX_LINE_BYTES", "LineSplitter"]
