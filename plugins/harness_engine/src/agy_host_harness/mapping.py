"""From the harness's step updates to the host's activities.

* Answer text is ``source=MODEL, target=USER`` on the main trajectory (its id
  is the conversation's): each frame's ``textDelta`` is one delta. Thinking
  is ``thinkingDelta`` on any model step.
* A step aimed at the environment is one of the harness's own tools: a card
  per (trajectory, step index), started on first sight and settled when the
  step is DONE or ERROR, with its kind (read, edit, execute, search, fetch),
  edits with their diff, command output. A step whose action this engine
  does not know still gets a generic card. Host tools (``customTool``) get
  none: the host shows them as its own tool calls.
* Subagents run on their own trajectories: their tool cards are titled with
  the subagent, and their text is shown once, as a notice, when their step
  is done, never mixed into the answer.
* System steps in ERROR are the harness's own failures ("network issue"):
  kept for the outcome and shown as warnings.
* A tool the ``deny`` policy denied inside the harness (a static rule:
  nothing was asked) is reported as the policy's answer, as on every engine,
  then as a denied card: the same closing line and exit code 5 as an ACP
  agent's request that ``deny`` refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from agy_host.contract.events import (
    Activity,
    FileDiff,
    NoticeActivity,
    PermissionActivity,
    TextActivity,
    ThoughtActivity,
    ToolDoneActivity,
    ToolErrorActivity,
    ToolStartActivity,
)
from agy_host_harness import wire
from agy_host_harness.harness_config import HOOK_DENIAL, STATIC_DENIAL

#: Command output kept on a card (the rest is elided, the head and tail kept).
MAX_OUTPUT_CHARS = 16_000


class _Card(msgspec.Struct, kw_only=True):
    call_id: str
    name: str
    kind: str
    args: dict[str, Any]
    settled: bool = False


class StepMapper:
    def __init__(self, emit: Callable[[Activity], None], main_trajectory: str) -> None:
        self._emit = emit
        self.main = main_trajectory
        self._cards: dict[tuple[str, int], _Card] = {}
        self._sub_text: dict[tuple[str, int], list[str]] = {}
        self._answer: list[str] = []
        #: The harness's own failures this turn ("network issue ...").
        self.errors: list[str] = []
        self.tools = 0

    @property
    def response(self) -> str:
        return "".join(self._answer)

    def step(self, step: wire.StepUpdate) -> None:
        source, target = step.source, step.target
        if source == "SOURCE_USER":
            return  # the harness echoing our own input
        traj = step.trajectory_id or self.main
        main = traj == self.main
        if step.thinking_delta:
            self._emit(ThoughtActivity(delta=step.thinking_delta))
        if source == "SOURCE_SYSTEM" or (step.state == wire.STEP_ERROR and target != "TARGET_ENVIRONMENT"):
            self._error(step)
            return
        if target == "TARGET_USER":
            if main:
                if step.text_delta:
                    self._answer.append(step.text_delta)
                    self._emit(TextActivity(delta=step.text_delta))
            else:
                self._subagent_text(step, traj)
            return
        if target == "TARGET_ENVIRONMENT":
            self._tool(step, traj, main)

    # -- tools ------------------------------------------------------------------------

    def _tool(self, step: wire.StepUpdate, traj: str, main: bool) -> None:
        if step.custom_tool is not None:
            return  # a host tool: the host's own tool_use shows it
        key = (traj, step.step_index)
        card = self._cards.get(key)
        if card is None:
            name, kind, args, title, locations = describe(step)
            if not main:
                title = f"subagent {traj[:8]}: {title}"
            card = _Card(call_id=f"{traj[:12]}-{step.step_index}", name=name, kind=kind, args=args)
            self._cards[key] = card
            self.tools += 1
            self._emit(
                ToolStartActivity(
                    call_id=card.call_id, name=name, kind=kind, title=title, args=args, locations=locations
                )
            )
        if card.settled:
            return
        if step.state == wire.STEP_DONE:
            card.settled = True
            self._emit(
                ToolDoneActivity(
                    call_id=card.call_id,
                    name=card.name,
                    kind=card.kind,
                    args=card.args,
                    output=output_of(step),
                    diff=diff_of(step),
                )
            )
        elif step.state == wire.STEP_ERROR:
            card.settled = True
            message = step.error_message or (step.error.error_message if step.error else "") or "failed"
            denied = "denied" in message.lower() or "policy" in message.lower()
            self._emit(ToolErrorActivity(call_id=card.call_id, name=card.name, message=message, denied=denied))

    # -- text of others -------------------------------------------------------------------

    def _subagent_text(self, step: wire.StepUpdate, traj: str) -> None:
        key = (traj, step.step_index)
        if step.text_delta:
            self._sub_text.setdefault(key, []).append(step.text_delta)
        if step.state == wire.STEP_DONE:
            text = "".join(self._sub_text.pop(key, [])).strip()
            if text:
                self._emit(NoticeActivity(level="info", message=f"subagent {traj[:8]}: {text}", code="subagent"))

    def _error(self, step: wire.StepUpdate) -> None:
        message = step.error_message or (step.error.error_message if step.error else "") or step.text_delta
        if step.state != wire.STEP_ERROR or not message:
            return
        tool, _, rest = message.partition(" ")
        if rest == STATIC_DENIAL:
            # a tool the host's static policy denied inside the harness: shown as a denied card
            call_id = f"{(step.trajectory_id or self.main)[:12]}-{step.step_index}"
            self._denied_statically(call_id, tool)
            self._emit(
                ToolStartActivity(call_id=call_id, name=tool, kind="execute" if tool == "run_command" else "edit")
            )
            self._emit(ToolErrorActivity(call_id=call_id, name=tool, message=message, denied=True))
            return
        detail = step.text or message
        if HOOK_DENIAL in message or HOOK_DENIAL in detail:
            # agy-host's own refusal, through its pre-tool hook: the refused
            # permission (and the closing line) said it already, reason and all
            return
        if detail not in self.errors:
            self.errors.append(detail)
            self._emit(NoticeActivity(level="warning", message=f"harness: {detail}", code="harness-error"))

    def _denied_statically(self, call_id: str, tool: str) -> None:
        """The ``deny`` policy's answer, given ahead by a static rule, reported
        as if the harness had asked (what an ACP agent's request gets)."""
        from agy_host_harness.driver import REJECT, options_for

        self._emit(
            PermissionActivity(
                call_id=call_id,
                title=tool,
                options=options_for(tool),
                selected=REJECT.option_id,
                policy="deny",
                reason=f"{REJECT.kind} (a static rule inside the harness: nothing was asked)",
            )
        )


def describe(step: wire.StepUpdate) -> tuple[str, str, dict[str, Any], str, list[str]]:
    """(name, kind, args, title, locations) of a harness tool step."""
    if (a := step.run_command) is not None:
        return "run_command", "execute", {"command": a.command_line, "cwd": a.working_dir}, a.command_line, []
    if (e := step.edit_file) is not None:
        path = _path(e.file_path)
        return "edit_file", "edit", {"path": path}, f"Edit {path}", [path]
    if (c := step.create_file) is not None:
        path = _path(c.file_path)
        return "write_to_file", "edit", {"path": path}, f"Write {path}", [path]
    if (v := step.view_file) is not None:
        path = _path(v.file_path)
        return "view_file", "read", {"path": path}, f"Read {path}", [path]
    if (d := step.list_directory) is not None:
        path = _path(d.directory_path)
        return "list_dir", "read", {"path": path}, f"List {path}", [path]
    if (f := step.find_file) is not None:
        path = _path(f.directory_path)
        return "find_by_name", "search", {"path": path, "query": f.query}, f"Find {f.query} in {path}", [path]
    if (g := step.search_directory) is not None:
        path = _path(g.directory_path)
        return "grep_search", "search", {"path": path, "query": g.query}, f"Search {g.query!r} in {path}", [path]
    if (m := step.mcp_tool) is not None:
        args = _json_object(m.arguments_json)
        return f"mcp_{m.server_name}_{m.tool_name}", "other", args, f"{m.server_name}: {m.tool_name}", []
    if (w := step.search_web) is not None:
        return "search_web", "fetch", {"query": w.query}, f"Search the web: {w.query}", []
    if (u := step.read_url_content) is not None:
        return "read_url_content", "fetch", {"url": u.url}, f"Read {u.url}", []
    if (i := step.generate_image) is not None:
        return "generate_image", "other", {"prompt": i.prompt}, "Generate an image", []
    if step.invoke_subagent is not None:
        return "invoke_subagent", "think", {}, "Start a subagent", []
    if step.skill_lookup is not None:
        return "skill_lookup", "read", dict(step.skill_lookup), "Look up skills", []
    if step.run_workflow is not None:
        return "run_workflow", "execute", dict(step.run_workflow), "Run a workflow", []
    title = step.text or "harness tool"
    return "harness_tool", "other", {}, title, []


def output_of(step: wire.StepUpdate) -> str:
    if (a := step.run_command) is not None:
        out = a.combined_output.replace("\r\n", "\n")
        if len(out) > MAX_OUTPUT_CHARS:
            half = MAX_OUTPUT_CHARS // 2
            out = f"{out[:half]}\n... ({len(out) - MAX_OUTPUT_CHARS} characters elided) ...\n{out[-half:]}"
        return out + (f"\n(exit code {a.exit_code})" if a.exit_code else "")
    if (f := step.find_file) is not None:
        return f.output
    if (d := step.list_directory) is not None:
        return "\n".join(str(r.get("name", "")) for r in d.results)
    if (m := step.search_web) is not None:
        return m.summary
    if (u := step.read_url_content) is not None:
        return u.summary
    return ""


def diff_of(step: wire.StepUpdate) -> FileDiff | None:
    """Created files whole; edits as the changed region (the harness sends
    diff blocks, not whole files): old = kept + deleted lines, new = kept +
    inserted lines, block after block."""
    if (c := step.create_file) is not None:
        return FileDiff(path=_path(c.file_path), new_text=c.contents, old_text=None)
    if (e := step.edit_file) is not None and e.diff_block:
        old: list[str] = []
        new: list[str] = []
        for block in e.diff_block:
            for line in block.lines:
                if line.action != "LINE_ACTION_INSERT":
                    old.append(line.text)
                if line.action != "LINE_ACTION_DELETE":
                    new.append(line.text)
        return FileDiff(path=_path(e.file_path), old_text=_lines(old), new_text=_lines(new))
    return None


def _lines(lines: list[str]) -> str:
    """The block's lines as text (a written file's last line is the empty
    one after its final newline)."""
    return "\n".join(line.rstrip("\n") for line in lines)


def _path(uri: str) -> str:
    return uri[len("file://") :] if uri.startswith("file://") else uri


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = msgspec.json.decode(text or "{}")
    except (msgspec.DecodeError, RecursionError):
        return {"arguments": text}
    return value if isinstance(value, dict) else {"arguments": value}


__all__ = ["MAX_OUTPUT_CHARS", "StepMapper", "describe", "diff_of", "output_of"]
