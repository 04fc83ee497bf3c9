"""Shared helpers: an engine built the way the host builds it, pointed at a
real agy-speaking executable (the fake agy, or a recording served by the
replay agent), and small readers of a turn's activities."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agy_host.config import Config
from agy_host.contract.events import (
    Activity,
    NoticeActivity,
    UsageActivity,
)
from agy_host.contract.permissions import PermissionDecision, PermissionRequest
from agy_host.contract.prompt import TextBlock
from agy_host.engine.base import EngineContext
from agy_host.engine.driver import TurnRequest
from agy_host_stream_json.engine import StreamJsonEngine


async def never_asked(_request: PermissionRequest) -> PermissionDecision:
    raise AssertionError("stream-json agy never asks for permission")


def make_engine(
    tmp: Path,
    env: dict[str, str],
    *,
    section: dict[str, Any] | None = None,
    warnings: list[str] | None = None,
    **config: Any,
) -> StreamJsonEngine:
    cfg = Config(**config)
    cfg.plugins["stream_json"] = {"kill_grace_seconds": 0.3, "exit_grace_seconds": 2.0, **(section or {})}
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("AGY_")}
    full_env.update(env)
    state = tmp / "state"
    state.mkdir(exist_ok=True)
    sink = warnings.append if warnings is not None else None
    ctx = EngineContext(config=cfg, state_dir=state, decide_permission=never_asked, env=full_env, warn=sink)
    return StreamJsonEngine(ctx)


def req(text: str = "hi", **kw: Any) -> TurnRequest:
    base: dict[str, Any] = {
        "session": "s1",
        "prompt": [TextBlock(text=text)],
        "cwd": os.getcwd(),
        "timeout_s": 20.0,
        "inactivity_s": 10.0,
    }
    base.update(kw)
    return TurnRequest(**base)


def of_type(acts: list[Activity], kind: type[Any]) -> list[Any]:
    return [a for a in acts if isinstance(a, kind)]


def notices(acts: list[Activity]) -> list[str]:
    return [a.message for a in acts if isinstance(a, NoticeActivity)]


def all_usages(acts: list[Activity]) -> list[UsageActivity]:
    """Every usage report of a turn: the running step sums, then agy's account."""
    return [a for a in acts if isinstance(a, UsageActivity)]


def usages(acts: list[Activity]) -> list[UsageActivity]:
    """The turn's last usage report (the one that stands), as a list: empty
    when the turn reported none."""
    return all_usages(acts)[-1:]


def flag(argv: list[str], name: str) -> str | None:
    """The value of ``--name value`` in an agy command line."""
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
    return None
