"""``ask --mode plan``: a review-only plan from the agy CLI (``agy -p --mode plan``).

The spec's committed exception: the ACP server has no plan mode, so a plan
is asked of the CLI in print mode, whatever engine is selected. This engine
offers it as :attr:`~agy_host.engine.base.Engine.print_mode_plan`; core's
``ask`` command finds it by engine name and keeps the session binding. The CLI runs once per ask, in its
own process group (a timeout or Ctrl-C takes the whole tree down: SIGTERM,
then SIGKILL), with stdin closed. Its output is read as stream-json, which
carries the conversation id from the first line, so the ask is resumable
without guessing which conversation file appeared (the original scanned
agy's conversations directory for that).

argv, in order (the original's): ``--add-dir CWD``, ``$AGY_EXTRA_ARGS``,
``--model``, ``--effort``, ``--mode plan``, ``--dangerously-skip-permissions``
(only with ``--permissions skip``), ``--conversation ID`` (continuing),
``--print-timeout Nm``, ``--output-format stream-json``, ``-p PROMPT``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
from collections.abc import Mapping
from typing import Any

import trio

from agy_host.engine.base import PlanOutcome, PlanRequest
from agy_host.engine.textguard import CumulativeGuard

CONVERSATION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,127}$")
KILL_GRACE_S = 2.0
STDERR_TAIL = 4000


def agy_binary(env: Mapping[str, str]) -> str | None:
    value = env.get("AGY_BIN", "").strip()
    if value:
        return value
    return shutil.which("agy", path=env.get("PATH"))


def plan_argv(
    binary: str,
    prompt: str,
    *,
    cwd: str,
    env: Mapping[str, str],
    model: str | None = None,
    effort: str | None = None,
    conversation_id: str | None = None,
    timeout_min: float = 10.0,
    skip_permissions: bool = False,
) -> list[str]:
    if model is not None and model.startswith("-"):
        raise ValueError(f"refusing model {model!r}: it would be read as a flag")
    argv = [binary, "--add-dir", cwd, *shlex.split(env.get("AGY_EXTRA_ARGS", ""))]
    if model:
        argv += ["--model", model]
    if effort:
        argv += ["--effort", effort]
    argv += ["--mode", "plan"]
    if skip_permissions:
        argv.append("--dangerously-skip-permissions")
    if conversation_id and CONVERSATION_ID.match(conversation_id):
        argv += ["--conversation", conversation_id]
    if timeout_min > 0:
        argv += ["--print-timeout", f"{max(1, math.ceil(timeout_min))}m"]
    argv += ["--output-format", "stream-json", "-p", prompt]
    return argv


class _Reader:
    """The stream-json lines of one print-mode run."""

    def __init__(self) -> None:
        self.guard = CumulativeGuard()
        self.conversation_id: str | None = None
        self.result: dict[str, Any] | None = None
        self.plain: list[str] = []

    def line(self, raw: str) -> None:
        try:
            msg = json.loads(raw)
        except ValueError:
            if raw.strip():
                self.plain.append(raw)  # an older build printing text: keep it as the answer
            return
        if not isinstance(msg, dict):
            return
        event = msg.get("event")
        cid = msg.get("conversation_id")
        if event == "init" and isinstance(msg.get("init"), dict):
            cid = cid or msg["init"].get("conversation_id")
        if isinstance(cid, str) and cid:
            self.conversation_id = cid
        if event == "step_update" and isinstance(msg.get("step_update"), dict):
            step = msg["step_update"]
            text = step.get("text_delta")
            if step.get("step_type") == "agent_response" and isinstance(text, str):
                self.guard.feed(text)
        elif event == "result" and isinstance(msg.get("result"), dict):
            self.result = msg["result"]
            rid = self.result.get("conversation_id")
            if isinstance(rid, str) and rid:
                self.conversation_id = rid

    @property
    def text(self) -> str:
        if self.result is not None and isinstance(self.result.get("response"), str) and self.result["response"]:
            return str(self.result["response"])
        return self.guard.text or "\n".join(self.plain)


async def _kill(process: trio.Process) -> None:
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        with trio.move_on_after(wait):
            await process.wait()
            return


async def run_plan(argv: list[str], *, cwd: str, timeout_s: float, env: Mapping[str, str]) -> PlanOutcome:
    """Run ``agy -p`` to its end, its timeout, or Ctrl-C."""
    reader = _Reader()
    stderr = bytearray()
    state = {"status": "ok"}
    try:
        process = await trio.lowlevel.open_process(
            argv,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return PlanOutcome(status="error", error=f"failed to run {argv[0]}: {exc.strerror or exc}")

    async def read_out() -> None:
        assert process.stdout is not None
        buf = b""
        async for chunk in process.stdout:
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                reader.line(line.decode("utf-8", errors="replace"))
        if buf:
            reader.line(buf.decode("utf-8", errors="replace"))

    async def read_err() -> None:
        assert process.stderr is not None
        async for chunk in process.stderr:
            stderr.extend(chunk)
            del stderr[:-STDERR_TAIL]

    ended_by: list[signal.Signals] = []

    async def interrupts(cancel: trio.CancelScope, *, task_status: trio.TaskStatus[None]) -> None:
        # SIGTERM and SIGHUP end the run as Ctrl-C does (agy's group is
        # killed, never left running); a second signal leaves at once, after
        # a SIGKILL to the group.
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
            task_status.started()
            count = 0
            async for signum in signals:
                count += 1
                if signum != signal.SIGINT and not ended_by:
                    ended_by.append(signal.Signals(signum))
                if count > 1:
                    with contextlib.suppress(OSError):
                        os.killpg(process.pid, signal.SIGKILL)
                    os._exit(128 + ended_by[0] if ended_by else 130)
                state["status"] = "aborted"
                cancel.cancel()

    async with trio.open_nursery() as nursery:
        with trio.CancelScope() as run_scope:
            await nursery.start(interrupts, run_scope)
            if timeout_s > 0:
                run_scope.deadline = trio.current_time() + timeout_s
            async with trio.open_nursery() as readers:
                readers.start_soon(read_out)
                readers.start_soon(read_err)
                await process.wait()
                # A grandchild may keep the pipes open; what agy wrote is in by now.
                readers.cancel_scope.deadline = trio.current_time() + KILL_GRACE_S
        if run_scope.cancelled_caught:
            if state["status"] == "ok":
                state["status"] = "timeout"
            with trio.CancelScope(shield=True):
                await _kill(process)
        nursery.cancel_scope.cancel()
    err_text = stderr.decode("utf-8", errors="replace").strip()
    outcome = PlanOutcome(
        status=state["status"],
        text=reader.text,
        conversation_id=reader.conversation_id,
        exit_code=process.returncode,
        stderr=err_text,
    )
    result = reader.result or {}
    if isinstance(result.get("usage"), dict):
        outcome.usage = result["usage"]
    if outcome.status == "ok" and "print timeout" in err_text:
        # agy's own --print-timeout: 1.2.17+ ends with SUCCESS and partial output.
        outcome.status = "timeout"
    if outcome.status == "ok" and (process.returncode != 0 or result.get("status") == "ERROR"):
        outcome.status = "error"
        why = result.get("error") or err_text or "no output"
        outcome.error = f"agy exited with status {process.returncode}: {why}"
    elif outcome.status == "timeout":
        outcome.error = err_text if "print timeout" in err_text else f"agy did not finish within {timeout_s:g}s"
    elif outcome.status == "aborted" and ended_by:
        outcome.ended_by_signal = int(ended_by[0])
        outcome.error = f"ended by {ended_by[0].name}; agy was stopped"
    elif outcome.status == "aborted":
        outcome.error = "interrupted (Ctrl-C); agy was stopped"
    return outcome


async def print_mode_plan(request: PlanRequest) -> PlanOutcome:
    """The engine SDK's print-mode plan (``ask --mode plan``): ``agy -p --mode
    plan`` run once, to its end, its deadline, or Ctrl-C."""
    binary = agy_binary(request.env)
    if binary is None:
        return PlanOutcome(
            status="error",
            error="ask --mode plan runs the agy CLI in print mode (`agy -p --mode plan`), and no `agy` was found: "
            "put it on PATH or set AGY_BIN. (The ACP engine has no plan mode.)",
        )
    try:
        argv = plan_argv(
            binary,
            request.prompt,
            cwd=request.cwd,
            env=request.env,
            model=request.model,
            effort=request.effort,
            conversation_id=request.conversation_id,
            timeout_min=request.timeout_min,
            skip_permissions=request.skip_permissions,
        )
    except ValueError as exc:
        return PlanOutcome(status="usage", error=str(exc))
    # Our own deadline is a little later than agy's --print-timeout, so agy
    # gets to return its partial output first.
    t = request.timeout_min
    deadline_s = t * 60 + min(30.0, t * 30) if t > 0 else 0
    return await run_plan(argv, cwd=request.cwd, timeout_s=deadline_s, env=request.env)


__all__ = ["CONVERSATION_ID", "agy_binary", "plan_argv", "print_mode_plan", "run_plan"]
