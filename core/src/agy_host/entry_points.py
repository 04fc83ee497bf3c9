"""Installed entry points, scanned once per process (and ``sys.path``).

A command asks for them several times on its way to a turn: the plugins
(``agy_host``), the engine list and the engine's own lookup
(``agy_host.engines``). Each :func:`importlib.metadata.entry_points` call reads
the metadata of every distribution on ``sys.path`` (about 10 ms here), so the
scan is kept and each group is selected from it. A changed ``sys.path`` (a
test or an embedding process adding a site directory) scans again;
:func:`forget` drops the scan for a process that installs packages while it
runs.
"""

from __future__ import annotations

import sys
from importlib import metadata
from typing import Any

_SCAN: dict[tuple[str, ...], metadata.EntryPoints] = {}


def group(name: str) -> metadata.EntryPoints:
    """The entry points of group ``name`` (first distribution wins a duplicate
    name, as in :func:`importlib.metadata.entry_points`)."""
    key = tuple(sys.path)
    scan = _SCAN.get(key)
    if scan is None:
        _SCAN.clear()
        scan = _SCAN[key] = _scan()
    return scan.select(group=name)


def _scan() -> metadata.EntryPoints:
    found: Any = metadata.entry_points()
    if isinstance(found, metadata.EntryPoints):  # Python 3.12+
        return found
    # 3.11: a dict of group -> EntryPoints (already one per distribution)
    # whose own ``values`` warns as deprecated; the dict's is not.
    return metadata.EntryPoints(ep for eps in dict.values(found) for ep in eps)


def forget() -> None:
    """Scan again on the next :func:`group` call."""
    _SCAN.clear()


__all__ = ["forget", "group"]
