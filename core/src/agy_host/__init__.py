"""agy-host: drive coding agents (Google Antigravity first) from the terminal
and from Python.

Plugin authors import from here::

    from agy_host import hookimpl

The public types are re-exported lazily, so ``import agy_host`` stays cheap on
the CLI's startup path.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    import pluggy

    #: Marker to be imported and used in plugins (and for built-in implementations).
    hookimpl: pluggy.HookimplMarker

_EXPORTS = {
    "Engine": "agy_host.engines",
    "EngineCapabilities": "agy_host.engines",
    "EngineContext": "agy_host.engines",
    "EngineError": "agy_host.engines",
    "McpServerSpec": "agy_host.engines",
    "ModelCatalog": "agy_host.engines",
    "ModelInfo": "agy_host.engines",
    "TurnDriver": "agy_host.turns",
    "TurnHandle": "agy_host.turns",
    "TurnRequest": "agy_host.turns",
    "DriverSnapshot": "agy_host.turns",
    "TurnTimers": "agy_host.timers",
    "PermissionDecision": "agy_host.permissions",
    "PermissionPolicy": "agy_host.permissions",
    "PermissionRequest": "agy_host.permissions",
    "HostTool": "agy_host.tools",
    "ToolResult": "agy_host.tools",
    "DiagnosticReport": "agy_host.diagnostics",
    "Config": "agy_host.config",
    "PromptContext": "agy_host.prompt_parts",
    "PromptPart": "agy_host.prompt_parts",
    "TextBlock": "agy_host.prompt",
    "ImageBlock": "agy_host.prompt",
    "ResourceBlock": "agy_host.prompt",
    "Renderer": "agy_host.rendering",
    "RenderOptions": "agy_host.rendering",
    "Service": "agy_host.services",
}

__all__ = ["__version__", "hookimpl", *sorted(_EXPORTS)]  # noqa: PLE0604


def __getattr__(name: str) -> Any:
    if name == "hookimpl":
        # Created on first use so that processes that never touch plugins
        # (the fake agents, `agy-host --version`) do not import pluggy.
        import pluggy

        marker = pluggy.HookimplMarker("agy_host")
        globals()["hookimpl"] = marker
        return marker
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agy_host' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
