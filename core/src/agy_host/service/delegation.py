"""What the host hands the services of a command that runs turns, and the
guards a one-shot delegated agent runs under.

Split from :mod:`agy_host.service.roundtrips` (the round-trip state machine) and
re-exported there: these are the seams between the command, its services
(the bridge) and engines that delegate to a second agent.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agy_host.config import Config
    from agy_host.contract.tools import HostTool
    from agy_host.service.roundtrips import RoundTrips


# ---------------------------------------------------------------------------
# what the host hands services that take part in round-trips (the bridge)
# ---------------------------------------------------------------------------


class ServiceContext:
    """Handed by the host to every service that has a ``bind_host(ctx)``
    method, before the service starts: the round-trips of this command, which
    engine runs, where, and the host tool catalog (``tools()`` asks the
    ``agy_host_register_tools`` hook again, so it is always current)."""

    def __init__(
        self,
        *,
        roundtrips: RoundTrips | None,
        engine_name: str,
        cwd: str,
        config: Config,
        env: Mapping[str, str],
        tools: Callable[[], list[HostTool]],
        warn: Callable[[str], None],
    ) -> None:
        self.roundtrips = roundtrips
        self.engine_name = engine_name
        self.cwd = cwd
        self.config = config
        self.env = env
        self.tools = tools
        self.warn = warn


# ---------------------------------------------------------------------------
# delegation guards: a one-shot delegated agent must not see the live bridge
# ---------------------------------------------------------------------------

DelegationGuard = Callable[[], AbstractContextManager[object]]
_GUARDS: list[DelegationGuard] = []


def add_delegation_guard(guard: DelegationGuard) -> Callable[[], None]:
    """Register ``guard`` (a context manager factory) to hold while a one-shot
    delegated agent runs; returns a function that removes it.

    The bridge registers one for the stream-json CLI's global MCP config:
    every ``agy`` on the machine reads that file, and a delegated ``agy -p``
    would call host tools that no host turn can serve."""
    _GUARDS.append(guard)

    def remove() -> None:
        with contextlib.suppress(ValueError):
            _GUARDS.remove(guard)

    return remove


@contextlib.contextmanager
def delegated_agent() -> Iterator[None]:
    """Wrap a one-shot delegated agent run: every registered guard holds until
    the agent process is gone (release on exit, never on a timer)."""
    with contextlib.ExitStack() as stack:
        for guard in list(_GUARDS):
            stack.enter_context(guard())
        yield


__all__ = ["DelegationGuard", "ServiceContext", "add_delegation_guard", "delegated_agent"]
