"""Build throw-away installed distributions (a ``*.dist-info`` folder plus
modules) so discovery is tested through real entry points, not mocks."""

from __future__ import annotations

import importlib
import textwrap
from collections.abc import Mapping
from pathlib import Path


def make_dist(
    root: Path,
    name: str,
    *,
    entry_points: Mapping[str, Mapping[str, str]],
    modules: Mapping[str, str] | None = None,
    version: str = "1.0",
) -> Path:
    """Write ``root/<name>-<version>.dist-info`` and the given modules into
    ``root`` (which the caller puts on ``sys.path`` or ``PYTHONPATH``)."""
    root.mkdir(parents=True, exist_ok=True)
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = []
    for group, entries in entry_points.items():
        lines.append(f"[{group}]")
        lines.extend(f"{ep} = {target}" for ep, target in entries.items())
        lines.append("")
    (info / "entry_points.txt").write_text("\n".join(lines))
    for module, source in (modules or {}).items():
        path = root / (module.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    importlib.invalidate_caches()
    return info


ENGINE_MODULE = """
import contextlib
from agy_host.engine.base import Engine


class Engine_(Engine):
    ENGINE_NAME = "{name}"

    def open_driver(self):
        raise NotImplementedError


{name}_engine = Engine_
"""


def engine_module(name: str) -> str:
    return ENGINE_MODULE.format(name=name)
