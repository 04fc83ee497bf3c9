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
    "SessionStatus": "agy_host.api",
    "Turn": "agy_host.api",
    "AgyHostError": "agy_host.api",
    "EngineUnavailable": "agy_host.api",
    "KeeperLost": "agy_host.api",
    "OutputInvalid": "agy_host.api",
    "PermissionDenied": "agy_host.api",
    "SessionBusy": "agy_host.api",
    "SessionNotFound": "agy_host.api",
    "TurnError": "agy_host.api",
    "TurnInterrupted": "agy_host.api",
    "TurnTimeout": "agy_host.api",
    "UsageError": "agy_host.api",
    "TurnResult": "agy_host.contract.turn_result",
    "ExitCode": "agy_host.exit_codes",
    # what a turn streams
    "HostEvent": "agy_host.contract.events",
    "TurnStarted": "agy_host.contract.events",
    "TextDelta": "agy_host.contract.events",
    "ThoughtDelta": "agy_host.contract.events",
    "ToolCard": "agy_host.contract.events",
    "PermissionAnswered": "agy_host.contract.events",
    "UsageReport": "agy_host.contract.events",
    "UsageCounts": "agy_host.contract.events",
    "Notice": "agy_host.contract.events",
    "ToolUseRequested": "agy_host.contract.events",
    "TurnEnded": "agy_host.contract.events",
    "FileDiff": "agy_host.contract.events",
    "PermissionOption": "agy_host.contract.events",
    "QuestionAnswered": "agy_host.contract.events",
    "PlanUpdated": "agy_host.contract.events",
    "PlanEntry": "agy_host.contract.events",
    "CommandsUpdated": "agy_host.contract.events",
    "AgentCommand": "agy_host.contract.events",
    # questions the agent asks the user
    "Question": "agy_host.contract.interactions",
    "Answer": "agy_host.contract.interactions",
    "FormField": "agy_host.contract.interactions",
    # for plugin and engine authors
    "Engine": "agy_host.engine.base",
    "EngineCapabilities": "agy_host.engine.base",
    "EngineContext": "agy_host.engine.base",
    "EngineError": "agy_host.engine.base",
    "McpServerSpec": "agy_host.engine.base",
    "ModelCatalog": "agy_host.engine.base",
    "ModelInfo": "agy_host.engine.base",
    "TurnDriver": "agy_host.engine.driver",
    "TurnHandle": "agy_host.engine.driver",
    "TurnRequest": "agy_host.engine.driver",
    "DriverSnapshot": "agy_host.engine.driver",
    "TurnTimers": "agy_host.engine.timers",
    "PermissionDecision": "agy_host.contract.permissions",
    "PermissionPolicy": "agy_host.contract.permissions",
    "PermissionRequest": "agy_host.contract.permissions",
    "HostTool": "agy_host.contract.tools",
    "ToolResult": "agy_host.contract.tools",
    "DiagnosticReport": "agy_host.contract.diagnostics",
    "Config": "agy_host.config",
    "PromptContext": "agy_host.contract.prompt_parts",
    "PromptPart": "agy_host.contract.prompt_parts",
    "TextBlock": "agy_host.contract.prompt",
    "ImageBlock": "agy_host.contract.prompt",
    "ResourceBlock": "agy_host.contract.prompt",
    "Renderer": "agy_host.contract.rendering",
    "RenderOptions": "agy_host.contract.rendering",
    "Service": "agy_host.service.base",
    "DiffSource": "agy_host.contract.rendering",
    "StateFile": "agy_host.engine.state_file",
    "RunContext": "agy_host.contract.run_context",
    "TurnContext": "agy_host.contract.run_context",
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
