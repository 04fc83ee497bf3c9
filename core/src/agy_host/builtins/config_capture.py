"""The effective config of the running command, for built-in plugins whose
hooks are not handed one (prompt parts, render observers).

A command that runs turns starts its services with the host's effective
config (file, environment and command-line overrides applied); this module
keeps that object through ``agy_host_services``, which returns no service.
Commands that want to be explicit call :func:`use_config`. A turn layer
makes its own config the one read during its turns
(:func:`agy_host.config.using`), so a turn driven from Python is covered
too. Without any of them (a hook called outside a turn, a test), the config
is read from the environment on each call, silently: the host has already
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
    """The running turn's config (:func:`agy_host.config.using`), else the
    command's, else the one read from the environment."""
    from agy_host import config as config_mod

    turn = config_mod.in_use()
    if turn is not None:
        return turn
    if _config is not None:
        return _config
    return config_mod.load(warn=None)


@hookimpl
def agy_host_services(config: Any) -> None:
    from agy_host.config import Config

    if isinstance(config, Config):
        use_config(config)


__all__ = ["current_config", "use_config"]
