"""A JSON document with one long string field, encoded a slice at a time.

A flood's answer is 12 MB of text. The turn holds it once; encoding the
``turn_end`` line or the transcript's ``assistant`` line in one go would make
a second 12 MB copy (a third while the encoder's buffer grows), at the
turn's end, when the process is at its peak. Writers of such lines encode
the document with the long field left out, then that field's text a slice
at a time into one reused buffer, and write the pieces in order: the bytes
are the same as a whole encoding's, the extra memory one slice.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

#: Texts up to this many characters are encoded whole (one buffer, one write).
SLICE_CHARS = 1 << 20

#: Stands in for the long text while the rest of the document is encoded: it
#: holds NULs, which an agent's answer cannot carry into the field unescaped
#: as this exact run, and only the one field named is replaced.
_HOLE = "\x00agy-host:slice\x00"

Write = Callable[[bytes | bytearray | memoryview], object]


def write_sliced(encoder: msgspec.json.Encoder, doc: msgspec.Struct, field: str, write: Write) -> None:
    """Write ``doc``'s JSON encoding (no newline) through ``write``, the
    string field ``field`` a :data:`SLICE_CHARS` slice at a time.

    ``write`` gets each piece once and must not keep it (the slice buffer is
    reused for the next one)."""
    text: str = getattr(doc, field)
    line = encoder.encode(msgspec.structs.replace(doc, **{field: _HOLE}))
    hole = encoder.encode(_HOLE)[1:-1]
    at = line.index(hole)
    write(line[:at])
    piece = bytearray()
    for start in range(0, len(text), SLICE_CHARS):
        encoder.encode_into(text[start : start + SLICE_CHARS], piece)
        with memoryview(piece) as view, view[1:-1] as inner:  # the JSON string without its quotes
            write(inner)
    write(line[at + len(hole) :])


__all__ = ["SLICE_CHARS", "write_sliced"]
