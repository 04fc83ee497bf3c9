"""Writing the config file: one key set or removed, atomically, the rest of
the file kept (``agy-host config set|unset``, ``agy-host engine NAME``).
Reading and checking it is :mod:`agy_host.config`."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agy_host.config import ConfigError, coerce_value, config_path, set_dotted


def set_value(dotted: str, text: str, path: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """Write one key to the config file atomically, keeping everything else.

    A file that does not parse is refused (never clobbered)."""
    import tomli_w

    from agy_host import fsutil

    target = path or config_path(env)
    if target.is_symlink():
        # dotfiles kept elsewhere (stow, a repository): change the file the
        # link points to and keep the link, never replace it with a copy
        target = target.resolve()
    value = coerce_value(dotted, text)
    with fsutil.locked(target):
        raw: dict[str, Any] = {}
        if target.exists():
            try:
                raw = tomllib.loads(target.read_text("utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
                raise ConfigError(f"{target} is not valid TOML ({exc}); fix or remove it first") from exc
        set_dotted(raw, dotted, value)
        fsutil.write_atomic(target, tomli_w.dumps(raw).encode("utf-8"))
    return target


def unset_value(dotted: str, path: Path | None = None, env: Mapping[str, str] | None = None) -> tuple[Path, bool]:
    """Remove one key from the config file atomically, keeping everything
    else (tables left empty go too), so the key takes its default again;
    whether the file had it. A file that does not parse is refused."""
    import tomli_w

    from agy_host import fsutil

    target = path or config_path(env)
    if target.is_symlink():
        target = target.resolve()  # as set_value: the link's target changes, the link stays
    with fsutil.locked(target):
        if not target.exists():
            return target, False
        try:
            raw: dict[str, Any] = tomllib.loads(target.read_text("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise ConfigError(f"{target} is not valid TOML ({exc}); fix or remove it first") from exc
        if not _unset_dotted(raw, dotted.split(".")):
            return target, False
        fsutil.write_atomic(target, tomli_w.dumps(raw).encode("utf-8"))
    return target, True


def _unset_dotted(node: dict[str, Any], parts: list[str]) -> bool:
    head, rest = parts[0], parts[1:]
    if not rest:
        return node.pop(head, _MISSING) is not _MISSING
    child = node.get(head)
    if not isinstance(child, dict) or not _unset_dotted(child, rest):
        return False
    if not child:
        del node[head]
    return True


_MISSING = object()


__all__ = ["set_value", "unset_value"]
