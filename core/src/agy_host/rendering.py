"""Renderer protocol: how HostEvents reach a terminal, a file or a script.

A renderer is created per command invocation by a factory registered with
``agy_host_register_renderers`` under a format name (``text``, ``json``,
``quiet``, ...). It receives every :data:`~agy_host.events.HostEvent` in order
on the host's trio loop, so ``handle`` must be quick and must not block;
renderers ignore event types they do not know.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Protocol, runtime_checkable

import msgspec

from agy_host.events import HostEvent


class RenderOptions(msgspec.Struct, kw_only=True):
    stream: IO[str]
    color: bool = False
    verbose: bool = False


@runtime_checkable
class Renderer(Protocol):
    def handle(self, event: HostEvent) -> None: ...

    def close(self) -> None: ...


RendererFactory = Callable[[RenderOptions], Renderer]

__all__ = ["RenderOptions", "Renderer", "RendererFactory"]
