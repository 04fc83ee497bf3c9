"""What every command shares, in a module of its own so that command modules
and the application that registers them do not import each other."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agy_host.plugins import Plugins
    from agy_host.runtime.host import Host


class CliState:
    """What every command shares: the environment, in-process plugins, and
    one plugin manager (loaded once, before commands are registered)."""

    def __init__(self, *, extra_plugins: Sequence[object] = (), env: Mapping[str, str] | None = None) -> None:
        self._env = env
        self.extra_plugins = list(extra_plugins)
        self._plugins: Plugins | None = None

    @property
    def env(self) -> Mapping[str, str]:
        return os.environ if self._env is None else self._env

    @property
    def plugins(self) -> Plugins:
        if self._plugins is None:
            from agy_host.plugins import Plugins

            plugins = Plugins(self.env)
            for plugin in self.extra_plugins:
                plugins.register(plugin, name=getattr(plugin, "name", None) or type(plugin).__name__)
            self._plugins = plugins
        return self._plugins

    def host(
        self,
        *,
        engine: str | None = None,
        agent: str | None = None,
        permissions: str | None = None,
        trace: str | None = None,
    ) -> Host:
        from agy_host.runtime.host import Host

        return Host(
            env=self.env, engine=engine, agent=agent, permissions=permissions, plugins=self.plugins, trace=trace
        )


__all__ = ["CliState"]
