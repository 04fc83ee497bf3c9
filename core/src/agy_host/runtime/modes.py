"""``--mode`` across engines: whose modes they are, and how they are shown.

The stream-json engine knows agy's two modes (``accept-edits``, ``plan``);
an ACP agent other than Antigravity advertises its own (the Gemini CLI:
``default``, ``autoEdit``, ``yolo``, ``plan``), and its driver passes any of
them and refuses the others with the list
(:attr:`~agy_host.engine.base.EngineCapabilities.agent_modes`). Where no
engine plans (Antigravity's ACP server, the harness), ``--mode plan`` is
refused before the turn starts, pointing at ``ask --mode plan``, which asks
the agy CLI for a review-only plan. The chat's ``/mode`` and ``doctor`` show
the modes the agent really offers (:meth:`~agy_host.engine.base.Engine.list_modes`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agy_host.engine.base import Engine


def plans(engine: Engine) -> bool:
    """Whether a turn may run in ``plan`` mode on ``engine`` (the agent may
    still refuse it when the modes are its own)."""
    caps = engine.capabilities
    return caps.plan_mode or caps.agent_modes


def no_plan_mode(engine: Engine) -> str:
    """Why ``--mode plan`` is refused on ``engine``, and what to do instead."""
    return (
        f"the {engine.ENGINE_NAME} engine has no plan mode ({engine.agent_label()}); for a review-only plan "
        "use `agy-host ask --mode plan PROMPT` (the agy CLI's plan mode)"
    )


__all__ = ["no_plan_mode", "plans"]
