"""A session's conversation for a turn: kept, re-opened, resumed, or new.

Split from the driver because it is one decision with its own fallbacks:

* the session's open conversation is kept when the turn's profile (model,
  effort, cwd, permissions, host tools, MCP servers) and conversation id are
  the ones it was opened with; otherwise it is closed and re-opened on the
  same id with the new config (the change takes effect on that turn);
* a turn bound to a stored conversation resumes it (``RESUME``), with the
  system block that conversation was started with, so a resume after a
  restart sends the same bytes;
* a bound conversation the harness cannot continue is, under ``--resume``,
  the turn's end (``no_session``, exit 4); otherwise a new conversation with
  a notice saying so (``conversation-replaced``), as on the other engines;
* a conversation re-opened on its own id races the harness releasing the
  old socket ("Cascade ID ... is already in use"): opening is retried for
  :data:`IN_USE_WAIT_S`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from agy_host.contract.events import NoticeActivity
from agy_host.contract.tools import HostTool
from agy_host.engine.base import McpServerSpec
from agy_host.engine.lifecycle import Lifecycle
from agy_host.engine.turn import TurnFailed
from agy_host_harness import harness_config, pre_tool
from agy_host_harness.conversation import Conversation
from agy_host_harness.process import HarnessProcess
from agy_host_harness.turn import HarnessTurn

if TYPE_CHECKING:
    from agy_host.engine.trace import TraceTap
    from agy_host_harness.driver import HarnessDriver
    from agy_host_harness.engine import HarnessEngine

#: How long a re-opened conversation waits for the harness to release its id.
IN_USE_WAIT_S = 5.0
IN_USE = "is already in use"


def profile_of(
    engine: HarnessEngine, turn: HarnessTurn, tools: list[HostTool], servers: list[McpServerSpec]
) -> harness_config.Profile:
    """What the turn's conversation must be opened with (and the notices a
    setting the harness cannot honour deserves)."""
    req = turn.request
    model, effort, note = engine.catalog.resolve(req.model or engine.settings.model, req.effort or None)
    if note:
        turn.emit(NoticeActivity(level="warning", message=note, code="settings"))
    if req.additional_directories:
        turn.emit(
            NoticeActivity(
                level="warning",
                message="the harness works in the working directory only; --add-dir is not passed",
                code="add-dir",
            )
        )
    gate = engine.ctx.tool_gate
    return harness_config.Profile(
        model=model,
        effort=effort,
        cwd=req.cwd,
        policy=engine.ctx.permission_policy,
        skip_permissions=req.skip_permissions,
        host_tools=tuple(sorted(t.name for t in tools)),
        mcp=tuple(sorted(f"{s.name}:{','.join(s.offers)}" for s in servers)),
        pre_tool=gate.active,
        allowed=pre_tool.listed_allowed(gate.listed, harness_config.GATED_TOOLS),
    )


async def conversation_for(driver: HarnessDriver, turn: HarnessTurn, system_block: str) -> Conversation:
    """The conversation ``turn`` runs on (see the module docstring), registered
    with the driver and its reader started."""
    engine = driver.engine
    req = turn.request
    harness = await driver.harness_process()
    tools, servers = engine.ctx.tools(), engine.ctx.mcp_servers()  # asked once per turn
    profile = profile_of(engine, turn, tools, servers)
    current = driver.conversations.get(req.session)
    wanted = req.conversation_id
    if current is not None and not current.closed:
        if current.profile == profile and (wanted is None or wanted == current.cascade_id):
            return current
        driver.stats["reopens"] += 1
        driver.lifecycle.add("reopen", session=req.session, why="settings changed")
        wanted = wanted or current.cascade_id
        await current.aclose()
    fresh_block = system_block
    if wanted:
        system_block = engine.saved_system_block(wanted)

    def config_for(cascade_id: str | None, block: str) -> dict[str, Any]:
        return harness_config.build(
            settings=engine.settings,
            profile=profile,
            point=engine.endpoint,
            tools=tools,
            servers=servers,
            system_block=block,
            app_data_dir=str(engine.paths.app_data),
            cascade_id=cascade_id,
        )

    async def open_(config: dict[str, Any]) -> Conversation:
        return await open_retrying(
            harness,
            session=req.session,
            config=config,
            profile=profile,
            timeout_s=engine.settings.start_timeout_seconds,
            trace=driver.trace,
            lifecycle=driver.lifecycle,
        )

    try:
        conversation = await open_(config_for(wanted, system_block))
    except TurnFailed as exc:
        # The bound conversation is gone from the harness's storage (or
        # refused): under --resume that is the turn's end (exit 4), else a
        # new conversation, said in agy-host's words (the engines agree).
        if not wanted or exc.kind == "auth" or turn.aborted:
            raise
        driver.lifecycle.add("resume-failed", session=req.session, id=wanted, error=str(exc)[:300])
        if req.resume:
            raise TurnFailed(str(exc), "no_session") from exc
        turn.emit(
            NoticeActivity(
                level="warning",
                message=f"the harness could not continue conversation {wanted}; this turn starts a new "
                "conversation, without the earlier messages (pass --resume to fail instead)",
                code="conversation-replaced",
            )
        )
        wanted, system_block = None, fresh_block
        conversation = await open_(config_for(None, system_block))
    if wanted:
        driver.stats["resumes"] += 1
    else:
        driver.stats["conversations"] += 1
        engine.save_system_block(conversation.cascade_id, system_block)
    driver.lifecycle.add("conversation", session=req.session, id=conversation.cascade_id, resumed=bool(wanted))
    driver.conversations[req.session] = conversation
    driver.start_reader(conversation)
    return conversation


async def open_retrying(
    harness: HarnessProcess,
    *,
    session: str,
    config: dict[str, Any],
    profile: harness_config.Profile,
    timeout_s: float,
    trace: TraceTap | None,
    lifecycle: Lifecycle,
) -> Conversation:
    """Open, retrying while the harness still holds the same id: a
    conversation re-opened on its own id (new settings) races the harness
    releasing the old socket ("Cascade ID ... is already in use")."""
    deadline = trio.current_time() + IN_USE_WAIT_S
    while True:
        try:
            return await Conversation.open(
                harness, session=session, config=config, profile=profile, timeout_s=timeout_s, trace=trace
            )
        except TurnFailed as exc:
            if IN_USE not in str(exc) or trio.current_time() >= deadline:
                raise
            lifecycle.add("resume-retry", session=session, why="id still in use")
            await trio.sleep(0.05)


__all__ = ["IN_USE", "IN_USE_WAIT_S", "conversation_for", "open_retrying", "profile_of"]
