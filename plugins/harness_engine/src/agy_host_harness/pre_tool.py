"""The harness's pre-tool hook: every step it is about to run, through the
host's tool gate (the tool lists, a program's ``before_tool``).

While the host gates tools (``EngineContext.tool_gate.active``), a
conversation is opened with ``enabledHooks: [LIFECYCLE_HOOK_PRE_TOOL]``: the
harness then sends a ``callHookRequest`` with the step's ``preToolArgs``
(tool name, arguments, call id) before each tool it runs, reading and
searching included, and waits for the ``callHookResponse``. The answer:

* the gate denies: ``DENY`` with its reason (the harness gives the model
  "denied by pre-tool hook: REASON"), reported as a refused permission and a
  denied card, as a denial of a permission request is on every engine;
* it allows, or leaves the call to the policy: ``ALLOW`` (a tool that needs
  permission is then asked about through the dynamic policy rule, and the
  gate gives its first verdict again: ``before_tool`` is called once); a new
  input from ``before_tool`` goes as ``modifiedArgs`` (a ``genai.Struct``),
  which the harness runs instead;
* a host tool: ``ALLOW`` at once. The host gates it where it runs it
  (:func:`agy_host.runtime.tool_gate.check_host_tool`), as on every engine.

Always answered: the gate is bounded and never raises, an abort answers at
once, and a failure to send only loses an answer the harness no longer
waits for. With the hook on, the harness denies a tool no policy rule
matches (fail closed), so :func:`policy_rules` ends the rules with a
catch-all allow. The lists' allowed tools that need permission get no rule
at all (:func:`policy_rules`): the harness runs them without a dynamic
policy round trip.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agy_host.contract.events import PermissionActivity, ToolErrorActivity, ToolStartActivity
from agy_host.contract.tool_calls import ToolCall

if TYPE_CHECKING:
    from agy_host.contract.tool_calls import ToolVerdict
    from agy_host_harness import wire
    from agy_host_harness.conversation import Conversation
    from agy_host_harness.driver import HarnessDriver
    from agy_host_harness.turn import HarnessTurn

#: What the conversation asks the harness for while the host gates tools.
HOOKS = ["LIFECYCLE_HOOK_PRE_TOOL"]
PRE_TOOL = "LIFECYCLE_HOOK_PRE_TOOL"
#: Appended to the policy rules while the hook is on (see the module docstring).
CATCH_ALL = {"tool": "*", "decision": "POLICY_DECISION_ALLOW"}
#: The hook names a step by its action (``list_directory``), the model and
#: the policy rules by the tool (``list_dir``, ``replace_file_content``): both
#: to the name the step's card has (:func:`agy_host_harness.mapping.describe`),
#: the one a ``before_tool`` and the tool lists see.
NAMES = {
    "list_directory": "list_dir",
    "create_file": "write_to_file",
    "find_file": "find_by_name",
    "search_directory": "grep_search",
    "replace_file_content": "edit_file",
    "multi_replace_file_content": "edit_file",
}
#: The kinds of the harness's own tools, by their card's name.
KINDS = {
    "run_command": "execute",
    "run_workflow": "execute",
    "write_to_file": "edit",
    "edit_file": "edit",
    "view_file": "read",
    "list_dir": "read",
    "skill_lookup": "read",
    "find_by_name": "search",
    "grep_search": "search",
    "search_web": "fetch",
    "read_url_content": "fetch",
    "invoke_subagent": "think",
}


def card_name(tool: str, server: str = "") -> str:
    """The name of ``tool``'s card (an MCP server's tool: ``mcp_SERVER_TOOL``)."""
    return f"mcp_{server}_{tool}" if server else NAMES.get(tool, tool)


def kind_of(name: str) -> str:
    """The kind of the tool whose card is called ``name``."""
    return KINDS.get(name, "other")


def policy_rules(rules: list[dict[str, Any]], allowed: tuple[str, ...], hooked: bool) -> list[dict[str, Any]]:
    """The policy's rules with the tools the lists allow left out (the harness
    runs them unasked), and the catch-all allow the hook needs (unless the
    rules end with one already)."""
    kept = [rule for rule in rules if rule.get("tool") not in allowed]
    if hooked and kept and not any(rule.get("tool") == "*" for rule in kept):
        kept.append(CATCH_ALL)
    return kept


def listed_allowed(gate_listed: Any, tools: tuple[str, ...]) -> tuple[str, ...]:
    """Which of ``tools`` (the rules' names) the lists allow, by their card's
    name (``gate_listed(name, kind)`` is the gate's
    :meth:`~agy_host.contract.tool_calls.ToolGateView.listed`)."""
    return tuple(t for t in tools if gate_listed(card_name(t), kind_of(card_name(t))) is True)


async def answer(
    driver: HarnessDriver, conversation: Conversation, turn: HarnessTurn, hook: wire.CallHookRequest
) -> None:
    """Answer one hook request (see the module docstring); always sends."""
    # here, not at the top: mapping imports harness_config, which imports this module
    from agy_host_harness.driver import REJECT, options_for, permission_title
    from agy_host_harness.mapping import _json_object as json_object

    args = hook.pre_tool_args
    if hook.type != PRE_TOOL or args is None:
        await _send(conversation, hook.request_id, {"emptyResult": {}})
        return
    host_tools = {tool.name for tool in driver.engine.ctx.tools()}
    if args.tool_name in host_tools or not driver.engine.ctx.tool_gate.active:
        await _send(conversation, hook.request_id, {"preToolResult": {"decision": "ALLOW"}})
        return
    tool_args = json_object(args.arguments_json)
    main = args.trajectory_id in ("", turn.mapper.main)
    name = card_name(args.tool_name, args.server_name)
    title = permission_title(name, tool_args)
    call = ToolCall(
        name=name,
        kind=kind_of(name),
        title=title if main else f"subagent {args.trajectory_id[:8]}: {title}",
        input=tool_args,
        origin="harness_step",
        session=turn.request.session,
        call_id=args.call_id or hook.request_id,
        rewritable=True,
    )
    bound = driver.engine.ctx.config.turn.permission_timeout_seconds
    verdict = await turn.check_tool(driver.engine.ctx.tool_gate, call, bound_s=bound)
    driver.lifecycle.add("pre-tool", tool=args.tool_name, allow=verdict.allow, by=verdict.by)
    if verdict.allow is False:
        _report_denial(turn, call, verdict, options_for(name), REJECT.option_id)
        result: dict[str, Any] = {"decision": "DENY", "reason": verdict.reason or "refused by agy-host"}
    else:
        result = {"decision": "ALLOW"}
        if verdict.input is not None:
            result["modifiedArgs"] = genai_struct(verdict.input)
    await _send(conversation, hook.request_id, {"preToolResult": result})


def _report_denial(turn: HarnessTurn, call: ToolCall, verdict: ToolVerdict, options: Any, reject: str) -> None:
    """A denied step, shown as a denied permission request is: the answer, then a denied card."""
    turn.permissions_asked += 1
    turn.permissions_denied += 1
    reason = verdict.reason or "refused"
    turn.emit(
        PermissionActivity(
            call_id=call.call_id, title=call.title, options=options, selected=reject, policy=verdict.by, reason=reason
        )
    )
    turn.emit(
        ToolStartActivity(call_id=call.call_id, name=call.name, kind=call.kind, title=call.title, args=call.input)
    )
    turn.emit(ToolErrorActivity(call_id=call.call_id, name=call.name, message=reason, denied=True))


async def _send(conversation: Conversation, request_id: str, result: dict[str, Any]) -> None:
    await conversation.send({"callHookResponse": {"requestId": request_id, **result}})


def genai_struct(value: dict[str, Any]) -> dict[str, Any]:
    """A JSON object as the harness's ``genai.Struct`` in protobuf JSON: a
    list of named fields, each a typed value (not google.protobuf.Struct's
    plain object, which the harness cannot read and then waits for ever)."""
    return {"fields": [{"name": str(k), "value": _value(v)} for k, v in value.items()]}


def _value(value: Any) -> dict[str, Any]:
    if value is None:
        return {"nullValue": "NULL_VALUE"}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int | float):
        return {"numberValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, dict):
        return {"structValue": genai_struct(value)}
    if isinstance(value, list | tuple):
        return {"listValue": {"values": [_value(v) for v in value]}}
    return {"stringValue": str(value)}


__all__ = [
    "CATCH_ALL",
    "HOOKS",
    "KINDS",
    "NAMES",
    "answer",
    "card_name",
    "genai_struct",
    "kind_of",
    "listed_allowed",
    "policy_rules",
]
