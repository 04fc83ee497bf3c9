"""Host session names: generated ones sort by time, given ones are checked.

Names become store keys with an ``@engine`` suffix, so ``@`` (and anything
invisible) is refused rather than silently mangled. The CLI and the Python
API share these rules, so a session made by one is usable by the other.
"""

from __future__ import annotations

import time


def generate_session_name(prefix: str = "run") -> str:
    """``run-20261202-152400-a1b2``: sortable, and unique enough per second."""
    import secrets  # here: the thin client checks names on its hot path

    return f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def generated_stamp(name: str) -> str | None:
    """``20261202-152400`` for a name :func:`generate_session_name` made (an
    unnamed run's), ``None`` for a name someone gave. A given name of the
    same shape counts as generated: ``sessions list`` shows only the latest
    few of those, and ``sessions prune`` removes old ones."""
    import re  # here: the thin client checks names on its hot path

    found = re.fullmatch(r"[a-z]+-(\d{8}-\d{6})-[0-9a-f]{4}", name)
    return found.group(1) if found else None


def session_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a session name, or ``None``."""
    if not name or len(name) > 200:
        return "a session name must be 1 to 200 characters"
    bad = sorted({c for c in name if not (c.isalnum() or c in "._-:")})
    if bad:
        return f"session name {name!r} contains {''.join(bad)!r}; use letters, digits, '.', '_', '-', ':'"
    return None


__all__ = ["generate_session_name", "generated_stamp", "session_name_problem"]
