"""agy-host: drive coding agents (Google Antigravity first) from the terminal
and from Python.

Programs drive agents with :func:`open_session` and :func:`run` (see
``docs/python.md``); plugin authors import from here::

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
    # the Python API
    "open_session": "agy_host.api",
    "run": "agy_host.api",
    "Session": "agy_host.api",
    "Turn": "agy_host.api",
    "AgyHostError": "agy_host.api",
    "EngineUnavailable": "agy_host.api",
    "PermissionDenied": "agy_host.api",
    "SessionNotFound": "agy_host.api",
    "TurnError": "agy_host.api",
    "TurnInterrupted": "agy_host.api",
    "TurnTimeout": "agy_host.api",
    "UsageError": "agy_host.api",
    "TurnResult": "agy_host.turn_result",
    "ExitCode": "agy_host.exit_codes",
    # what a turn streams
    "HostEvent": "agy_host.events",
    "TurnStarted": "agy_host.events",
    "TextDelta": "agy_host.events",
    "ThoughtDelta": "agy_host.events",
    "ToolCard": "agy_host.events",
    "PermissionAnswered": "agy_host.events",
    "UsageReport": "agy_host.events",
    "UsageCounts": "agy_host.events",
    "Notice": "agy_host.events",
    "ToolUseRequested": "agy_host.events",
    "TurnEnded": "agy_host.events",
    "FileDiff": "agy_host.events",
    "PermissionOption": "agy_host.events",
    # for plugin and engine authors
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
