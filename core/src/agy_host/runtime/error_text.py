"""An exception as one line a person reads (errors shown at the terminal,
in warnings and in turn results)."""

from __future__ import annotations


def describe_error(exc: BaseException) -> str:
    """A readable one-liner, flattening trio's exception groups."""
    from agy_host.engine.base import EngineError

    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe_error(e) for e in exc.exceptions)
    if isinstance(exc, EngineError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


__all__ = ["describe_error"]
