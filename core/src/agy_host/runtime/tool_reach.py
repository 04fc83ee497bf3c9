"""Whether the host's tools can reach the agent, and what to do when not.

Host tools (a program's ``tools=``, a plugin's ``agy_host_register_tools``)
reach an agent one of two ways: the engine offers them itself (the harness:
:attr:`~agy_host.engine.base.EngineCapabilities.host_tools_in_process`), or
the MCP bridge serves them and the engine hands the agent its address (ACP,
stream-json). Without the bridge the agent was never told about them: the
model called ``add`` and heard ``Tool "add" not found``, while the run
exited 0. So a session whose tools cannot reach its agent does not open:

* a program's ``tools=``: always (it asked for them);
* a plugin's tools: when the bridge is missing or failed to load; a bridge
  turned off on purpose (``[bridge] enabled = false``, or the plugin left
  out by ``AGY_HOST_LOAD_PLUGINS`` / ``AGY_HOST_DISABLE_PLUGINS``) means the
  user chose not to offer them.

A missing bridge is named with the command that installs it from where the
user is (:func:`agy_host.engine.install_hint.install_hint`).

``config show`` and ``doctor`` say the same (:func:`bridge_state`,
:func:`tool_reach`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import msgspec

if TYPE_CHECKING:
    from agy_host.engine.base import Engine
    from agy_host.runtime.host import Host

BRIDGE_DIST = "agy-host-bridge-mcp"
#: The bridge's entry point (plugin) name.
BRIDGE_PLUGIN = "bridge_mcp"

BridgeStatus = Literal["loaded", "off", "left-out", "broken", "missing"]


class BridgeState(msgspec.Struct, frozen=True, kw_only=True):
    """The MCP bridge in this host: ``loaded`` (and on), or why it is not
    (``why`` reads after "the MCP bridge": "is not installed; ...")."""

    status: BridgeStatus
    why: str = ""

    @property
    def chosen(self) -> bool:
        """Off on purpose (config, or the plugin filter), not missing or broken."""
        return self.status in ("off", "left-out")


class ToolReach(msgspec.Struct, frozen=True, kw_only=True):
    """Whether host tools reach the agent of an engine, and how (or why not)."""

    reaches: bool
    how: str
    bridge: BridgeState


def bridge_state(host: Host) -> BridgeState:
    """Whether the MCP bridge plugin is loaded and on in ``host``, or why not."""
    plugins = host.plugins
    if any(i.name == BRIDGE_PLUGIN or i.distribution == BRIDGE_DIST for i in plugins.info()):
        if not host.config.bridge.enabled:
            why = (
                "is turned off (`[bridge] enabled = false`, or AGY_HOST_BRIDGE=0); "
                "`agy-host config set bridge.enabled true` turns it on"
            )
            return BridgeState(status="off", why=why)
        return BridgeState(status="loaded")
    broken = next((e for e in plugins.errors if e.name == BRIDGE_PLUGIN or e.distribution == BRIDGE_DIST), None)
    if broken is not None:
        return BridgeState(status="broken", why=f"failed to load ({broken.error})")
    if BRIDGE_PLUGIN in plugins.disabled:
        return BridgeState(status="left-out", why="is left out by AGY_HOST_LOAD_PLUGINS / AGY_HOST_DISABLE_PLUGINS")
    from agy_host.engine.install_hint import install_hint

    return BridgeState(status="missing", why=f"is not installed; install it: {install_hint(BRIDGE_DIST)}")


def tool_reach(host: Host, engine: Engine) -> ToolReach:
    """How host tools reach ``engine``'s agent, or why they cannot."""
    if engine.capabilities.host_tools_in_process:
        how = f"the {engine.ENGINE_NAME} engine offers them to its agent itself"
        return ToolReach(reaches=True, how=how, bridge=BridgeState(status="loaded"))
    state = bridge_state(host)
    if state.status == "loaded":
        return ToolReach(reaches=True, how=f"through the MCP bridge ({BRIDGE_DIST})", bridge=state)
    how = f"the {engine.ENGINE_NAME} engine offers host tools through the MCP bridge ({BRIDGE_DIST}) only"
    how += f", which {state.why}"
    return ToolReach(reaches=False, how=how, bridge=state)


def tools_problem(host: Host, engine: Engine, program_tools: Sequence[str] = ()) -> str | None:
    """Why a session must not open: host tools that cannot reach its agent
    (``program_tools``: the names a program passed as ``tools=``; the other
    registered tools are plugins'), or ``None``."""
    reach = tool_reach(host, engine)
    if reach.reaches:
        return None
    names = list(dict.fromkeys(program_tools))
    if not reach.bridge.chosen:
        names += [t.name for t in host.plugins.tools() if t.name not in names]
    if not names:
        return None
    which = f"host tool {names[0]!r}" if len(names) == 1 else f"host tools {', '.join(repr(n) for n in names)}"
    return f"{which} cannot reach the agent: {reach.how}"


__all__ = [
    "BRIDGE_DIST",
    "BRIDGE_PLUGIN",
    "BridgeState",
    "BridgeStatus",
    "ToolReach",
    "bridge_state",
    "tool_reach",
    "tools_problem",
]
