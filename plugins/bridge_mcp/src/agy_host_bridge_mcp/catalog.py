"""The bridge's tool catalog and how each call is answered.

Rebuilt on every ``tools/list``, because plugins and skills may change while
the host runs:

* the host tools of the ``agy_host_register_tools`` hook (``ask_user`` among
  them): a call to one **parks the turn** through
  :meth:`agy_host.service.roundtrips.RoundTrips.call` and the host runs it;
* ``activate_skill`` (when skills exist): answered here, from ``SKILL.md``;
* ``bridge_poll_result``: answered here, from the escalation registry.

The built-in names win over a host tool of the same name (the host tool is
left out and reported once). Free of the MCP SDK, so it is tested without a
server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec
import trio

from agy_host.contract.tools import HostTool, ToolResult
from agy_host.service.roundtrip_text import POLL_DESCRIPTION, POLL_TOOL
from agy_host.service.roundtrips import RoundTrips
from agy_host_bridge_mcp import skills as skills_mod

SKILL_TOOL = "activate_skill"
#: When a host tool gives no schema, it takes any object.
ANY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": True}
NO_HOST = "the bridge is not connected to a running agy-host command, so host tools cannot run"


class ToolEntry(msgspec.Struct, kw_only=True):
    name: str
    description: str
    input_schema: dict[str, Any]


def poll_entry() -> ToolEntry:
    return ToolEntry(
        name=POLL_TOOL,
        description=POLL_DESCRIPTION,
        input_schema={
            "type": "object",
            "properties": {"callId": {"type": "string", "description": "the callId of the STILL RUNNING answer"}},
            "required": ["callId"],
        },
    )


def skill_entry(found: list[skills_mod.Skill]) -> ToolEntry:
    catalog = "\n".join(f"- {s.name}: {s.description}" if s.description else f"- {s.name}" for s in found)
    return ToolEntry(
        name=SKILL_TOOL,
        description=f"Activate an agy-host skill by name: returns its instructions. Catalog:\n{catalog}",
        input_schema={
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": [s.name for s in found], "description": "the skill to activate"}
            },
            "required": ["name"],
        },
    )


def _schema(tool: HostTool) -> dict[str, Any]:
    schema = tool.input_schema
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return dict(ANY_OBJECT)
    copy: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(schema), type=dict[str, Any])
    return copy  # the SDK never aliases a plugin's dict


class Catalog:
    """What the bridge offers; see the module docstring."""

    def __init__(
        self,
        *,
        tools: Callable[[], list[HostTool]],
        roundtrips: RoundTrips | None,
        env: Mapping[str, str],
        cwd: str,
        trusted_projects: list[str],
        skills: bool = True,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self._tools = tools
        self.roundtrips = roundtrips
        self.env = env
        self.cwd = cwd
        self.trusted = trusted_projects
        self.skills_enabled = skills
        self._warn = warn or (lambda _m: None)
        self._shadowed: set[str] = set()

    def skills(self) -> list[skills_mod.Skill]:
        if not self.skills_enabled:
            return []
        return skills_mod.scan(skills_mod.skill_dirs(self.env, self.cwd, self.trusted))

    def host_tools(self) -> dict[str, HostTool]:
        reserved = {POLL_TOOL, SKILL_TOOL}
        out: dict[str, HostTool] = {}
        for tool in self._tools():
            if tool.name in reserved:
                if tool.name not in self._shadowed:
                    self._shadowed.add(tool.name)
                    self._warn(f"bridge: host tool {tool.name!r} is hidden by the bridge's built-in of that name")
                continue
            out.setdefault(tool.name, tool)
        return out

    def entries(self) -> list[ToolEntry]:
        out = [
            ToolEntry(name=t.name, description=t.description or t.name, input_schema=_schema(t))
            for t in self.host_tools().values()
        ]
        found = self.skills()
        if found:
            out.append(skill_entry(found))
        out.append(poll_entry())
        return out

    async def call(self, name: str, args: Mapping[str, Any], *, disconnected: trio.Event | None = None) -> ToolResult:
        if name == POLL_TOOL:
            if self.roundtrips is None:
                return ToolResult(text=f"Error: {NO_HOST}", is_error=True)
            call_id = args.get("callId", args.get("call_id", ""))
            return self.roundtrips.poll(str(call_id or ""))
        if name == SKILL_TOOL:
            return self._activate(args)
        if name not in self.host_tools():
            return ToolResult(text=f"Error: unknown tool: {name}", is_error=True)
        if self.roundtrips is None:
            return ToolResult(text=f"Error: {NO_HOST}", is_error=True)
        return await self.roundtrips.call(name, args, disconnected=disconnected)

    def _activate(self, args: Mapping[str, Any]) -> ToolResult:
        wanted = str(args.get("name") or "")
        for skill in self.skills():
            if skill.name == wanted:
                return ToolResult(text=skills_mod.skill_body(skill))
        return ToolResult(text=f"Error: unknown skill: {wanted or '(none given)'}", is_error=True)


__all__ = ["ANY_OBJECT", "NO_HOST", "SKILL_TOOL", "Catalog", "ToolEntry", "poll_entry", "skill_entry"]
