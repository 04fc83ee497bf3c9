"""Isolation for tests that start ``agy-host`` as a subprocess: the child's
environment, and throw-away plugins installed the way users install them.

No pytest here (and nothing heavy): fixtures, the parity and reliability
suites and plugin authors' own tests all build on these functions.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping
from pathlib import Path


def isolated_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment for an ``agy-host`` *subprocess* living in ``home``:
    this process's variables minus every ``AGY_*``, ``XDG_*`` and pytest
    one, with HOME and the XDG base dirs inside ``home``, warm agents off
    (``AGY_HOST_KEEP_ALIVE_MINUTES=0``), plus ``extra``.
    (The ``agy_host_home`` fixture does the same to this process.)"""
    out = {k: v for k, v in os.environ.items() if not k.startswith(("AGY_", "PYTEST", "XDG_"))}
    out.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_CACHE_HOME=str(home / ".cache"),
        # Cold unless a test asks for warm agents: a named session would
        # otherwise leave a keeper behind for minutes after each test.
        AGY_HOST_KEEP_ALIVE_MINUTES="0",
    )
    out.update(extra)
    return out


def install_plugin(
    site: Path,
    module: str,
    source: str,
    *,
    entry_points: Mapping[str, Mapping[str, str]] | None = None,
) -> Path:
    """Install a one-module plugin into ``site`` as a real distribution (a
    ``.dist-info`` with ``entry_points.txt``), so a child with ``site`` on its
    ``PYTHONPATH`` discovers it through entry points, exactly as it finds a
    pip-installed plugin; nothing is patched into the process under test.

    ``entry_points`` defaults to ``{"agy_host": {module: module}}`` (a hook
    plugin); pass more groups for an engine (``agy_host.engines``). Installing
    the same module twice is a no-op. Returns ``site``."""
    info = site / f"{module}-1.0.dist-info"
    if info.exists():
        return site
    info.mkdir(parents=True)
    name = module.replace("_", "-")
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    groups = entry_points if entry_points is not None else {"agy_host": {module: module}}
    text = "\n".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) for group, eps in groups.items())
    (info / "entry_points.txt").write_text(text)
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    return site


def hide_distribution(site: Path, name: str) -> Path:
    """Make an installed distribution look uninstalled to a child with
    ``site`` first on its ``PYTHONPATH``: an empty one of the same name
    there (a ``.dist-info`` without entry points) shadows it, as the first
    of a name on ``sys.path`` always does, so none of its plugins or engines
    are found. Its modules stay importable; nothing registers them. How a
    test runs agy-host as installed without, say, the bridge
    (``agy-host-bridge-mcp``). Returns ``site``."""
    folder = name.replace("-", "_")
    info = site / f"{folder}-0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0\n")
    (info / "entry_points.txt").write_text("")
    return site


__all__ = ["hide_distribution", "install_plugin", "isolated_env"]
