"""Turns that end before anything reaches the agent: the session was busy.

``SessionRuntime``, the Python API's warm sessions and the keeper all end
such a turn the same way, so a renderer, ``--format json`` and a program
see one shape whichever path the command took.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agy_host.contract.turn_result import TurnResult
from agy_host.exit_codes import ExitCode

if TYPE_CHECKING:
    from agy_host.contract.events import HostEvent
    from agy_host.engine.base import Engine
    from agy_host.runtime.host import Host
    from agy_host.runtime.turn_settings import TurnSettings


def busy_turn(
    host: Host, engine: Engine, emit: Callable[[HostEvent], None], *, session: str, settings: TurnSettings, error: str
) -> TurnResult:
    """A turn that cannot start while another holds the session: framed as
    a turn (``turn_start`` then ``turn_end`` with error kind ``busy``, sent to
    ``emit``) so every renderer and ``--format json`` consumer sees why. The
    Python API's warm sessions frame a busy warm agent the same way."""
    from agy_host.contract.events import TurnEnded, TurnStarted
    from agy_host.contract.turn_result import exit_code_for

    binding = host.store.get(engine.store_key(session))  # as last read: a hint only
    emit(
        TurnStarted(
            session=session,
            engine=engine.ENGINE_NAME,
            agent=engine.agent_label(),
            model=settings.model or host.config.model or "",
            conversation_id=binding.conversation_id if binding is not None else None,
            sandbox=engine.sandbox,
        )
    )
    emit(TurnEnded(stop_reason="error", duration_s=0.0, error=error, error_kind="busy"))
    return TurnResult(
        session=session,
        stop_reason="error",
        exit_code=exit_code_for("error", "busy"),
        duration_s=0.0,
        error=error,
        error_kind="busy",
    )


def gave_up_waiting(session: str, waited: float) -> TurnResult:
    """A turn that stopped waiting for its busy session (cancelled, Ctrl-C)
    before anything was sent: aborted, exit 130. A warm session's turn that
    leaves the keeper's queue ends the same way."""
    return TurnResult(
        session=session,
        stop_reason="aborted",
        exit_code=ExitCode.INTERRUPTED,
        duration_s=waited,
        error=f"stopped waiting for session {session!r} after {waited:.1f}s; nothing was sent",
    )


__all__ = ["busy_turn", "gave_up_waiting"]
