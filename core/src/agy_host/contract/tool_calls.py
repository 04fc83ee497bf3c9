"""A tool call as agy-host sees it before it runs, and the gate's answer.

Three kinds of tool call pass through agy-host before they run, one per
``origin``:

* ``permission``: an agent asks permission for one of its own tools (an ACP
  ``session/request_permission``, the harness's dynamic policy rules);
* ``host_tool``: the agent calls a host tool (the MCP bridge's, a program's
  ``tools=``, a plugin's), which agy-host runs itself;
* ``harness_step``: the harness is about to run one of its own tools (its
  pre-tool hook, asked while the host gates tools).

Each is a :class:`ToolCall` handed to the host's tool gate (the lists
``allowed_tools``/``disallowed_tools`` and a program's ``before_tool``)
before the permission policy. The gate answers a :class:`ToolVerdict`:
allowed, denied with a reason, or left to the policy, and, where the call
can take one (``rewritable``), a new input. Engines see the gate as a
:class:`ToolGateView` (``EngineContext.tool_gate``).
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

import msgspec

Origin = Literal["permission", "host_tool", "harness_step"]


class ToolCall(msgspec.Struct, kw_only=True):
    """One tool call before it runs (what ``before_tool`` is called with)."""

    #: The tool's name (``run_command``, ``add``, an MCP tool's clean name).
    name: str
    #: What the agent says it does: ``read``, ``edit``, ``execute``, ``search``,
    #: ``fetch``, ``think``, ``other`` (a host tool is ``other``).
    kind: str = "other"
    #: The agent's title for the call (``Run: touch made``), else the name.
    title: str = ""
    #: The call's arguments, as the agent sent them.
    input: dict[str, Any] = msgspec.field(default_factory=dict)
    #: Where agy-host saw it (see the module docstring).
    origin: Origin = "permission"
    #: The host session the call belongs to.
    session: str = ""
    #: The agent's id for the call (the same id on its tool card, when it has one).
    call_id: str = ""
    #: A ``dict`` returned by ``before_tool`` replaces :attr:`input` here: a host
    #: tool and a harness step take it; an agent's permission request does not
    #: (the agent runs its tool with its own input).
    rewritable: bool = False


class ToolVerdict(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The gate's answer about one :class:`ToolCall`."""

    #: ``True`` allowed, ``False`` denied, ``None`` left to the permission policy.
    allow: bool | None = None
    #: Why (a denial's reason goes to the agent and into ``TurnResult.error``).
    reason: str = ""
    #: Who decided: ``disallowed_tools``, ``allowed_tools`` or ``before_tool``.
    by: str = ""
    #: The new input (``before_tool`` returned a dict for a rewritable call).
    input: dict[str, Any] | None = None


class ListEntry(msgspec.Struct, frozen=True):
    """One pattern of ``allowed_tools`` or ``disallowed_tools`` and where it
    came from (``--deny-tool``, ``disallowed_tools=``, ``[permissions]
    disallowed_tools in FILE``), so a refusal can name both."""

    pattern: str
    source: str


class ToolGateView(Protocol):
    """What an engine may ask of the host's tool gate (``EngineContext.tool_gate``)."""

    @property
    def active(self) -> bool:
        """Anything to gate: a tool list or a program's ``before_tool``."""
        ...

    async def check(self, call: ToolCall) -> ToolVerdict:
        """The verdict about ``call``; bounded, never raises."""
        ...

    def listed(self, name: str, kind: str) -> bool | None:
        """What the lists alone say about a tool: ``False`` disallowed,
        ``True`` allowed, ``None`` neither (for engines that hand static rules
        to their agent)."""
        ...


class OpenGate:
    """The gate of a host that gates nothing (an engine built in a test)."""

    active = False

    async def check(self, call: ToolCall) -> ToolVerdict:
        return ToolVerdict()

    def listed(self, name: str, kind: str) -> bool | None:
        return None


__all__ = ["ListEntry", "OpenGate", "Origin", "ToolCall", "ToolGateView", "ToolVerdict"]
