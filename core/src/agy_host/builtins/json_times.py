"""Times in JSON output, to the millisecond.

A duration measured with ``time.monotonic()`` prints as 17 digits
(``0.12241966900000989``); no reader wants the last 14 and a diff of two runs
shows nothing else. Every ``--format json`` document and event line writes
its times (``duration_s``, ``idle_s``, ``handshake_s``: fields that end in
``_s``) rounded to milliseconds. Costs and token counts are left exactly as
the agent reported them.
"""

from __future__ import annotations

from typing import Any, overload

#: Decimal places kept: milliseconds.
PLACES = 3


@overload
def ms(seconds: float) -> float: ...
@overload
def ms(seconds: None) -> None: ...
def ms(seconds: float | None) -> float | None:
    """``seconds`` rounded to the millisecond (``None`` stays ``None``)."""
    return None if seconds is None else round(seconds, PLACES)


def rounded_times(value: Any) -> Any:
    """``value`` (plain JSON data: dicts, lists, scalars) with every float
    under a key ending in ``_s`` rounded to the millisecond."""
    if isinstance(value, dict):
        return {
            key: ms(item)
            if isinstance(key, str) and key.endswith("_s") and isinstance(item, float)
            else rounded_times(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [rounded_times(item) for item in value]
    return value


__all__ = ["PLACES", "ms", "rounded_times"]
