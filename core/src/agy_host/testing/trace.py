"""Reading a wire trace (``--trace FILE``) in a test, with its promises checked.

Every engine's trace test asks the same of the file, so it is asked here
once: it is private (``0600``), every line is one JSON object with ``time``
(unix seconds, milliseconds), ``engine``, ``dir`` (``in``, ``out``,
``stderr``) and ``frame``, and none of the given secrets appears anywhere
in it. Stdlib only.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DIRECTIONS = ("in", "out", "stderr")


@dataclass(frozen=True)
class TraceLine:
    time: float
    engine: str
    dir: str
    frame: Any


class Trace(list[TraceLine]):
    """The lines of one trace file, in order."""

    def frames(self, direction: str, engine: str | None = None) -> list[Any]:
        """The frames that went one way (of one engine, when given)."""
        return [e.frame for e in self if e.dir == direction and (engine is None or e.engine == engine)]

    def objects(self, direction: str, engine: str | None = None) -> list[dict[str, Any]]:
        """The frames that went one way and were JSON objects."""
        return [f for f in self.frames(direction, engine) if isinstance(f, dict)]


def read_trace(path: Path, *, secrets: Iterable[str] = ()) -> Trace:
    """The trace at ``path``; ``AssertionError`` when a promise is broken."""
    mode = stat.S_IMODE(path.stat().st_mode)
    assert mode == 0o600, f"{path} is mode {mode:o}, not 600"
    text = path.read_text("utf-8")
    for secret in secrets:
        assert secret not in text, f"a secret ({secret[:4]}...) is in the trace {path}"
    out = Trace()
    for number, line in enumerate(text.splitlines(), 1):
        entry = json.loads(line)
        assert isinstance(entry, dict) and set(entry) == {"time", "engine", "dir", "frame"}, (number, line)
        assert isinstance(entry["time"], (int, float)) and round(entry["time"], 3) == entry["time"], (number, line)
        assert entry["dir"] in DIRECTIONS and isinstance(entry["engine"], str), (number, line)
        out.append(TraceLine(**entry))
    return out


__all__ = ["DIRECTIONS", "Trace", "TraceLine", "read_trace"]
