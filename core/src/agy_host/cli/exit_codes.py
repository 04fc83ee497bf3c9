"""The CLI's name for the exit codes, which live in core (``agy_host.exit_codes``)
because the turn layer decides them too."""

from __future__ import annotations

from agy_host.exit_codes import *  # noqa: F403
from agy_host.exit_codes import __all__ as __all__  # noqa: PLC0414
