"""An agent's line that is not valid UTF-8: kept, with U+FFFD for the bad bytes.

msgspec checks UTF-8 strictly, so one bad byte inside a string (a Go string
cut in the middle of a character, a tool's latin-1 output) makes the whole
JSON line undecodable. Dropping the line would drop the text around the
byte too: a whole answer delta for one byte. Every engine instead decodes
such a line once more with U+FFFD in place of each bad sequence, keeps what
it says, and warns once (:data:`INVALID_UTF8_NOTICE`). The ACP engine and
the stream-json engine share this; the harness's WebSocket frames are text
frames, which wsproto has already checked.
"""

from __future__ import annotations

#: What the user is told (once) when an agent's text held invalid UTF-8.
INVALID_UTF8_NOTICE = "the agent sent text with invalid UTF-8; the bad bytes are shown as \ufffd"
#: The notice's code and the lifecycle log's event name.
INVALID_UTF8 = "invalid-utf8"


def repair_utf8(data: bytes | bytearray | memoryview) -> bytes | None:
    """``data`` with each invalid UTF-8 sequence replaced by U+FFFD (as
    UTF-8), or ``None`` when it was valid UTF-8 and there is nothing to repair.

    Only worth calling after a decode failed: valid data costs one more
    UTF-8 check, which the hot path never pays."""
    raw = bytes(data)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace").encode("utf-8")
    return None


__all__ = ["INVALID_UTF8", "INVALID_UTF8_NOTICE", "repair_utf8"]
