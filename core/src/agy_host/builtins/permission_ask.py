"""The ``ask`` permission policy: the person at the terminal decides.

It shows what the agent wants to do (title, tool, arguments, the diff of an
edit) and the agent's own options, and answers with the option the person
picked. Antigravity asks *questions* as permission requests
(``interaction_`` ids, every option an answer): they are shown as a question
and answered only by a person, never picked automatically.

Without a terminal the ``permissions.ask_fallback`` setting decides:
``allow`` or ``deny`` by option kind, or ``fail`` (``run`` refuses to start,
see :meth:`AskPolicy.check_ready`; a request that comes anyway is cancelled).
A question is cancelled in every fallback: a silent answer would be a lie.
A request refused so says how to allow it next time
(:mod:`agy_host.service.unattended`), since nobody chose that refusal.

It is also the default policy (nobody chose one, see
:meth:`~agy_host.config.PermissionsConfig.chosen`). Then it asks only where a
person is at the keyboard: a CLI command whose stdin is a terminal, never a
Python program (it has its ``permissions=`` callback for that); elsewhere it
takes the fallback at once, so a script, a pipe or CI fails closed instead of
prompting on a terminal nobody watches. With permissions skipped (the
turn's ``skip_permissions``) the default answers as ``auto`` does: skipping
was the user's choice.

The host bounds every decision with ``turn.permission_timeout_seconds`` and
an abort cancels the question (the terminal read is cancellable), so the
agent always gets an answer.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from agy_host import hookimpl
from agy_host.builtins.permission_policies import AutoPolicy
from agy_host.contract.permissions import (
    PermissionDecision,
    PermissionPolicy,
    PermissionRequest,
    choose_allow,
    choose_reject,
)
from agy_host.contract.rendering import SHOWN_LONG_CHARS, clip
from agy_host.service.remembered import ALWAYS_KINDS
from agy_host.service.terminal import (
    NoTerminal,
    Terminal,
    choose,
    deadline_note,
    open_terminal,
    terminal_available,
)
from agy_host.service.terminal_queue import asker
from agy_host.service.unattended import NO_CALLBACK, NOT_AT_A_TERMINAL, Front, refused_reason

if TYPE_CHECKING:
    from agy_host.config import Config
    from agy_host.contract.events import FileDiff

#: Lines of an edit's diff shown before the rest is summarised.
DIFF_LINES = 100
#: Said of an "always" option: agy-host keeps it for the session, whatever the agent does.
#: It says what choosing it *will* do ("remembered for this session" read as
#: if it already had been).
ALWAYS_NOTE = "  (if chosen, not asked again for this tool this session)"
#: Characters of the arguments shown.
ARGS_CHARS = 600


class AskPolicy:
    """Ask the person at the terminal; fall back per ``permissions.ask_fallback``."""

    name = "ask"
    #: It shows a question with the agent's own answers itself (the broker leaves it the asking).
    asks_person = True

    def __init__(self) -> None:
        self.fallback = "deny"
        self.env: Mapping[str, str] = os.environ
        #: How long the agent waits for an answer (said in the prompt).
        self.bound_s: float | None = None
        #: Who asks for the agent: a CLI command or a Python program (how a refusal says to allow).
        self.front: Front = "cli"
        #: Nobody chose a policy: this is the default, which asks only where a person is.
        self.by_default = False

    def configure(self, config: Config, env: Mapping[str, str]) -> None:
        """Called by the host once the policy is selected."""
        self.fallback = config.permissions.ask_fallback
        self.env = env
        self.bound_s = config.turn.permission_timeout_seconds

    def set_asking(self, front: Front, by_default: bool) -> None:
        """Called by the host once the policy is selected: who asks for the
        agent, and whether nobody chose this policy (the default)."""
        self.front = front
        self.by_default = by_default

    def nobody(self) -> str | None:
        """Why the default policy asks nobody in this command (a Python
        program, a command whose stdin is not a terminal), or ``None``."""
        if not self.by_default:
            return None
        if self.front == "python":
            return NO_CALLBACK
        return None if stdin_is_terminal() else NOT_AT_A_TERMINAL

    def check_ready(self) -> str | None:
        """Why a run must not start (``ask_fallback = "fail"`` and no
        terminal), or ``None``."""
        if self.fallback != "fail":
            return None
        problem = self.nobody() or terminal_available(self.env)
        if problem is None:
            return None
        return (
            f"permission policy 'ask' needs a terminal: {problem}. "
            "Set permissions.ask_fallback to 'allow' or 'deny' for runs without one."
        )

    async def decide(self, request: PermissionRequest) -> PermissionDecision:
        if self.by_default and request.skip_permissions and not request.is_question:
            # skipping permissions was chosen (--skip-permissions, skip_permissions = true) and
            # no policy: what an agent without a run-unasked mode still asks is allowed, as
            # --permissions skip does
            return await AutoPolicy().decide(request)
        nobody = None if request.is_question else self.nobody()  # questions are asked where they always were
        if nobody is not None:
            return self.without_terminal(request, nobody)
        try:
            async with open_terminal(self.env, asker(request.session, request.origin)) as term:
                return await self._ask(term, request)
        except NoTerminal as exc:
            return self.without_terminal(request, str(exc))

    def without_terminal(self, request: PermissionRequest, why: str) -> PermissionDecision:
        if request.is_question:
            return PermissionDecision(option_id=None, policy=self.name, reason=f"a question needs a person; {why}")
        if self.fallback == "fail":
            reason = refused_reason(why, "permissions.ask_fallback = fail, cancelled", self.front)
            return PermissionDecision(option_id=None, policy=self.name, reason=reason)
        if self.fallback == "allow":
            opt = choose_allow(request.options)
            if opt is None:
                return PermissionDecision(option_id=None, policy=self.name, reason=f"{why}; no allow option offered")
            return PermissionDecision(
                option_id=opt.option_id, policy=self.name, reason=f"{why}; fallback allow: {opt.kind}"
            )
        opt = choose_reject(request.options)
        outcome = f"fallback deny: {opt.kind}" if opt is not None else "no deny option offered, cancelled"
        reason = refused_reason(why, outcome, self.front)
        return PermissionDecision(option_id=opt.option_id if opt else None, policy=self.name, reason=reason)

    async def _ask(self, term: Terminal, request: PermissionRequest) -> PermissionDecision:
        if not request.options:
            return PermissionDecision(option_id=None, policy=self.name, reason="the agent offered no options")
        await term.write(render_request(request, waiting=term.waiting_note() + deadline_note(self.bound_s)))
        names = [opt.name or opt.option_id for opt in request.options]
        span = f"1-{len(names)}" if len(names) > 1 else "1"
        index = await choose(
            term, names, prompt=f"  {'answer' if request.is_question else 'choose'} [{span}, 0 for none]: "
        )
        if index is None:
            what = "did not answer" if request.is_question else "declined to choose"
            return PermissionDecision(option_id=None, policy=self.name, reason=f"the user {what}; cancelled")
        opt = request.options[index]
        return PermissionDecision(option_id=opt.option_id, policy=self.name, reason=f"the user chose {names[index]!r}")


def stdin_is_terminal() -> bool:
    """The command reads its stdin from a terminal: a person typed it (``sys.stdin``,
    so an in-process runner that replaced it is seen as it is)."""
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (OSError, ValueError):  # closed or detached
        return False


def render_request(request: PermissionRequest, waiting: str = "") -> str:
    """What the person sees before choosing: who asks (the session) and
    ``waiting``, the notes under the header (who else is queued for the
    terminal, how long the agent waits)."""
    who = asker(request.session, request.origin)
    lines: list[str] = [""]
    if request.is_question:
        lines.append(f"agy-host: {who} asks you a question")
        if waiting:
            lines.append(waiting.rstrip("\n"))
        lines.append(f"  {clip(request.title, SHOWN_LONG_CHARS) or '(no question text)'}")
        lines.extend(f"    {i}) {clip(opt.name or opt.option_id)}" for i, opt in enumerate(request.options, 1))
        lines.append("    0) do not answer")
        return "\n".join(lines) + "\n"
    lines.append(f"agy-host: {who} asks for permission")
    if waiting:
        lines.append(waiting.rstrip("\n"))
    lines.append(f"  {clip(request.title, SHOWN_LONG_CHARS) or '(untitled request)'}")
    tool = clip(request.tool_name or "tool")
    lines.append(f"  tool: {tool} ({clip(request.tool_kind)})")
    if request.args:
        text = json.dumps(request.args, ensure_ascii=False, sort_keys=True, default=str)
        if len(text) > ARGS_CHARS:
            text = text[:ARGS_CHARS] + " …"
        lines.append(f"  args: {text}")
    if request.diff is not None:
        lines.extend(f"  {line}" for line in render_diff(request.diff))
    lines.append("  options:")
    lines.extend(
        f"    {i}) {clip(opt.name or opt.option_id)}  [{opt.kind}]{ALWAYS_NOTE if opt.kind in ALWAYS_KINDS else ''}"
        for i, opt in enumerate(request.options, 1)
    )
    lines.append("    0) cancel (no answer)")
    return "\n".join(lines) + "\n"


def render_diff(diff: FileDiff, limit: int = DIFF_LINES) -> list[str]:
    """A unified diff of the edit, cut at ``limit`` lines."""
    old = diff.old_text or ""
    head = f"--- {diff.path} ({'new file' if diff.old_text is None else 'edit'})"
    body = list(
        difflib.unified_diff(
            old.splitlines(), diff.new_text.splitlines(), fromfile="before", tofile="after", lineterm="", n=2
        )
    )[2:]
    if len(body) > limit:
        body = [*body[:limit], f"… {len(body) - limit} more diff lines"]
    return [head, *body] if body else [head, "(no change)"]


@hookimpl
def agy_host_register_permission_policies(register: Callable[[PermissionPolicy], None]) -> None:
    register(AskPolicy())


__all__ = ["AskPolicy", "render_diff", "render_request", "stdin_is_terminal"]
