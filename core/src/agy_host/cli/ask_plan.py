"""``ask --mode plan``: a review-only plan from the agy CLI.

The spec's committed exception: Antigravity's ACP server has no plan mode,
so a plan is asked of the agy CLI in print mode (``agy -p --mode plan``),
and the command says so when the selected engine is ACP. An ACP agent with
modes of its own (the Gemini CLI) plans in its own ``plan`` mode instead: a
normal turn (:mod:`agy_host.cli.ask_cmd`). Running agy is the
stream-json engine's job (:attr:`~agy_host.engine.base.Engine.print_mode_plan`,
in ``agy_host_stream_json.print_plan``); this module is the command around
it: the session binding (the stream-json engine's key, so a plan continues
that engine's conversation), the report, the exit code. Delegation guards
hold while agy runs: a bridge of this process registered in agy's global MCP
config must not be found by the delegated agy.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import trio

from agy_host.cli.exit_codes import ExitCode

STREAM_JSON = "stream-json"


def needs_engine() -> str:
    """Why a plan cannot be had without the stream-json engine, and how to install it."""
    from agy_host.engine.install_hint import install_hint

    return (
        "ask --mode plan runs the agy CLI in print mode (`agy -p --mode plan`) through the stream-json "
        f"engine, which is not installed: {install_hint('agy-host-stream-json')}"
    )


def ask_plan(host: Any, opts: Any) -> int:
    """``ask --mode plan`` end to end: planner, resume, run, report, binding."""
    from agy_host.cli.ask_report import AskReport, exit_code_of, print_report
    from agy_host.engine.base import EngineError, PlanRequest, load_engine_class
    from agy_host.runtime.store import SessionBinding, utc_now
    from agy_host.service.roundtrips import delegated_agent

    def report(status: str, **fields: Any) -> int:
        code = fields.pop("exit_code", None)
        rep = AskReport(
            status=status,  # type: ignore[arg-type]
            session=opts.session,
            engine="agy-cli",
            mode="plan",
            exit_code=exit_code_of(status) if code is None else code,  # type: ignore[arg-type]
            **{"text": "", "duration_s": 0.0, **fields},
        )
        print_report(rep, opts.fmt)
        return rep.exit_code

    engine_name = host.engine_flag or host.env.get("AGY_HOST_ENGINE") or host.config.engine or ""
    if engine_name == "acp":
        print(
            "agy-host: Antigravity's ACP server has no plan mode; asking the agy CLI for the plan (agy -p --mode plan)",
            file=sys.stderr,
            flush=True,
        )
    try:
        planner = getattr(load_engine_class(STREAM_JSON, extra=host.plugins.engines()), "print_mode_plan", None)
    except EngineError:
        planner = None
    if not callable(planner):
        return report("error", error=needs_engine())
    key = opts.session  # the stream-json engine's key: the bare session name
    binding = host.store.get(key)
    if opts.resume and binding is None:
        return report(
            "error", error=f"no such session {opts.session!r} for the agy CLI", exit_code=ExitCode.NO_SUCH_SESSION
        )
    request = PlanRequest(
        prompt=opts.prompt,
        cwd=opts.cwd,
        env=host.env,
        model=opts.model or host.config.model or None,
        effort=opts.effort or host.config.effort or None,
        conversation_id=binding.conversation_id if binding is not None else None,
        timeout_min=opts.timeout_min if opts.timeout_min is not None else host.config.turn.timeout_minutes,
        skip_permissions=bool(opts.skip_permissions),
    )
    started = time.monotonic()
    with delegated_agent():  # the delegated agy must not find the live bridge
        outcome = trio.run(planner, request)
    duration = time.monotonic() - started
    if outcome is None:
        return report("error", error=needs_engine())
    if outcome.status == "usage":
        return report("error", error=outcome.error, exit_code=ExitCode.USAGE)
    if outcome.conversation_id:
        host.store.set(
            key,
            SessionBinding(
                conversation_id=outcome.conversation_id,
                engine=STREAM_JSON,
                cwd=opts.cwd,
                updated_at=utc_now(),
            ),
        )
    resume = f'agy-host ask --mode plan --session {opts.session} "..."' if outcome.conversation_id else None
    return report(
        outcome.status,
        exit_code=128 + outcome.ended_by_signal if outcome.ended_by_signal else None,
        text=outcome.text,
        duration_s=duration,
        conversation_id=outcome.conversation_id,
        error=outcome.error or None,
        usage=outcome.usage,
        resume=resume,
    )


__all__ = ["ask_plan"]
