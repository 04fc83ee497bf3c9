"""Small helpers for trio's structured concurrency.

trio wraps every exception that leaves a nursery in an ``ExceptionGroup``.
Inside the host that is right; at an API boundary (an engine's context
manager, a CLI command) a caller that expects ``SpawnError`` should get
``SpawnError``. :func:`unwrap_single` re-raises the only leaf of a group and
leaves real multi-error groups alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    out: list[BaseException] = []
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            out.extend(_leaves(exc))
        else:
            out.append(exc)
    return out


@contextlib.contextmanager
def unwrap_single() -> Iterator[None]:
    """Re-raise a group holding exactly one exception as that exception."""
    try:
        yield
    except BaseExceptionGroup as group:
        leaves = _leaves(group)
        if len(leaves) == 1:
            raise leaves[0] from None
        raise


__all__ = ["unwrap_single"]
