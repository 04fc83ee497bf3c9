"""How long a session's agent stays warm after a turn: one rule for every door.

The thin client, the full CLI and the Python API each decide whether a turn
goes to the keeper; if they read the setting differently, the same session
would be warm from one door and cold from another. This module is import-free
so the thin client can use it without paying for trio or the config stack.
"""

from __future__ import annotations


def keep_alive_s(asked_minutes: float | None, default_minutes: float, *, named: bool) -> float:
    """Seconds the agent stays warm; 0 runs the turn cold, in the caller.

    ``asked_minutes`` (``--keep-alive``, ``keep_alive=``) wins; otherwise a
    named session gets ``default_minutes`` (``turn.keep_alive_minutes``) and an
    unnamed one keeps nothing, since nobody could come back to it by name."""
    minutes = asked_minutes if asked_minutes is not None else (default_minutes if named else 0.0)
    return max(0.0, float(minutes)) * 60.0


__all__ = ["keep_alive_s"]
