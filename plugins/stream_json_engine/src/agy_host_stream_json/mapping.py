"""``step_update`` -> host Activities, for one turn.

One :class:`StepMapper` per turn holds what the mapping needs:

* a cumulative-resend guard per ``agent_response`` step: ``text_delta``
  pieces are deltas on every recorded build (they concatenate to
  ``result.response`` exactly), but the guard is cheap insurance against a
  build that resends a step's text so far. Per step, because a resend can
  only repeat its own step, never the steps before it;
* the tool steps seen, keyed by ``step_index`` (one index emits several
  ACTIVE frames, then DONE or ERROR), so a repeat does not start a second
  card and an end carries the name and parameters of its start;
* the step usages (their sum is the turn's usage, see :mod:`.usage`);
* what agy denied. Headless agy cannot ask for permission, so a tool that
  needs one is refused: on <= 1.1.24 as an ERROR step with a TOOL_ERROR
  message ("user denied permission to run command"), on >= 1.2.17 as a DONE
  step without output plus a ``denied_actions`` entry in the result. Both
  end as a *denied* tool card, after a permission answer that says so
  (:func:`denial`): nobody could be asked, and ``--permissions skip``
  allows. A tool denied is a turn that fails closed (exit 5), as on every
  engine.

Tool parameters are agy's (PascalCase keys: ``AbsolutePath``, ``TargetFile``,
``CommandLine``); they are passed on as the tool's ``args`` with the paths
as ``locations``, which is what the diff renderer needs. A ``write_to_file``
that carries its content becomes a :class:`~agy_host.contract.events.FileDiff` of a
new file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec

from agy_host.contract.events import (
    Activity,
    FileDiff,
    PermissionActivity,
    PermissionOption,
    TextActivity,
    ThoughtActivity,
    ToolDoneActivity,
    ToolErrorActivity,
    ToolStartActivity,
    UsageActivity,
)
from agy_host.engine.textguard import CumulativeGuard
from agy_host.service.unattended import NOBODY
from agy_host_stream_json.usage import UsageSum, context_used
from agy_host_stream_json.wire import DeniedAction, Step, Usage

Emit = Callable[[Activity], None]

_KINDS: dict[str, str] = {
    "view_file": "read",
    "list_dir": "read",
    "read_resource": "read",
    "list_resources": "read",
    "grep_search": "search",
    "find_by_name": "search",
    "code_search": "search",
    "search_web": "search",
    "write_to_file": "edit",
    "replace_file_content": "edit",
    "multi_replace_file_content": "edit",
    "sed_file": "edit",
    "notebook_edit": "edit",
    "run_command": "execute",
    "send_command_input": "execute",
    "command_status": "execute",
    "read_url_content": "fetch",
    "open_browser_url": "fetch",
}
_PATH_KEYS = (
    "AbsolutePath",
    "TargetFile",
    "DirectoryPath",
    "FilePath",
    "File",
    "Path",
    "SearchPath",
    "SearchDirectory",
)
_TITLE_KEYS = ("CommandLine", *_PATH_KEYS, "Query", "Url", "name")
_CONTENT_KEYS = ("CodeContent", "Content", "FileContent")
_DENIAL = re.compile(r"denied permission|permission denied|user denied|not allowed to run|was denied", re.IGNORECASE)
#: ``denied_actions[].action`` -> the tools that ask for it.
_ACTION_TOOLS: dict[str, tuple[str, ...]] = {
    "command": ("run_command", "send_command_input"),
    "write_file": ("write_to_file", "replace_file_content", "multi_replace_file_content", "sed_file", "notebook_edit"),
    "read_file": ("view_file", "list_dir", "grep_search", "find_by_name"),
}


#: The answer agy gave a tool that needs permission (headless, it cannot ask).
AGY_DENIES = PermissionOption(option_id="reject", name="Deny", kind="reject_once")
#: Why, and how to allow: agy-host's policy never sees these requests.
DENIAL_REASON = (
    f"{NOBODY} (agy cannot ask for permission in stream-json mode): denied by agy. To allow: "
    "--permissions skip (skip_permissions=True in Python, `skip_permissions = true` in the config)"
)


def denial(call_id: str, title: str) -> PermissionActivity:
    """agy's own refusal of a tool, reported as a permission answer: the
    closing line names it and the turn exits 5, as a refusal does on ACP."""
    return PermissionActivity(
        call_id=call_id,
        title=title,
        options=[AGY_DENIES],
        selected=AGY_DENIES.option_id,
        policy="agy",
        reason=DENIAL_REASON,
    )


def tool_kind(name: str) -> str:
    return _KINDS.get(name, "other")


def error_text(value: Any) -> str:
    """agy's errors are strings, ``{"message": ...}`` or ``{"type", "message"}``."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        message = value.get("message")
        if isinstance(message, str) and message:
            return message
    return msgspec.json.encode(value).decode()


def output_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return msgspec.json.encode(value).decode()


def is_denial(message: str) -> bool:
    return bool(_DENIAL.search(message))


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


#: The tools headless agy denies unless permissions are skipped: commands,
#: and writes outside ``accept-edits`` (reads it runs; a denied one is rare).
_DENIED_COMMANDS = frozenset(_norm(name) for name in _ACTION_TOOLS["command"])
_DENIED_WRITES = frozenset(_norm(name) for name in _ACTION_TOOLS["write_file"])


class _Tool:
    __slots__ = ("args", "call_id", "denied", "done_empty", "kind", "name")

    def __init__(self, call_id: str, name: str, kind: str, args: dict[str, Any]) -> None:
        self.call_id = call_id
        self.name = name
        self.kind = kind
        self.args = args
        self.done_empty = False
        self.denied = False


def _locations(args: dict[str, Any]) -> list[str]:
    return [v for k in _PATH_KEYS if isinstance(v := args.get(k), str) and v]


def _title(args: dict[str, Any]) -> str:
    for key in _TITLE_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value if len(value) <= 200 else value[:199] + "…"
    return ""


def _diff(name: str, args: dict[str, Any]) -> FileDiff | None:
    if name != "write_to_file":
        return None
    path = args.get("TargetFile")
    content = next((args[k] for k in _CONTENT_KEYS if isinstance(args.get(k), str)), None)
    if isinstance(path, str) and content is not None:
        return FileDiff(path=path, new_text=content)
    return None


class StepMapper:
    """Stateful mapping of one turn's steps; activities go to ``emit``."""

    def __init__(self, emit: Emit, *, skip_permissions: bool = True, mode: str | None = None) -> None:
        self._emit = emit
        #: Without skip-permissions agy denies commands (and writes, outside
        #: ``accept-edits``), and on >= 1.2.17 says so only in the result, after
        #: a "done" step without output: such a "done" is held until then
        #: (:meth:`release`), so a denied call is never shown done first.
        self._held_tools: frozenset[str] = frozenset()
        if not skip_permissions:
            self._held_tools = _DENIED_COMMANDS | (frozenset() if mode == "accept-edits" else _DENIED_WRITES)
        self._held: dict[str, ToolDoneActivity] = {}
        #: One guard per agent_response step, in step order.
        self._texts: dict[str, CumulativeGuard] = {}
        self.usage = UsageSum()
        self._tools: dict[str, _Tool] = {}
        self._anon = 0
        #: Step types seen, with counts (doctor, tests); unseen types degrade here.
        self.seen: dict[str, int] = {}
        #: What agy said went wrong inside the turn (error_message steps,
        #: failed agent_response steps), for the outcome's message.
        self.errors: list[str] = []
        self.denied: list[str] = []

    @property
    def response(self) -> str:
        """Everything streamed so far (joined on demand, not per chunk)."""
        return "".join(guard.text for guard in self._texts.values())

    def _step_usage(self, usage: Usage) -> None:
        """A step's usage, added to the turn's running sum and reported at
        once: ``--max-tokens`` can then stop a long turn mid-way. The result's
        usage, when it comes, replaces the sum (it is agy's own account)."""
        self.usage.add(usage)
        counts = self.usage.counts()
        if counts is not None:
            counts.context_used = context_used(self.usage.last)
            self._emit(UsageActivity(turn=counts))

    def add_final(self, text: str) -> None:
        """A result's text that never streamed becomes the response."""
        self._texts.setdefault("result", CumulativeGuard()).feed(text)

    def step(self, step: Step) -> None:
        kind = step.step_type
        self.seen[kind] = self.seen.get(kind, 0) + 1
        if step.usage is not None:
            self._step_usage(step.usage)
        if kind == "agent_response":
            self._response(step)
        elif kind in ("tool", "subagent"):
            self._tool(step, kind)
        elif kind == "error_message":
            text = step.error_message or error_text(step.error)
            if text:
                self.errors.append(text)

    def _response(self, step: Step) -> None:
        text = step.text_delta if isinstance(step.text_delta, str) else step.response_text
        if text:
            key = str(step.step_index)
            guard = self._texts.get(key)
            if guard is None:
                guard = self._texts[key] = CumulativeGuard()
            delta = guard.feed(text)
            if delta:
                self._emit(TextActivity(delta=delta))
        if step.thought_text:
            self._emit(ThoughtActivity(delta=step.thought_text))
        if step.state == "ERROR":
            message = error_text(step.error) or step.error_message or ""
            if message:
                self.errors.append(message)

    def _call_id(self, step: Step) -> str:
        if step.step_index is not None:
            return f"step-{step.step_index}"
        self._anon += 1
        return f"step-x{self._anon}"

    def _tool(self, step: Step, kind: str) -> None:
        info = step.tool_info
        call_id = self._call_id(step)
        known = self._tools.get(call_id)
        if kind == "subagent":
            name = step.tool_name or "subagent"
            sub = step.subagent_info.get("subagents") if isinstance(step.subagent_info, dict) else None
            args: dict[str, Any] = {"subagents": sub} if isinstance(sub, list) else {}
        else:
            name = step.tool_name or (info.name if info and info.name else "") or "tool"
            args = dict(info.parameters) if info and isinstance(info.parameters, dict) else {}
        if known is None:
            known = _Tool(call_id, name, tool_kind(name), args)
            self._tools[call_id] = known
            self._start(known)
        elif args and args != known.args:
            known.args = args
            self._start(known)
        if step.state == "DONE":
            output = output_text(info.output) if info else ""
            if kind == "subagent" and not output:
                output = _subagent_summary(args.get("subagents"))
            known.done_empty = not output
            done = ToolDoneActivity(
                call_id=call_id,
                name=known.name,
                kind=known.kind,
                args=known.args,
                output=output,
                diff=_diff(known.name, known.args),
            )
            if known.done_empty and _norm(known.name) in self._held_tools:
                self._held[call_id] = done
            else:
                self._emit(done)
        elif step.state == "ERROR":
            message = (error_text(info.error) if info else "") or step.error_message or error_text(step.error)
            denied = is_denial(message)
            known.denied = denied
            if denied:
                self.denied.append(known.name)
                self._emit(denial(call_id, _title(known.args) or known.name))
            self._emit(
                ToolErrorActivity(call_id=call_id, name=known.name, message=message or "tool error", denied=denied)
            )

    def _start(self, tool: _Tool) -> None:
        self._emit(
            ToolStartActivity(
                call_id=tool.call_id,
                name=tool.name,
                kind=tool.kind,
                title=_title(tool.args),
                args=tool.args,
                locations=_locations(tool.args),
                diff=_diff(tool.name, tool.args),
            )
        )

    def apply_denied(self, actions: list[DeniedAction]) -> list[str]:
        """Mark the tools a result's ``denied_actions`` names as denied (their
        cards update in place); return the actions no tool matched."""
        unmatched: list[str] = []
        for action in actions:
            label = action.display_name or action.action or "?"
            names = {_norm(action.display_name)} if action.display_name else set()
            names |= {_norm(n) for n in _ACTION_TOOLS.get(action.action, ())}
            tool = next(
                (t for t in reversed(self._tools.values()) if t.done_empty and not t.denied and _norm(t.name) in names),
                None,
            )
            if tool is None:
                unmatched.append(label)
                self.denied.append(label)
                self._emit(denial(f"denied-{len(self.denied)}", label))
                continue
            tool.denied = True
            self._held.pop(tool.call_id, None)
            self.denied.append(tool.name)
            self._emit(denial(tool.call_id, _title(tool.args) or tool.name))
            self._emit(
                ToolDoneActivity(
                    call_id=tool.call_id, name=tool.name, kind=tool.kind, args=tool.args, output="", denied=True
                )
            )
        self.release()
        return unmatched

    def release(self) -> None:
        """Show the "done" cards held for agy's verdict (see ``__init__``):
        the result named no denial for them, or the turn ended without one."""
        held, self._held = self._held, {}
        for done in held.values():
            self._emit(done)


def _subagent_summary(subagents: Any) -> str:
    if not isinstance(subagents, list):
        return ""
    lines = []
    for sub in subagents:
        if isinstance(sub, dict):
            who = sub.get("role") or sub.get("type_name") or "subagent"
            conv = sub.get("conversation_id")
            lines.append(f"{who}" + (f" (conversation {conv})" if conv else ""))
    return "\n".join(lines)


__all__ = ["StepMapper", "error_text", "is_denial", "output_text", "tool_kind"]
