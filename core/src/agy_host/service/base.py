"""Long-lived services run in the host's nursery (the bridge server, ...)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import trio


@runtime_checkable
class Service(Protocol):
    """A long-running task a plugin adds to the host (the MCP bridge): run in the host's nursery for the command's
    life."""

    name: str

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; call ``task_status.started()`` when ready."""
        ...


__all__ = ["Service"]
