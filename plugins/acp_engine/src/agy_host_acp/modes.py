"""The modes an ACP agent advertises, and the check of a turn's ``--mode``.

An agent lists its modes in ``session/new``'s answer: the values of its
``mode`` config option, or the older ``modes`` field (``availableModes``).
Any of them is passed as it is, ``plan`` included (the Gemini CLI has one);
a mode the agent does not advertise is refused before the prompt, naming
the ones it does, so a typo never runs a turn in the agent's default mode.

Antigravity's server has its own three (``default``, ``auto_edit``,
``yolo``: permission modes), takes the agy CLI's ``accept-edits`` for
``auto_edit``, and has no plan mode: ``ask --mode plan`` asks the agy CLI.
"""

from __future__ import annotations

from agy_host.engine.base import AgentMode, ModeCatalog
from agy_host_acp import schema as s

#: The agy CLI's name for Antigravity's ``auto_edit`` (its default).
ANTIGRAVITY_ALIASES = {"accept-edits": "auto_edit"}


def catalog(setup: s.SessionSetup | None, *, antigravity: bool) -> ModeCatalog:
    """The modes ``setup`` advertises (the ``mode`` config option first)."""
    aliases = dict(ANTIGRAVITY_ALIASES) if antigravity else {}
    if setup is None:
        return ModeCatalog(modes=[], aliases=aliases)
    for option in setup.config_options or []:
        if option.id == "mode":
            modes = [
                AgentMode(id=str(entry["value"]), name=str(entry.get("name") or ""), description=_text(entry))
                for entry in option.options
                if isinstance(entry, dict) and "value" in entry
            ]
            current = str(option.current_value) if option.current_value is not None else None
            return ModeCatalog(modes=modes, current=current, aliases=aliases)
    if setup.modes is not None:
        modes = [AgentMode(id=m.id, name=m.name, description=m.description or "") for m in setup.modes.available_modes]
        return ModeCatalog(modes=modes, current=setup.modes.current_mode_id, aliases=aliases)
    return ModeCatalog(modes=[], aliases=aliases)


def _text(entry: dict[str, object]) -> str:
    description = entry.get("description")
    return description if isinstance(description, str) else ""


def refusal(mode: str, offered: ModeCatalog, label: str) -> str | None:
    """Why ``mode`` cannot be set on this agent, or ``None`` when it can."""
    ids = [m.id for m in offered.modes]
    if mode in ids or offered.aliases.get(mode) in ids:
        return None
    if not ids:
        return f"{label} advertises no modes; --mode {mode} cannot be set (leave --mode out)"
    names = ", ".join(ids) + "".join(f"; {alias} is {target}" for alias, target in sorted(offered.aliases.items()))
    plan = "; for a review-only plan: `agy-host ask --mode plan PROMPT` (the agy CLI)" if mode == "plan" else ""
    return f"{label} has no mode {mode!r}; it advertises: {names}{plan}"


__all__ = ["ANTIGRAVITY_ALIASES", "catalog", "refusal"]
