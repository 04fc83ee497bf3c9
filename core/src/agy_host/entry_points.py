"""Installed entry points, scanned once per process (and ``sys.path``),
without :mod:`importlib.metadata`.

A command asks for them several times on its way to a turn: the plugins
(``agy_host``), the engine list and the engine's own lookup
(``agy_host.engines``). :func:`importlib.metadata.entry_points` reads the
same files, but importing it costs more than the scan itself (it brings in
``email``, ``zipfile``, ``csv`` and ``inspect``: about 20 ms of every
command, ``--help`` included; docs/performance.md, "Cold path"). So the
scan is done here the way :mod:`importlib.metadata` does it for plain
directories: each ``sys.path`` entry is listed, its ``*.dist-info`` and
``*.egg-info`` folders are taken in that order, a distribution name seen
earlier on ``sys.path`` shadows a later one, and ``entry_points.txt`` is
parsed by the same rules. Where it could differ (a zip or ``.egg`` on
``sys.path``, an import hook that finds distributions of its own) the scan
is left to :mod:`importlib.metadata`. ``core/tests/test_entry_points.py``
compares both on the test environment and on throw-away distributions.

A changed ``sys.path`` (a test or an embedding process adding a site
directory) scans again; :func:`forget` drops the scan for a process that
installs packages while it runs.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any

#: ``module:attr [extras]``, as :class:`importlib.metadata.EntryPoint` reads it.
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")
_INFO = (".dist-info", ".egg-info")


class Distribution:
    """The installed distribution an entry point comes from; its metadata
    (``Name``, ``Version``, ``Summary``) is read when first asked for."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._headers: dict[str, str] | None = None

    @property
    def metadata(self) -> dict[str, str]:
        """The metadata file's headers (the first value of each; no body)."""
        if self._headers is None:
            name = "PKG-INFO" if self.path.lower().endswith(".egg-info") else "METADATA"
            self._headers = _headers(os.path.join(self.path, name))
        return self._headers

    @property
    def name(self) -> str:
        return self.metadata.get("Name", "")

    @property
    def version(self) -> str:
        return self.metadata.get("Version", "")


class EntryPoint:
    """One entry point: what :class:`importlib.metadata.EntryPoint` offers
    that agy-host uses (``name``, ``value``, ``group``, ``dist``, ``load``)."""

    def __init__(self, name: str, value: str, group: str, dist: Any) -> None:
        self.name = name
        self.value = value
        self.group = group
        #: A :class:`Distribution` (or importlib's, when it did the scan).
        self.dist = dist

    def load(self) -> Any:
        """Import the module and return the object the entry point names."""
        import importlib

        match = _VALUE.match(self.value)
        if match is None:
            raise ValueError(f"entry point {self.name!r} has a malformed value {self.value!r}")
        found: Any = importlib.import_module(match.group("module"))
        for attr in filter(None, (match.group("attr") or "").split(".")):
            found = getattr(found, attr)
        return found

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"


_SCAN: dict[tuple[str, ...], list[EntryPoint]] = {}


def group(name: str) -> list[EntryPoint]:
    """The entry points of group ``name``, in :func:`importlib.metadata.entry_points`'
    order (a distribution earlier on ``sys.path`` shadows one of the same name)."""
    key = tuple(sys.path)
    scan = _SCAN.get(key)
    if scan is None:
        _SCAN.clear()
        scan = _SCAN[key] = _scan(key)
    return [ep for ep in scan if ep.group == name]


def forget() -> None:
    """Scan again on the next :func:`group` call."""
    _SCAN.clear()


def _scan(path: tuple[str, ...]) -> list[EntryPoint]:
    dists = _distributions(path)
    if dists is None:
        return _scan_with_importlib()
    out: list[EntryPoint] = []
    for info in dists:
        dist = Distribution(info)
        for group_name, name, value in _parse(_read(os.path.join(info, "entry_points.txt"))):
            out.append(EntryPoint(name, value, group_name, dist))
    return out


def _distributions(path: Iterable[str]) -> list[str] | None:
    """The metadata folders of every distribution on ``path``, first of each
    name only; ``None`` when something there needs :mod:`importlib.metadata`."""
    if any(getattr(f, "find_distributions", None) is not None for f in sys.meta_path if not _is_path_finder(f)):
        return None
    seen: set[str] = set()
    out: list[str] = []
    for entry in path:
        root = entry or "."
        if root.lower().endswith(".egg"):
            return None
        try:
            children = os.listdir(root)
        except NotADirectoryError:
            return None  # a zip on sys.path
        except OSError:
            continue  # missing or unreadable: importlib.metadata skips it too
        by_name: dict[str, list[str]] = {}
        for child in children:
            low = child.lower()
            if low.endswith(_INFO):
                by_name.setdefault(_normalize(low.rpartition(".")[0].partition("-")[0]), []).append(child)
        for name, infos in by_name.items():
            if name not in seen:
                seen.add(name)
                out.append(os.path.join(entry, infos[0]))
    return out


def _is_path_finder(finder: object) -> bool:
    from importlib.machinery import PathFinder

    return finder is PathFinder


def _normalize(name: str) -> str:
    """PEP 503 normalization with underscores (importlib.metadata's ``Prepared.normalize``)."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):  # no such file, a folder, unreadable: no entry points
        return ""


def _parse(text: str) -> Iterator[tuple[str, str, str]]:
    """``(group, name, value)`` of an ``entry_points.txt`` (importlib.metadata's ``Sectioned`` rules)."""
    section: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        if section is None:
            continue
        name, eq, value = line.partition("=")
        if eq:
            yield section, name.strip(), value.strip()


def _headers(path: str) -> dict[str, str]:
    """The header block of a metadata file (``Key: value`` lines, folded
    continuation lines joined), the first value of each key; the body (the
    long description) is not read."""
    out: dict[str, str] = {}
    current: str | None = None
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    break
                if line[0] in " \t":
                    if current is not None:
                        out[current] += " " + line.strip()
                    continue
                key, colon, value = line.partition(":")
                key = key.strip()
                current = None
                if colon and key not in out:
                    out[key] = value.strip()
                    current = key
    except (OSError, UnicodeDecodeError):
        pass
    return out


def _scan_with_importlib() -> list[EntryPoint]:
    from importlib import metadata

    found: Any = metadata.entry_points()
    eps = found if isinstance(found, metadata.EntryPoints) else (ep for eps in dict.values(found) for ep in eps)
    return [EntryPoint(ep.name, ep.value, ep.group, ep.dist) for ep in eps]


__all__ = ["Distribution", "EntryPoint", "forget", "group"]
