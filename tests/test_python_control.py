"""Mid-session control in the Python API (issue 27 item 4), against the
kit's fake ACP agent (a real process), under trio and asyncio: a model or
mode set between turns reaches the live agent, ``interrupt()`` from another
task ends the running turn with exit 130 and the session goes on, and
``s.usage`` / ``s.info`` say where the session stands.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import sniffio
import trio

import agy_host
from agy_host.api.status import add_usage
from agy_host.contract.events import UsageCounts
from agy_host.testing.agents import FakeAgent, fake_acp_agent_command
from agy_host.testing.isolation import isolated_env

LOOPS = ["trio", "asyncio"]


def run_on(loop: str, fn: Callable[[], Awaitable[Any]]) -> Any:
    if loop == "trio":
        return trio.run(fn)
    return asyncio.run(fn())  # type: ignore[arg-type]


async def sleep(seconds: float) -> None:
    if sniffio.current_async_library() == "trio":
        await trio.sleep(seconds)
    else:
        await asyncio.sleep(seconds)


class Home:
    def __init__(self, tmp_path: Path) -> None:
        self.cwd = tmp_path / "project"
        self.cwd.mkdir()
        self.env = isolated_env(tmp_path / "home", AGY_HOST_TTY="none")
        self.workdir = tmp_path / "agents"

    def agent(self, scenario: Any) -> FakeAgent:
        return fake_acp_agent_command(scenario, workdir=self.workdir)

    def open(self, agent: FakeAgent, **kw: Any) -> Any:
        return agy_host.open_session(agent=agent.command_line, env=self.env, cwd=self.cwd, **kw)


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path)


USAGE = {"prompt": [{"chunk": "ok"}, {"prompt_usage": {"inputTokens": 10, "outputTokens": 4, "totalTokens": 14}}]}


@pytest.mark.parametrize("loop", LOOPS)
def test_model_and_mode_set_between_turns_reach_the_live_agent(home: Home, loop: str) -> None:
    agent = home.agent(USAGE)

    async def main() -> Any:
        async with home.open(agent) as s:
            await s.run("one")
            before = s.info
            await s.set_model("fake-model-low")
            await s.set_mode("yolo")
            planned = s.info
            await s.run("two")
            return before, planned, s.info, s.usage

    before, planned, after, usage = run_on(loop, main)
    assert before.model is None and planned.model == "fake-model-low" and planned.mode == "yolo"
    assert after.turns == 2 and not after.turn_running and after.conversation_id, after
    assert after.engine == "acp" and after.warm is False, after
    applied = [m["params"] for m in agent.received() if m.get("method") == "session/set_config_option"]
    assert {"configId": "model", "value": "fake-model-low"} in [
        {k: p[k] for k in ("configId", "value")} for p in applied
    ], applied
    assert usage == UsageCounts(input_tokens=20, output_tokens=8, total_tokens=28), usage


@pytest.mark.parametrize("loop", LOOPS)
def test_interrupt_from_another_task_ends_the_turn_with_130_and_the_session_goes_on(home: Home, loop: str) -> None:
    agent = home.agent({"prompts": [[{"chunk": "working"}, {"sleep": 30}, {"chunk": "never"}], [{"chunk": "again"}]]})

    async def main() -> Any:
        async with home.open(agent) as s:
            seen: list[str] = []
            interrupted: list[bool] = []

            async def consume() -> None:
                async for event in s.prompt("long job"):
                    if isinstance(event, agy_host.TextDelta):
                        seen.append(event.delta)
                        interrupted.append(await s.interrupt())

            if sniffio.current_async_library() == "trio":
                with trio.fail_after(20):
                    await consume()
            else:
                await asyncio.wait_for(consume(), 20)
            first = s.result
            idle = await s.interrupt()
            second = await s.run("next")
            return first, second, seen, interrupted, idle

    first, second, seen, interrupted, idle = run_on(loop, main)
    assert interrupted == [True] and seen == ["working"], (seen, interrupted)
    assert first.exit_code == 130 and first.stop_reason == "aborted", first
    assert idle is False, "no turn runs: nothing to interrupt"
    assert second.exit_code == 0 and second.response == "again", second


def test_usage_adds_token_counts_and_costs_and_keeps_the_latest_context() -> None:
    one = UsageCounts(input_tokens=5, context_used=100, context_size=1000, cost_amount=0.5, cost_currency="USD")
    two = UsageCounts(input_tokens=7, output_tokens=1, context_used=180, cost_amount=0.25, cost_currency="USD")
    total = add_usage(add_usage(None, one), two)
    assert total == UsageCounts(
        input_tokens=12, output_tokens=1, context_used=180, context_size=1000, cost_amount=0.75, cost_currency="USD"
    )
    assert add_usage(total, None) is total


def test_a_warning_of_the_turn_reaches_the_agy_host_logger(home: Home, caplog: pytest.LogCaptureFixture) -> None:
    """A program that only awaits ``s.run()`` never sees the events; the
    warnings the CLI prints on stderr go to the ``agy_host`` logger."""
    agent = home.agent({"prompt": [{"update": {"sessionUpdate": "mystery_update"}}, {"chunk": "ok"}]})

    async def main() -> Any:
        async with home.open(agent) as s:
            return await s.run("go")

    with caplog.at_level("WARNING", logger="agy_host"):
        result = run_on("trio", main)
    assert result.exit_code == 0, result
    assert any("mystery_update" in r.getMessage() for r in caplog.records), caplog.records
