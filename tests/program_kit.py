"""What the suites of a program's callbacks and hooks share: both loops, and
a HOME where a session is opened on the kit's fake ACP agent (a real
process), one agent per session, each scripted by its scenario."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import sniffio
import trio

import agy_host
from agy_host.testing.agents import FakeAgent, fake_acp_agent_command
from agy_host.testing.isolation import isolated_env

#: Every test of a program runs under both.
LOOPS = ["trio", "asyncio"]


def run_on(loop: str, fn: Callable[[], Awaitable[Any]]) -> Any:
    if loop == "trio":
        return trio.run(fn)
    return asyncio.run(fn())  # type: ignore[arg-type]


async def nap() -> None:
    """A real await of the program's own library (an asyncio future under
    asyncio: what trio's context cannot run)."""
    if sniffio.current_async_library() == "asyncio":
        await asyncio.sleep(0.01)
    else:
        await trio.sleep(0.01)


async def forever(ended: list[str]) -> None:
    """Await the program's own library for good; note the cancellation that
    ends it (``CancelledError`` under asyncio, ``Cancelled`` under trio)."""
    try:
        await nap()
        if sniffio.current_async_library() == "asyncio":
            await asyncio.sleep(3600)
        else:
            await trio.sleep(3600)
    except BaseException as exc:
        ended.append(type(exc).__name__)
        raise


class Home:
    """A private HOME (no terminal), a project folder, fake agents by scenario."""

    def __init__(self, tmp_path: Path, **env: str) -> None:
        self.tmp = tmp_path
        self.cwd = tmp_path / "project"
        self.cwd.mkdir()
        self.env = isolated_env(tmp_path / "home", AGY_HOST_TTY="none", **env)
        self.agents = 0

    def agent(self, scenario: Any) -> FakeAgent:
        self.agents += 1
        return fake_acp_agent_command(scenario, workdir=self.tmp / f"agent-{self.agents}")

    def bound(self, seconds: float) -> None:
        """``turn.permission_timeout_seconds`` in this HOME's config."""
        config = self.tmp / "home" / ".config" / "agy-host" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(f"[turn]\npermission_timeout_seconds = {seconds}\n")

    async def run(self, scenario: Any, *, check: bool = False, **kw: Any) -> agy_host.TurnResult:
        """One turn ("go") on a session of a new agent playing ``scenario``."""
        agent = self.agent(scenario)
        async with agy_host.open_session(agent=agent.command_line, env=self.env, cwd=self.cwd, **kw) as s:
            return await s.run("go", check=check)

    async def events(self, scenario: Any, **kw: Any) -> tuple[agy_host.TurnResult, list[agy_host.HostEvent]]:
        """:meth:`run`, with the turn's events."""
        agent = self.agent(scenario)
        async with agy_host.open_session(agent=agent.command_line, env=self.env, cwd=self.cwd, **kw) as s:
            events = [event async for event in s.prompt("go")]
            assert s.result is not None
            return s.result, events


__all__ = ["LOOPS", "Home", "forever", "nap", "run_on"]
