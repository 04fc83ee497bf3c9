"""The cumulative-resend guard shared by every engine.

Agents are meant to stream *deltas*, but some builds resend the whole answer so
far in each chunk. The guard turns either into deltas:

* It starts in append mode: every chunk is a delta.
* Once at least :data:`FLIP_THRESHOLD` characters have accumulated, a chunk
  that is longer than everything so far and starts with it flips the guard to
  cumulative mode, and only the new suffix is emitted. The threshold exists
  because short answers misflip: after ``"a"`` the delta ``"a cat"`` would look
  like a resend.
* In cumulative mode, a chunk that merely repeats a prefix emits nothing; a
  chunk that contradicts the accumulation (neither extends it nor is a prefix
  of it) is evidence of deltas after all, so the guard falls back to append.

The accumulation is kept as a list of parts so a 200,000-chunk stream costs
O(n), not O(n^2) string concatenation; :meth:`CumulativeGuard.feed_many`
takes a batch of chunks (one pipe read) at once and keeps it as one part.
"""

from __future__ import annotations

#: Characters that must accumulate before a resend may flip the guard.
FLIP_THRESHOLD = 32


class CumulativeGuard:
    __slots__ = ("_joined", "_len", "_parts", "cumulative", "flips")

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._len = 0
        self._joined: str | None = ""
        self.cumulative = False
        self.flips = 0

    @property
    def text(self) -> str:
        """Everything emitted so far (the response)."""
        if self._joined is None:
            self._joined = "".join(self._parts)
            self._parts = [self._joined]
        return self._joined

    def _append(self, delta: str) -> None:
        self._parts.append(delta)
        self._len += len(delta)
        self._joined = None

    def feed(self, chunk: str) -> str:
        """The delta to emit for ``chunk`` (``""`` when it adds nothing)."""
        if not chunk:
            return ""
        if not self.cumulative:
            size = self._len
            if size >= FLIP_THRESHOLD and len(chunk) > size and chunk.startswith(self.text):
                self.cumulative = True
                self.flips += 1
                delta = chunk[size:]
                self._append(delta)
                return delta
            # the hot path (a plain delta), inlined
            self._parts.append(chunk)
            self._len = size + len(chunk)
            self._joined = None
            return chunk
        acc = self.text
        if chunk.startswith(acc):
            delta = chunk[len(acc) :]
            if delta:
                self._append(delta)
            return delta
        if acc.startswith(chunk):
            return ""
        self.cumulative = False
        self._append(chunk)
        return chunk

    def feed_many(self, chunks: list[str]) -> str:
        """The joined deltas of ``chunks`` fed in order: the same text as
        ``"".join(self.feed(c) for c in chunks)``.

        The hot path of a flood: in append mode, once the accumulation is at
        least as long as every chunk of the batch, no chunk can flip the guard
        (a flip needs a chunk longer than everything so far), so the batch is
        one delta, kept as one part rather than one per chunk.
        """
        size = self._len
        if not self.cumulative and size >= FLIP_THRESHOLD and chunks and max(map(len, chunks)) <= size:
            delta = "".join(chunks)
            if delta:
                self._parts.append(delta)
                self._len = size + len(delta)
                self._joined = None
            return delta
        feed = self.feed
        return "".join([feed(chunk) for chunk in chunks])


__all__ = ["FLIP_THRESHOLD", "CumulativeGuard"]
