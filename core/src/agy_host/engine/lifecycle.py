"""A bounded ring of lifecycle entries that doctor shows.

Drivers record what happened to their agent process and sessions (spawn,
session-new, cancel-unsupported, stall, ...) so a user reporting a problem can
paste the last few entries. The ring is small and never grows.
"""

from __future__ import annotations

import collections
import time
from typing import Any

import msgspec

#: The original kept the last 24 entries; doctor shows the newest five.
DEFAULT_RING = 24


class LifecycleEntry(msgspec.Struct, omit_defaults=True):
    ts: float
    event: str
    data: dict[str, Any] = msgspec.field(default_factory=dict)

    def format(self) -> str:
        """``HH:MM:SS event {"k": v}``, as doctor prints it."""
        clock = time.strftime("%H:%M:%S", time.localtime(self.ts))
        if not self.data:
            return f"{clock} {self.event}"
        return f"{clock} {self.event} {msgspec.json.encode(self.data).decode()}"


class Lifecycle:
    """Append-only ring of :class:`LifecycleEntry`."""

    def __init__(self, maxlen: int = DEFAULT_RING) -> None:
        self._ring: collections.deque[LifecycleEntry] = collections.deque(maxlen=maxlen)

    def add(self, event: str, **data: Any) -> None:
        self._ring.append(LifecycleEntry(ts=time.time(), event=event, data=data))

    def entries(self) -> list[LifecycleEntry]:
        return list(self._ring)

    def last(self, n: int = 5) -> list[LifecycleEntry]:
        return list(self._ring)[-n:]

    def __len__(self) -> int:
        return len(self._ring)


__all__ = ["DEFAULT_RING", "Lifecycle", "LifecycleEntry"]
