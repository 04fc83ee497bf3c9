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

An engine whose turn layer keeps the streamed text anyway (the ACP engine:
the host joins the deltas it was given) builds the guard with
``keep_text=False``: past :data:`FLIP_WINDOW` characters of deltas the
accumulation is dropped and the guard no longer flips, so a long answer is
not held a second time by the engine. A resending agent shows itself in its
first chunks (each resend is longer than everything before it), long before
that; :attr:`CumulativeGuard.complete` says whether :attr:`text` is whole.
In cumulative mode the accumulation is the agent's last chunk itself.
"""

from __future__ import annotations

#: Characters that must accumulate before a resend may flip the guard.
FLIP_THRESHOLD = 32

#: With ``keep_text=False``: characters of deltas after which the guard stops
#: keeping them (and stops looking for resends).
FLIP_WINDOW = 64 * 1024


class CumulativeGuard:
    __slots__ = ("_dropped", "_joined", "_keep", "_len", "_parts", "cumulative", "flips")

    def __init__(self, *, keep_text: bool = True) -> None:
        self._parts: list[str] = []
        self._len = 0
        self._joined: str | None = ""
        self._keep = keep_text
        self._dropped = False
        self.cumulative = False
        self.flips = 0

    @property
    def complete(self) -> bool:
        """:attr:`text` is everything emitted (not dropped past :data:`FLIP_WINDOW`)."""
        return not self._dropped

    @property
    def text(self) -> str:
        """Everything emitted so far (the response); ``""`` once dropped
        (see :attr:`complete`)."""
        if self._joined is None:
            self._joined = "".join(self._parts)
            self._parts = [self._joined]
        return self._joined

    def _append(self, delta: str) -> None:
        self._len += len(delta)
        if self._dropped:
            return
        self._parts.append(delta)
        self._joined = None
        if not self._keep and not self.cumulative and self._len >= FLIP_WINDOW:
            self._drop()

    def _drop(self) -> None:
        self._dropped = True
        self._parts = []
        self._joined = ""

    def feed(self, chunk: str) -> str:
        """The delta to emit for ``chunk`` (``""`` when it adds nothing)."""
        if not chunk:
            return ""
        if not self.cumulative:
            size = self._len
            if not self._dropped and size >= FLIP_THRESHOLD and len(chunk) > size and chunk.startswith(self.text):
                self.cumulative = True
                self.flips += 1
                delta = chunk[size:]
                self._take_whole(chunk)
                return delta
            self._append(chunk)  # a plain delta
            return chunk
        acc = self.text
        if chunk.startswith(acc):
            delta = chunk[len(acc) :]
            if delta:
                self._take_whole(chunk)
            return delta
        if acc.startswith(chunk):
            return ""
        self.cumulative = False
        self._append(chunk)
        return chunk

    def _take_whole(self, chunk: str) -> None:
        """A resend: the agent's chunk is the whole text so far (kept as it
        is, not joined from the previous text and the delta)."""
        self._parts = [chunk]
        self._joined = chunk
        self._len = len(chunk)

    def feed_many(self, chunks: list[str], joined: str | None = None) -> str:
        """The joined deltas of ``chunks`` fed in order: the same text as
        ``"".join(self.feed(c) for c in chunks)``. ``joined``: the caller's
        own ``"".join(chunks)``, if it has it (not joined a second time).

        The hot path of a flood: in append mode, once the accumulation is at
        least as long as every chunk of the batch (or no longer kept), no
        chunk can flip the guard (a flip needs a chunk longer than everything
        so far), so the batch is one delta, kept as one part rather than one
        per chunk.
        """
        size = self._len
        if (
            not self.cumulative
            and chunks
            and (self._dropped or (size >= FLIP_THRESHOLD and max(map(len, chunks)) <= size))
        ):
            delta = "".join(chunks) if joined is None else joined
            if delta:
                self._append(delta)
            return delta
        feed = self.feed
        return "".join([feed(chunk) for chunk in chunks])


__all__ = ["FLIP_THRESHOLD", "FLIP_WINDOW", "CumulativeGuard"]
