"""How to install a piece of agy-host, said so that it works where the user is.

agy-host's distributions (``agy-host``, ``agy-host-acp``, ``agy-host-harness``
...) are built from one repository: from a clone they install as folders
(``pip install ./plugins/harness_engine``), and a bare distribution name
only works where an index serves it. A message that says how to install one
(an engine that is missing, the bridge, the diff renderer) asks
:func:`install_hint`: when this agy-host runs from a clone (its ``core/src``
next to a ``plugins/`` folder: an editable install, or ``PYTHONPATH``), the
clone's own folders, as absolute paths that work from any directory;
otherwise the folder to use in a clone first (no public index serves these
distributions yet), then the distribution name.

``tests/test_install_hints.py`` finds every install hint in the code and the
docs and checks that each names folders this repository has (or both forms).
"""

from __future__ import annotations

import shlex
from pathlib import Path

#: Each distribution built from this repository, and its folder in a clone.
FOLDERS = {
    "agy-host": "core",
    "agy-host-acp": "plugins/acp_engine",
    "agy-host-stream-json": "plugins/stream_json_engine",
    "agy-host-harness": "plugins/harness_engine",
    "agy-host-bridge-mcp": "plugins/bridge_mcp",
    "agy-host-diff-render": "plugins/diff_render",
    "agy-host-usage-ledger": "plugins/usage_ledger",
}
#: The engines this repository ships, and the distribution of each.
ENGINE_DISTS = {"acp": "agy-host-acp", "stream-json": "agy-host-stream-json", "harness": "agy-host-harness"}


def checkout(module_file: str = __file__) -> Path | None:
    """The clone this agy-host runs from, or ``None`` (an installed wheel):
    ``<clone>/core/src/agy_host/engine/install_hint.py`` with ``<clone>/plugins``."""
    root = Path(module_file).resolve().parents[4]
    return root if (root / "plugins").is_dir() and (root / "core" / "pyproject.toml").is_file() else None


def engine_hint(name: str | None = None) -> str:
    """How to install engine ``name`` (one of :data:`ENGINE_DISTS`), or any
    engine: ``"Install it: ..."``, ``"Install one, e.g. ..."``; ``""`` for an
    engine this repository does not ship."""
    if name is None:
        return f"Install one, e.g. {install_hint('agy-host-acp')} or {install_hint('agy-host-stream-json')}."
    return f"Install it: {install_hint(ENGINE_DISTS[name])}." if name in ENGINE_DISTS else ""


def install_hint(*dists: str, root: Path | None = None, here: bool = True) -> str:
    """```pip install ...``` for ``dists`` (names of :data:`FOLDERS`): the
    clone's folders when agy-host runs from one (``root``, else
    :func:`checkout` unless ``here`` is false), else the names with the
    folders a clone has."""
    clone = root or (checkout() if here else None)
    if clone is not None:
        return f"`pip install {shlex.join(str(clone / FOLDERS[d]) for d in dists)}`"
    folders = " ".join(f"./{FOLDERS[d]}" for d in dists)
    # The folder form first: no public index serves these distributions yet.
    names = " ".join(dists)
    return f"`pip install {folders}` from a clone of agy-host (or `pip install {names}` from an index that has it)"


__all__ = ["ENGINE_DISTS", "FOLDERS", "checkout", "engine_hint", "install_hint"]
