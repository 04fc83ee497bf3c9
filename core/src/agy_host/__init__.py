"""agy-host: drive coding agents (Google Antigravity first) from the terminal
and from Python.

Programs drive agents with :func:`open_session` and :func:`run` (see
``docs/python.md``); plugin authors import from here::

    from agy_host import hookimpl

The public types are re-exported lazily, so ``import agy_host`` stays cheap on
the CLI's startup path; ``dir(agy_host)`` and ``__all__`` list all of them
(``__dir__`` below), so a REPL's completion and ``help()`` find the whole API.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    # What the lazy exports below resolve to, for type checkers: a program's
    # ``agy_host.open_session`` is checked against its real signature, not
    # the ``Any`` of the module ``__getattr__`` (test_public_api pins both lists).
    import pluggy

    from agy_host.api import (
        AgyHostError as AgyHostError,
    )
    from agy_host.api import (
        EngineUnavailable as EngineUnavailable,
    )
    from agy_host.api import (
        KeeperLost as KeeperLost,
    )
    from agy_host.api import (
        NotSupported as NotSupported,
    )
    from agy_host.api import (
        OutputInvalid as OutputInvalid,
    )
    from agy_host.api import (
        PermissionDenied as PermissionDenied,
    )
    from agy_host.api import (
        Session as Session,
    )
    from agy_host.api import (
        SessionBusy as SessionBusy,
    )
    from agy_host.api import (
        SessionNotFound as SessionNotFound,
    )
    from agy_host.api import (
        SessionStatus as SessionStatus,
    )
    from agy_host.api import (
        Turn as Turn,
    )
    from agy_host.api import (
        TurnError as TurnError,
    )
    from agy_host.api import (
        TurnInterrupted as TurnInterrupted,
    )
    from agy_host.api import (
        TurnTimeout as TurnTimeout,
    )
    from agy_host.api import (
        UsageError as UsageError,
    )
    from agy_host.api import (
        open_session as open_session,
    )
    from agy_host.api import (
        run as run,
    )
    from agy_host.api.sessions import (
        delete_session as delete_session,
    )
    from agy_host.api.sessions import (
        fork_session as fork_session,
    )
    from agy_host.api.sessions import (
        get_session as get_session,
    )
    from agy_host.api.sessions import (
        list_sessions as list_sessions,
    )
    from agy_host.config import (
        Config as Config,
    )
    from agy_host.contract.diagnostics import (
        DiagnosticReport as DiagnosticReport,
    )
    from agy_host.contract.events import (
        AgentCommand as AgentCommand,
    )
    from agy_host.contract.events import (
        CommandsUpdated as CommandsUpdated,
    )
    from agy_host.contract.events import (
        FileDiff as FileDiff,
    )
    from agy_host.contract.events import (
        HostEvent as HostEvent,
    )
    from agy_host.contract.events import (
        Notice as Notice,
    )
    from agy_host.contract.events import (
        PermissionAnswered as PermissionAnswered,
    )
    from agy_host.contract.events import (
        PermissionOption as PermissionOption,
    )
    from agy_host.contract.events import (
        PlanEntry as PlanEntry,
    )
    from agy_host.contract.events import (
        PlanUpdated as PlanUpdated,
    )
    from agy_host.contract.events import (
        QuestionAnswered as QuestionAnswered,
    )
    from agy_host.contract.events import (
        TextDelta as TextDelta,
    )
    from agy_host.contract.events import (
        ThoughtDelta as ThoughtDelta,
    )
    from agy_host.contract.events import (
        ToolCard as ToolCard,
    )
    from agy_host.contract.events import (
        ToolUseRequested as ToolUseRequested,
    )
    from agy_host.contract.events import (
        TurnEnded as TurnEnded,
    )
    from agy_host.contract.events import (
        TurnStarted as TurnStarted,
    )
    from agy_host.contract.events import (
        UsageCounts as UsageCounts,
    )
    from agy_host.contract.events import (
        UsageReport as UsageReport,
    )
    from agy_host.contract.interactions import (
        Answer as Answer,
    )
    from agy_host.contract.interactions import (
        FormField as FormField,
    )
    from agy_host.contract.interactions import (
        Question as Question,
    )
    from agy_host.contract.permissions import (
        PermissionDecision as PermissionDecision,
    )
    from agy_host.contract.permissions import (
        PermissionPolicy as PermissionPolicy,
    )
    from agy_host.contract.permissions import (
        PermissionRequest as PermissionRequest,
    )
    from agy_host.contract.prompt import (
        ImageBlock as ImageBlock,
    )
    from agy_host.contract.prompt import (
        ResourceBlock as ResourceBlock,
    )
    from agy_host.contract.prompt import (
        TextBlock as TextBlock,
    )
    from agy_host.contract.prompt_parts import (
        PromptContext as PromptContext,
    )
    from agy_host.contract.prompt_parts import (
        PromptPart as PromptPart,
    )
    from agy_host.contract.rendering import (
        DiffSource as DiffSource,
    )
    from agy_host.contract.rendering import (
        Renderer as Renderer,
    )
    from agy_host.contract.rendering import (
        RenderOptions as RenderOptions,
    )
    from agy_host.contract.run_context import (
        RunContext as RunContext,
    )
    from agy_host.contract.run_context import (
        TurnContext as TurnContext,
    )
    from agy_host.contract.sessions import (
        BoundConversation as BoundConversation,
    )
    from agy_host.contract.sessions import (
        HostToolUse as HostToolUse,
    )
    from agy_host.contract.sessions import (
        SessionDetail as SessionDetail,
    )
    from agy_host.contract.sessions import (
        SessionEntry as SessionEntry,
    )
    from agy_host.contract.sessions import (
        SessionInfo as SessionInfo,
    )
    from agy_host.contract.tool_calls import (
        ToolCall as ToolCall,
    )
    from agy_host.contract.tools import (
        HostTool as HostTool,
    )
    from agy_host.contract.tools import (
        ToolResult as ToolResult,
    )
    from agy_host.contract.turn_result import (
        TurnResult as TurnResult,
    )
    from agy_host.engine.base import (
        AgentMode as AgentMode,
    )
    from agy_host.engine.base import (
        Engine as Engine,
    )
    from agy_host.engine.base import (
        EngineCapabilities as EngineCapabilities,
    )
    from agy_host.engine.base import (
        EngineContext as EngineContext,
    )
    from agy_host.engine.base import (
        EngineError as EngineError,
    )
    from agy_host.engine.base import (
        McpServerSpec as McpServerSpec,
    )
    from agy_host.engine.base import (
        ModeCatalog as ModeCatalog,
    )
    from agy_host.engine.base import (
        ModelCatalog as ModelCatalog,
    )
    from agy_host.engine.base import (
        ModelInfo as ModelInfo,
    )
    from agy_host.engine.driver import (
        DriverSnapshot as DriverSnapshot,
    )
    from agy_host.engine.driver import (
        TurnDriver as TurnDriver,
    )
    from agy_host.engine.driver import (
        TurnHandle as TurnHandle,
    )
    from agy_host.engine.driver import (
        TurnRequest as TurnRequest,
    )
    from agy_host.engine.state_file import (
        StateFile as StateFile,
    )
    from agy_host.engine.timers import (
        TurnTimers as TurnTimers,
    )
    from agy_host.exit_codes import (
        ExitCode as ExitCode,
    )
    from agy_host.service.base import (
        Service as Service,
    )

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
    "NotSupported": "agy_host.api",
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
    # sessions from code: the store `agy-host sessions` shows
    "list_sessions": "agy_host.api.sessions",
    "get_session": "agy_host.api.sessions",
    "delete_session": "agy_host.api.sessions",
    "fork_session": "agy_host.api.sessions",
    "SessionInfo": "agy_host.contract.sessions",
    "SessionDetail": "agy_host.contract.sessions",
    "SessionEntry": "agy_host.contract.sessions",
    "BoundConversation": "agy_host.contract.sessions",
    "HostToolUse": "agy_host.contract.sessions",
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
    # what before_tool is called with
    "ToolCall": "agy_host.contract.tool_calls",
    # for plugin and engine authors
    "Engine": "agy_host.engine.base",
    "EngineCapabilities": "agy_host.engine.base",
    "EngineContext": "agy_host.engine.base",
    "EngineError": "agy_host.engine.base",
    "McpServerSpec": "agy_host.engine.base",
    "AgentMode": "agy_host.engine.base",
    "ModeCatalog": "agy_host.engine.base",
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


def __dir__() -> list[str]:
    """The public API, the lazy names included (a module's own ``dir()``
    would list only what was imported so far, and its helpers)."""
    return sorted(__all__)
