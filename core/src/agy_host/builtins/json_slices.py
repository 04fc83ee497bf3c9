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

from collections.abc import Callable, Iterable

import msgspec

from agy_host.contract.answer import SLICE_CHARS

#: Stands in for the long text while the rest of the document is encoded: it
#: holds NULs, which an agent's answer cannot carry into the field unescaped
#: as this exact run, and only the one field named is replaced.
_HOLE = "\x00agy-host:slice\x00"

Write = Callable[[bytes | bytearray | memoryview], object]


def write_sliced(
    encoder: msgspec.json.Encoder,
    doc: msgspec.Struct,
    field: str,
    write: Write,
    slices: Iterable[str] | None = None,
    **replace: object,
) -> None:
    """Write ``doc``'s JSON encoding (no newline) through ``write``, the
    string field ``field`` a :data:`SLICE_CHARS` slice at a time: slices of
    its own text, or ``slices`` (a spooled answer,
    :func:`agy_host.contract.answer.answer_slices`) in its place. ``replace``
    sets other fields of the document as written.

    ``write`` gets each piece once and must not keep it (the slice buffer is
    reused for the next one)."""
    if slices is None:
        text: str = getattr(doc, field)
        slices = (text[i : i + SLICE_CHARS] for i in range(0, len(text), SLICE_CHARS))
    line = encoder.encode(msgspec.structs.replace(doc, **{field: _HOLE}, **replace))
    hole = encoder.encode(_HOLE)[1:-1]
    at = line.index(hole)
    write(line[:at])
    piece = bytearray()
    for text_slice in slices:
        encoder.encode_into(text_slice, piece)
        with memoryview(piece) as view, view[1:-1] as inner:  # the JSON string without its quotes
            write(inner)
    write(line[at + len(hole) :])


__all__ = ["SLICE_CHARS", "write_sliced"]
