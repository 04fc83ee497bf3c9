"""An engine's driver held open in a task of its own.

trio's scopes close in the order they opened, so a driver opened by the
caller's task could not be swapped for another engine's (``/engine`` in
``chat`` starts the new one first, then ends the old one). A
:class:`HeldDriver` opens the driver in a task started in the runtime's
nursery and keeps it open until :meth:`HeldDriver.close`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from agy_host.engine.base import Engine
    from agy_host.engine.driver import TurnDriver
    from agy_host.runtime.host import Host


class HeldDriver:
    """A driver held open in a task of its own (see the module docstring)."""

    def __init__(self, host: Host, engine: Engine) -> None:
        self.host = host
        self.engine = engine
        self.driver: TurnDriver | None = None
        self._release = trio.Event()
        self._released = trio.Event()

    async def hold(self, *, task_status: trio.TaskStatus[None]) -> None:
        started = False
        try:
            async with self.engine.open_driver() as driver:
                self.driver = driver
                task_status.started()
                started = True
                await self._release.wait()
        except Exception as exc:
            if not started:
                raise  # to ``open``'s caller, through ``nursery.start``
            from agy_host.runtime.error_text import describe_error

            self.host.warn(f"the {self.engine.ENGINE_NAME} driver failed: {describe_error(exc)}")
        finally:
            self.driver = None
            self._released.set()

    async def close(self) -> None:
        self._release.set()
        with trio.CancelScope(shield=True):
            await self._released.wait()


__all__ = ["HeldDriver"]
