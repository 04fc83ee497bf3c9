"""The effective config of the running command, for built-in plugins whose
hooks are not handed one (prompt parts, render observers).

A command that runs turns starts its services with the host's effective
config (file, environment and command-line overrides applied); this module
keeps that object through ``agy_host_services``, which returns no service.
Commands that want to be explicit call :func:`use_config`. Without either
(a turn layer driven directly, a test), the config is read from the
environment on each call (it is small), silently: the host has already
reported its warnings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agy_host import hookimpl

if TYPE_CHECKING:
    from agy_host.config import Config

_config: Config | None = None


def use_config(config: Config | None) -> None:
    """Make ``config`` the one built-in plugins read (``None`` forgets it)."""
    global _config
    _config = config


def current_config() -> Config:
    if _config is not None:
        return _config
    from agy_host import config as config_mod

    return config_mod.load(warn=None)


@hookimpl
def agy_host_services(config: Any) -> None:
    from agy_host.config import Config

    if isinstance(config, Config):
        use_config(config)


__all__ = ["current_config", "use_config"]
