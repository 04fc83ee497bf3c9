"""The ``HarnessConfig`` a conversation starts with, from the host's settings.

What decides it is a :class:`Profile`: when a turn's profile differs from
the one its conversation was opened with (model, effort, cwd, permissions,
the host tools on offer), the conversation is re-opened on the same
``cascadeId`` with ``RESUME`` and the new config: the change takes effect on
that turn and the conversation goes on.

* Models: one text model on the configured endpoint (see :mod:`.settings`);
  the effort is the Gemini ``thinkingLevel``.
* Tools: Antigravity's coding set (list, read, find, grep, write, edit,
  commands), subagents, web and images as configured, plus the host tools
  declared in-process (``tools``), answered by the host.
* Permissions: ``--skip-permissions`` or the ``auto`` policy allow statically
  inside the harness; ``deny`` denies the tools that change things
  statically; any other policy (``ask``, ``rules``, a plugin's) gets one
  dynamic rule per such tool, which the harness sends back as a
  ``policyDecisionRequest`` for the host's policy to answer. Reading and
  searching are never asked about, as in Antigravity. A tool the tool lists
  allow gets no rule (the harness runs it unasked); while the host gates
  tools, the pre-tool hook is on (:mod:`.pre_tool`).
* The host's system block is appended to Antigravity's own instructions, or
  replaces them (``system_prompt_mode = "replace"``).
* Every conversation gets the configured budget: the harness has no cap on
  its model-call loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from agy_host.contract.tools import HostTool
from agy_host.engine.base import McpServerSpec
from agy_host_harness import pre_tool, retries
from agy_host_harness.settings import HarnessSettings

#: Harness tools that change the machine: asked about unless allowed.
GATED_TOOLS = ("run_command", "write_to_file", "replace_file_content", "multi_replace_file_content")
ANY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}
SYSTEM_TITLE = "Instructions from agy-host"
#: The reason of a static denial, after the tool's name: the harness reports
#: a denied call only as an error step with this text, so the mapping finds
#: the tool there (``run_command denied by ...``).
STATIC_DENIAL = "denied by agy-host's permission policy 'deny'"
#: What the harness says of a step agy-host's pre-tool hook refused
#: (:mod:`.pre_tool`): "denied by pre-tool hook: REASON".
HOOK_DENIAL = "denied by pre-tool hook:"


class Profile(msgspec.Struct, kw_only=True, frozen=True):
    model: str
    effort: str | None
    cwd: str
    policy: str
    skip_permissions: bool
    host_tools: tuple[str, ...]
    mcp: tuple[str, ...]
    #: The host gates tools: every step goes through the pre-tool hook.
    pre_tool: bool = False
    #: Tools that need permission which the tool lists allow (no rule: unasked).
    allowed: tuple[str, ...] = ()


class Endpoint(msgspec.Struct, kw_only=True, frozen=True):
    kind: str  # gemini | vertex | openai
    base_url: str = ""
    api_key: str = ""
    project: str = ""
    location: str = ""
    #: Where the endpoint was given (``[harness] base_url``...); empty for Google's default.
    source: str = ""

    def describe(self) -> str:
        if self.kind == "openai":
            return f"OpenAI-compatible at {self.base_url}"
        if self.kind == "vertex":
            return f"Vertex AI project {self.project} ({self.location})"
        return f"Gemini API at {self.base_url or 'Google (default)'}" + ("" if self.api_key else ", no API key set")


def shadowed_base_url(settings: HarnessSettings, env: Mapping[str, str]) -> str | None:
    """What to tell a user whose ``$GOOGLE_GEMINI_BASE_URL`` is not used
    because ``[harness] base_url`` is set to another URL (the config wins: it
    is the harness's own setting); ``None`` when nothing is shadowed."""
    from_env = env.get("GOOGLE_GEMINI_BASE_URL", "").rstrip("/")
    configured = settings.base_url.rstrip("/")
    if not from_env or not configured or from_env == configured or settings.openai_base_url or settings.project:
        return None
    return (
        f"GOOGLE_GEMINI_BASE_URL={from_env} is not used: [harness] base_url is {configured} "
        '(`agy-host config set harness.base_url ...` to change it, or set it to "" to use the variable)'
    )


def endpoint(settings: HarnessSettings, env: Mapping[str, str]) -> Endpoint:
    if settings.openai_base_url:
        url = settings.openai_base_url.rstrip("/")
        return Endpoint(kind="openai", base_url=url, source="[harness] openai_base_url")
    if settings.project:
        return Endpoint(kind="vertex", project=settings.project, location=settings.location, source="[harness] project")
    key = env.get(settings.api_key_env, "") if settings.api_key_env else ""
    base, source = settings.base_url, "[harness] base_url"
    if not base and env.get("GOOGLE_GEMINI_BASE_URL", ""):
        base, source = env["GOOGLE_GEMINI_BASE_URL"], "$GOOGLE_GEMINI_BASE_URL"
    return Endpoint(kind="gemini", base_url=base.rstrip("/"), api_key=key, source=source if base else "")


def model_config(name: str, effort: str | None, point: Endpoint) -> dict[str, Any]:
    model: dict[str, Any] = {"name": name, "types": ["MODEL_TYPE_TEXT"]}
    options = {"thinkingLevel": effort} if effort else {}
    if point.kind == "openai":
        model["gemmaEndpoint"] = {"baseUrl": point.base_url}
    elif point.kind == "vertex":
        model["vertexEndpoint"] = {"project": point.project, "location": point.location, "options": options}
    else:
        gemini: dict[str, Any] = {"options": options}
        if point.base_url:
            gemini["baseUrl"] = point.base_url
        if point.api_key:
            gemini["apiKey"] = point.api_key
        model["geminiApiEndpoint"] = gemini
    return model


def side_tools(settings: HarnessSettings) -> dict[str, Any]:
    on = {"enabled": True}
    tools: dict[str, Any] = {
        "listDir": on,
        "viewFile": on,
        "find": on,
        "grepSearch": on,
        "writeToFile": on,
        "fileEdit": on,
        "runCommand": {"enabled": True},
    }
    if settings.subagents:
        tools["subagents"] = {"enabled": True, "maxNestingDepth": 1}
    if settings.web:
        tools["searchWeb"] = on
        tools["readUrlContent"] = on
    if settings.images:
        tools["generateImage"] = on
    if settings.questions:
        tools["userQuestions"] = on
    return tools


#: The last rule of every policy config: a harness given rules denies every
#: tool no rule matches (fail-closed: host tools, reads, searches), so the
#: tools agy-host does not gate are allowed by name, as Google's SDK does
#: (``confirm_run_command``: a deny, then ``allow("*")``).
ALLOW_THE_REST: dict[str, Any] = {"tool": "*", "decision": "POLICY_DECISION_ALLOW"}


def policy_config(policy: str, skip_permissions: bool) -> dict[str, Any] | None:
    if skip_permissions or policy == "auto":
        return None  # the harness allows by default
    if policy == "deny":
        denied = [
            {"tool": t, "decision": "POLICY_DECISION_DENY", "denyReason": f"{t} {STATIC_DENIAL}"} for t in GATED_TOOLS
        ]
        return {"rules": [*denied, ALLOW_THE_REST]}
    asked: list[dict[str, Any]] = [
        {"tool": t, "decision": "POLICY_DECISION_ASK_USER", "isDynamic": True, "ruleId": f"agy-host:{t}"}
        for t in GATED_TOOLS
    ]
    return {"rules": [*asked, ALLOW_THE_REST]}


def host_tool_declarations(tools: Sequence[HostTool]) -> list[dict[str, Any]]:
    out = []
    for tool in tools:
        schema = tool.input_schema if isinstance(tool.input_schema, dict) and tool.input_schema else ANY_OBJECT
        out.append(
            {
                "name": tool.name,
                "description": tool.description or tool.name,
                "parametersJsonSchema": msgspec.json.encode(schema).decode(),
            }
        )
    return out


def mcp_servers(servers: Sequence[McpServerSpec], host_tools: Sequence[str]) -> list[dict[str, Any]]:
    """MCP servers as the harness takes them. The host-tools server (the
    bridge) is passed only for what else it offers (skills), with the host
    tools themselves hidden there: they are declared in-process. A bridge
    that offers nothing else is left out: the harness would connect to it at
    every conversation's start for nothing (about a second, the MCP SDK's
    first import)."""
    out = []
    for srv in servers:
        if srv.role == "host-tools" and not srv.offers:
            continue
        entry: dict[str, Any] = {"name": srv.name, "http": {"url": srv.url, "headers": dict(srv.headers)}}
        if srv.role == "host-tools" and host_tools:
            entry["disabledTools"] = list(host_tools)
        out.append(entry)
    return out


def system_instructions(block: str, mode: str) -> dict[str, Any] | None:
    if not block:
        return None
    if mode == "replace":
        return {"custom": {"part": [{"text": block}]}}
    return {"appended": {"appendedSections": [{"title": SYSTEM_TITLE, "content": block}]}}


def build(
    *,
    settings: HarnessSettings,
    profile: Profile,
    point: Endpoint,
    tools: Sequence[HostTool],
    servers: Sequence[McpServerSpec],
    system_block: str,
    app_data_dir: str,
    cascade_id: str | None,
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "models": [model_config(profile.model, profile.effort, point)],
        "workspaces": [{"filesystemWorkspace": {"directory": profile.cwd}}],
        "appDataDir": app_data_dir,
        "harnessSideTools": side_tools(settings),
    }
    if settings.questions:
        # The harness asks its questions only in interactive mode (the SDK
        # sets the same for its ask_question tool); otherwise it cancels them.
        config["agentBehavior"] = "AGENT_BEHAVIOR_INTERACTIVE"
    if cascade_id:
        config["cascadeId"] = cascade_id
        config["sessionContinuationMode"] = "RESUME"
    else:
        config["sessionContinuationMode"] = "CREATE_ONLY"
    declared = host_tool_declarations(tools)
    if declared:
        config["tools"] = declared
    mcp = mcp_servers(servers, [t.name for t in tools])
    if mcp:
        config["mcpServers"] = mcp
    policy = policy_config(profile.policy, profile.skip_permissions)
    rules = pre_tool.policy_rules(policy["rules"] if policy else [], profile.allowed, profile.pre_tool)
    if rules:
        config["policyConfig"] = {"rules": rules}
    if profile.pre_tool:
        config["enabledHooks"] = list(pre_tool.HOOKS)
    instructions = system_instructions(system_block, settings.system_prompt_mode)
    if instructions:
        config["systemInstructions"] = instructions
    budget = {
        k: v
        for k, v in (
            ("maxModelCalls", settings.max_model_calls),
            ("maxToolCalls", settings.max_tool_calls),
            ("maxTotalTokens", settings.max_total_tokens),
        )
        if v
    }
    if budget:
        config["budgetConfig"] = budget
    retry = retries.harness_retry_config(settings)
    if retry is not None:
        config["retryConfig"] = retry
    return config


__all__ = [
    "HOOK_DENIAL",
    "GATED_TOOLS",
    "STATIC_DENIAL",
    "Endpoint",
    "Profile",
    "build",
    "endpoint",
    "shadowed_base_url",
    "host_tool_declarations",
    "mcp_servers",
    "model_config",
    "policy_config",
    "side_tools",
    "system_instructions",
]
