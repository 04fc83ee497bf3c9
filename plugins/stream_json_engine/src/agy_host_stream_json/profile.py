"""What a turn needs from the agy process: its command line, and whether the
running process can serve it.

agy takes its model, effort, mode and permissions as flags at start-up, so a
turn whose settings differ from the running process's needs a new process
("profile drift"). The causes are checked in a fixed order and the first
match is the reason doctor reports: cwd, model, effort, mode, permissions,
then the conversation (the turn starts a new one while the process is in one:
``conversation-reset``; the turn continues another one: ``conversation``),
then a turn deadline longer than the process's ``--print-timeout``.
"""

from __future__ import annotations

import math
import re

import msgspec

from agy_host_stream_json.config import StreamJsonConfig

MODES = ("accept-edits", "plan")
#: Host/ACP mode names that mean agy's default mode.
MODE_ALIASES = {"accept-edits": "accept-edits", "accept_edits": "accept-edits", "auto_edit": "accept-edits"}
MODE_ALIASES |= {"default": "accept-edits", "plan": "plan"}
#: agy resolves conversation ids itself; anything else is refused before a spawn.
CONVERSATION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,127}$")


class Profile(msgspec.Struct, frozen=True, kw_only=True):
    """The start-up settings of one agy process."""

    cwd: str
    model: str | None = None
    effort: str | None = None
    mode: str = "accept-edits"
    skip_permissions: bool = False
    #: agy's ``--print-timeout``, in seconds (``math.inf`` for 24h).
    print_timeout_s: float = 0.0
    #: More workspace roots (``--add-dir``, after the cwd's own).
    add_dirs: tuple[str, ...] = ()


def agy_mode(mode: str | None) -> tuple[str, str | None]:
    """agy's ``--mode`` and a notice when the host's mode had to be mapped."""
    if not mode:
        return "accept-edits", None
    mapped = MODE_ALIASES.get(mode.strip().lower())
    if mapped is None:
        return "accept-edits", f"agy has no mode {mode!r} (it has {', '.join(MODES)}); using accept-edits"
    return mapped, None


def print_timeout(turn_timeout_s: float, cfg: StreamJsonConfig) -> float:
    """agy's own deadline: ours plus a margin (agy's clock runs while parked)."""
    if turn_timeout_s <= 0:
        return math.inf
    return math.ceil(turn_timeout_s + cfg.print_timeout_margin_seconds)


def go_duration(seconds: float) -> str:
    """``--print-timeout`` takes a Go duration."""
    if math.isinf(seconds):
        return "24h"
    return f"{max(1, math.ceil(seconds))}s"


def argv(binary: str, profile: Profile, conversation_id: str | None, extra_args: list[str]) -> list[str]:
    """The command line, in the order the original engine used."""
    cmd = [binary, "--add-dir", profile.cwd]
    for extra in profile.add_dirs:
        cmd += ["--add-dir", extra]
    if profile.model:
        cmd += ["--model", profile.model]
    if profile.effort:
        cmd += ["--effort", profile.effort]
    cmd += ["--mode", profile.mode]
    if profile.skip_permissions:
        cmd.append("--dangerously-skip-permissions")
    if conversation_id:
        cmd += ["--conversation", conversation_id]
    cmd += ["--input-format", "stream-json", "--output-format", "stream-json", "--disable-slash-commands"]
    cmd += ["--print-timeout", go_duration(profile.print_timeout_s)]
    cmd += extra_args
    return cmd


def recycle_cause(
    running: Profile, wanted: Profile, running_conversation: str | None, wanted_conversation: str | None
) -> str | None:
    """Why the running process cannot serve the turn, or ``None`` to reuse it."""
    if running.cwd != wanted.cwd or running.add_dirs != wanted.add_dirs:
        return "cwd"
    if running.model != wanted.model:
        return "model"
    if running.effort != wanted.effort:
        return "effort"
    if running.mode != wanted.mode:
        return "mode"
    if running.skip_permissions != wanted.skip_permissions:
        return "permissions"
    if wanted_conversation is None and running_conversation is not None:
        return "conversation-reset"
    if wanted_conversation is not None and wanted_conversation != running_conversation:
        return "conversation"
    if wanted.print_timeout_s > running.print_timeout_s:
        return "print-timeout"
    return None


__all__ = [
    "CONVERSATION_ID",
    "MODES",
    "MODE_ALIASES",
    "Profile",
    "agy_mode",
    "argv",
    "go_duration",
    "print_timeout",
    "recycle_cause",
]
