"""What the plugin manager reports about plugins (``agy-host plugins``,
``doctor``, ``--format json``): a plugin that failed, and one that loaded.

msgspec Structs in a module of their own, so that :mod:`agy_host.plugins`
imports no msgspec: ``agy-host --help`` loads the plugins (they may add
commands) and should not pay for it (docs/performance.md, "Cold path").
"""

from __future__ import annotations

import msgspec


class PluginError(msgspec.Struct, kw_only=True):
    name: str
    distribution: str = ""
    error: str


class PluginInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    name: str
    distribution: str = ""
    version: str = ""
    hooks: list[str] = msgspec.field(default_factory=list)
    builtin: bool = False


__all__ = ["PluginError", "PluginInfo"]
