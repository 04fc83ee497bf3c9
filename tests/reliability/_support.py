"""What the reliability tests share: engines built the way the host builds
them, pointed at real agent executables; turn readers; process inspection
through ``/proc``; the purpose-built agents next to this file.

Both engines are driven through the same few helpers so that every fault
test is written once and parametrized over ``acp`` and ``stream-json``.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from agy_host.config import Config
from agy_host.contract.events import Activity, NoticeActivity
from agy_host.contract.permissions import PermissionDecision, PermissionRequest
from agy_host.contract.prompt import TextBlock
from agy_host.engine.base import Engine, EngineContext, McpServerSpec
from agy_host.engine.driver import TurnDriver, TurnRequest

AGENTS = Path(__file__).resolve().parent / "agents"
ACP_RAW = AGENTS / "acp_raw_agent.py"
AGY_RAW = AGENTS / "raw_agy.py"
ENGINES = ("acp", "stream-json")


async def cancel_everything(request: PermissionRequest) -> PermissionDecision:
    return PermissionDecision(option_id=None, policy="reliability", reason="tests allow nothing")


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGY_")}
    env["AGY_HOST_KEEP_ALIVE_MINUTES"] = "0"  # cold unless a test asks: no keeper outlives it
    env.update(extra or {})
    return env


def wrapper_script(path: Path, argv: list[str], *, prelude: str = "", exec_: bool = True) -> Path:
    """A ``sh`` script running ``argv`` plus its own arguments: how the
    stream-json engine is pointed at a fake ``agy`` (``AGY_BIN``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    run = f'{"exec " if exec_ else ""}{shlex.join(argv)} "$@"'
    path.write_text(f"#!/bin/sh\n{prelude}{run}\n")
    path.chmod(0o755)
    return path


def acp_engine(
    tmp: Path,
    command: list[str] | str,
    *,
    mcp: list[McpServerSpec] | None = None,
    **knobs: float,
) -> Engine:
    """The ACP engine spawning ``command`` (small timers, overridable by name)."""
    from agy_host_acp.engine import AcpEngine

    cfg = Config()
    cfg.acp.cancel_grace_seconds = knobs.pop("cancel_grace_seconds", 0.5)
    cfg.acp.initialize_timeout_seconds = knobs.pop("initialize_timeout_seconds", 10.0)
    cfg.acp.session_timeout_seconds = knobs.pop("session_timeout_seconds", 10.0)
    cfg.acp.kill_grace_seconds = knobs.pop("kill_grace_seconds", 0.3)
    assert not knobs, knobs
    state = tmp / "state"
    state.mkdir(parents=True, exist_ok=True)
    line = command if isinstance(command, str) else shlex.join(command)
    ctx = EngineContext(
        config=cfg,
        state_dir=state,
        decide_permission=cancel_everything,
        mcp_servers=lambda: list(mcp or []),
        agent=line,
        env=clean_env(),
    )
    return AcpEngine(ctx)


def stream_json_engine(tmp: Path, agy_bin: Path | str, **knobs: float) -> Engine:
    """The stream-json engine with ``agy_bin`` as its ``agy``."""
    from agy_host_stream_json.engine import StreamJsonEngine

    cfg = Config()
    cfg.plugins["stream_json"] = {
        "kill_grace_seconds": knobs.pop("kill_grace_seconds", 0.3),
        "exit_grace_seconds": knobs.pop("exit_grace_seconds", 2.0),
    }
    assert not knobs, knobs
    state = tmp / "state"
    state.mkdir(parents=True, exist_ok=True)
    ctx = EngineContext(
        config=cfg, state_dir=state, decide_permission=cancel_everything, env=clean_env({"AGY_BIN": str(agy_bin)})
    )
    return StreamJsonEngine(ctx)


def raw_engine(engine: str, tmp: Path, mode: str, arg: int = 0, **knobs: float) -> Engine:
    """An engine whose agent is this folder's raw agent for ``engine`` playing ``mode``."""
    if engine == "acp":
        return acp_engine(tmp, [sys.executable, str(ACP_RAW), mode, str(arg)], **knobs)
    agy = wrapper_script(tmp / "bin" / "agy", [sys.executable, str(AGY_RAW), mode, str(arg)])
    return stream_json_engine(tmp, agy, **knobs)


@asynccontextmanager
async def driver(engine: Engine) -> AsyncIterator[TurnDriver]:
    async with engine.open_driver() as drv:
        yield drv


def request(cwd: Path | str, text: str = "hi", **fields: Any) -> TurnRequest:
    values: dict[str, Any] = {
        "session": "rel",
        "prompt": [TextBlock(text=text)],
        "cwd": str(cwd),
        "timeout_s": 60.0,
        "inactivity_s": 30.0,
    }
    values.update(fields)
    return TurnRequest(**values)


def notices(acts: list[Activity]) -> list[str]:
    return [a.message for a in acts if isinstance(a, NoticeActivity)]


# -- processes -----------------------------------------------------------------------


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return raw[raw.rindex(")") + 2 :].split()  # fields from "state" on


def pid_running(pid: int) -> bool:
    """Alive and not a zombie."""
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is ``pgid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat(int(entry.name))
        if fields is not None and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            found.append(int(entry.name))
    return found


async def wait_until(predicate: Callable[[], bool], seconds: float = 10.0) -> bool:
    with trio.move_on_after(seconds):
        while not predicate():
            await trio.sleep(0.02)
        return True
    return predicate()
