"""The session store on disk, as a test sees it: raw JSON, read and edited
the way a user's editor would, with none of the store's own checks.

The store keeps one file per session (``<state>/sessions/<name>.json``,
:mod:`agy_host.runtime.store_files`); tests that assert on a binding, or
point one at a conversation the agent lost, go through these two functions
so they do not depend on the layout.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

Bindings = dict[str, dict[str, Any]]


def _files(state_dir: Path) -> list[Path]:
    folder = state_dir / "sessions"
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def read_bindings(state_dir: Path) -> Bindings:
    """Every binding in the store under ``state_dir`` (the ``agy-host`` state
    folder), by key, as raw JSON objects; ``{}`` when there is none."""
    out: Bindings = {}
    for path in _files(state_dir):
        out.update(json.loads(path.read_text("utf-8"))["bindings"])
    return out


def binding_of(state_dir: Path, session: str) -> dict[str, Any] | None:
    """Session ``session``'s binding (whatever the engine's key), if it has one."""
    found = [v for k, v in read_bindings(state_dir).items() if k == session or k.startswith(f"{session}@")]
    return found[0] if found else None


def edit_bindings(state_dir: Path, change: Callable[[Bindings], None]) -> None:
    """Let ``change`` edit every session file's bindings in place (written
    back as they are, unchecked: a hand edit)."""
    for path in _files(state_dir):
        doc = json.loads(path.read_text("utf-8"))
        change(doc["bindings"])
        path.write_text(json.dumps(doc, indent=2) + "\n", "utf-8")


__all__ = ["binding_of", "edit_bindings", "read_bindings"]
