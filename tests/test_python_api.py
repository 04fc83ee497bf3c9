"""The Python API (``agy_host.open_session`` and ``agy_host.run``) against real
agent processes: the kit's fake ACP agent (a separate executable speaking ACP
over pipes) and, for host tools, the MCP bridge it calls over real HTTP.

Every coroutine here runs twice, under trio and under asyncio (the runtime as
a trio guest on asyncio's loop), because a program may use either.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sniffio
import trio

import agy_host
from agy_host.testing.agents import FakeAgent, fake_acp_agent_command
from agy_host.testing.isolation import isolated_env

LOOPS = ["trio", "asyncio"]


def run_on(loop: str, fn: Callable[[], Awaitable[Any]]) -> Any:
    if loop == "trio":
        return trio.run(fn)
    return asyncio.run(fn())  # type: ignore[arg-type]


class Home:
    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path
        self.cwd = tmp_path / "project"
        self.cwd.mkdir()
        self.env = isolated_env(tmp_path / "home", AGY_HOST_TTY="none")
        self.workdir = tmp_path / "agents"

    def agent(self, scenario: Any = "happy", **options: Any) -> FakeAgent:
        return fake_acp_agent_command(scenario, workdir=self.workdir, **options)

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "agy_host.cli.main", *args]
        return subprocess.run(
            argv, env=self.env, cwd=self.cwd, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL
        )

    def open(self, agent: FakeAgent, **kw: Any) -> Any:
        return agy_host.open_session(agent=agent.command_line, env=self.env, cwd=self.cwd, **kw)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    yield Home(tmp_path)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_session_streams_typed_events_and_keeps_the_last_result(home: Home, loop: str) -> None:
    agent = home.agent("happy")
    seen: list[Any] = []

    async def main() -> Any:
        async with home.open(agent, session="work") as s:
            async for event in s.prompt("fix the failing test"):
                seen.append(event)
            first = s.result
            second = await s.run("again")
            return first, second, s.name, s.engine

    first, second, name, engine = run_on(loop, main)
    kinds = [type(e).__name__ for e in seen]
    assert kinds[0] == "TurnStarted" and kinds[-1] == "TurnEnded", kinds
    text = "".join(e.delta for e in seen if isinstance(e, agy_host.TextDelta))
    assert text == "HELLO" and first.response == "HELLO"
    assert (first.stop_reason, first.exit_code, first.session) == ("stop", 0, "work")
    assert first.conversation_id and second.conversation_id == first.conversation_id
    assert (name, engine) == ("work", "acp")
    # one agent process for both turns, and it is gone once the block ended
    assert agent.methods().count("initialize") == 1 and agent.methods().count("session/prompt") == 2


@pytest.mark.parametrize("loop", LOOPS)
def test_the_agents_plan_and_commands_are_typed_events(home: Home, loop: str) -> None:
    agent = home.agent("plan")

    async def main() -> list[Any]:
        async with home.open(agent) as s:
            return [
                e async for e in s.prompt("fix it") if isinstance(e, (agy_host.PlanUpdated, agy_host.CommandsUpdated))
            ]

    seen = run_on(loop, main)
    commands = [e for e in seen if isinstance(e, agy_host.CommandsUpdated)]
    assert [c.name for c in commands[0].commands] == ["compact", "review", "model"]
    assert commands[0].commands[0] == agy_host.AgentCommand(
        name="compact",
        description="Clear conversation history but keep a summary in context",
        input_hint="optional custom summarization instructions",
    )
    plans = [e.entries for e in seen if isinstance(e, agy_host.PlanUpdated)]
    assert [[entry.status for entry in plan] for plan in plans] == [
        ["in_progress", "pending", "pending"],
        ["completed", "in_progress", "pending"],
        ["completed", "completed", "completed"],
    ]
    assert plans[0][0] == agy_host.PlanEntry(content="Read the failing test", status="in_progress", priority="high")


def test_under_asyncio_no_thread_keeps_running(home: Home) -> None:
    agent = home.agent("happy")
    before = set(threading.enumerate())

    async def main() -> None:
        async with home.open(agent) as s:
            await s.run("hi")

    asyncio.run(main())
    extra = [t for t in threading.enumerate() if t not in before]
    # trio's guest mode keeps its idle I/O waiter (a daemon) for reuse; nothing else
    assert all(t.daemon and t.name.startswith("Trio thread") for t in extra), extra


def test_python_sessions_are_the_clis_and_the_reverse(home: Home) -> None:
    agent = home.agent("happy")

    async def from_python() -> str | None:
        async with home.open(agent, session="shared") as s:
            return (await s.run("hi")).conversation_id

    conversation = trio.run(from_python)
    listing = home.cli("sessions", "list", "--format", "json")
    assert listing.returncode == 0, listing.stderr
    assert "shared" in listing.stdout and str(conversation) in listing.stdout

    made = home.cli("run", "--agent", agent.command_line, "--session", "from-cli", "hi")
    assert made.returncode == 0, made.stderr

    async def resume() -> Any:
        async with home.open(agent, session="from-cli", resume=True) as s:
            return await s.run("again")

    resumed = trio.run(resume)
    assert resumed.exit_code == 0 and "session/load" in agent.methods()


def test_errors_are_typed_and_carry_the_exit_code(home: Home) -> None:
    agent = home.agent("happy")

    async def missing() -> None:
        async with home.open(agent, session="nope", resume=True):
            pass

    with pytest.raises(agy_host.SessionNotFound) as not_found:
        trio.run(missing)
    assert not_found.value.exit_code == 4 and "nope" in str(not_found.value)

    with pytest.raises(agy_host.UsageError) as bad_name:
        home.open(agent, session="a@b")
    assert bad_name.value.exit_code == 2

    async def unknown_engine() -> None:
        async with agy_host.open_session(engine="no-such-engine", env=home.env):
            pass

    with pytest.raises(agy_host.EngineUnavailable, match="no-such-engine"):
        trio.run(unknown_engine)


@pytest.mark.parametrize("loop", LOOPS)
def test_the_permission_callback_answers_and_check_raises_typed(home: Home, loop: str) -> None:
    asked: list[agy_host.PermissionRequest] = []

    async def refuse(request: agy_host.PermissionRequest) -> bool:
        asked.append(request)
        return False

    async def main(answer: Callable[..., Any], check: bool) -> Any:
        async with home.open(home.agent("permission"), permissions=answer) as s:
            return await s.run("go", check=check)

    allowed = run_on(loop, lambda: main(lambda request: True, False))
    assert allowed.response == "PERMIS" and allowed.exit_code == 0
    with pytest.raises(agy_host.PermissionDenied) as denied:
        run_on(loop, lambda: main(refuse, True))
    assert denied.value.exit_code == 5 and denied.value.result.response == "DENIED"
    assert asked and asked[0].options


@pytest.mark.parametrize("loop", LOOPS)
def test_leaving_the_block_mid_turn_aborts_it_and_keeps_the_binding(home: Home, loop: str) -> None:
    agent = home.agent("cancel-graceful")

    async def main() -> Any:
        async with home.open(agent, session="stopped") as s:
            async with s.prompt("go") as turn:
                async for event in turn:
                    if isinstance(event, agy_host.TextDelta) and event.delta == "tick":
                        break  # leaving the block early aborts the turn
            closed = turn.result
            async for event in s.prompt("go"):
                if isinstance(event, agy_host.TextDelta) and event.delta == "tick":
                    break  # a bare loop left early: aborted when the session closes
        return closed, s.result

    closed, result = run_on(loop, main)
    assert closed.stop_reason == "aborted" and closed.exit_code == 130
    assert result.stop_reason == "aborted" and result.exit_code == 130
    assert agent.methods().count("session/cancel") == 2
    listing = home.cli("sessions", "list", "--format", "json")
    assert "stopped" in listing.stdout


@pytest.mark.parametrize("loop", LOOPS)
def test_cancelling_the_task_aborts_the_turn(home: Home, loop: str) -> None:
    agent = home.agent("cancel-graceful")
    results: list[Any] = []

    async def turn(s: Any) -> None:
        async for _ in s.prompt("go"):
            pass

    async def main() -> None:
        async with home.open(agent, session="cancelled") as s:
            if loop == "trio":
                with trio.move_on_after(1.0):
                    await turn(s)
            else:
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(turn(s), 1.0)
            results.append(s.result)
            # the session goes on after a cancelled turn
            async with s.prompt("again") as again:
                async for event in again:
                    if isinstance(event, agy_host.TextDelta):
                        break
            results.append(again.result)

    run_on(loop, main)
    assert results[0].stop_reason == "aborted" and results[1].stop_reason == "aborted"
    assert results[1].response.startswith("C1")
    assert agent.methods().count("session/cancel") == 2
    assert agent.methods().count("session/prompt") == 2


def add(a: int, b: int = 2) -> int:
    """Add two numbers.

    Args:
        a: the first number
        b: the second number
    """
    return a + b


async def shout(text: str) -> str:
    """Upper-case the text (after a checkpoint of the program's own loop)."""
    if sniffio.current_async_library() == "asyncio":
        await asyncio.sleep(0)
    else:
        await trio.lowlevel.checkpoint()
    return text.upper()


@pytest.mark.parametrize("loop", LOOPS)
def test_python_functions_are_host_tools(home: Home, loop: str) -> None:
    script = {
        "prompt": [
            {"mcp_call": {"tool": "add", "arguments": {"a": 40}}},
            {"chunk": " / "},
            {"mcp_call": {"tool": "shout", "arguments": {"text": "hi"}}},
            {"chunk": " / "},
            {"mcp_call": {"tool": "add", "arguments": {"a": "x"}}},
            {"stop": "end_turn"},
        ]
    }
    agent = home.agent(script)

    async def main() -> Any:
        async with home.open(agent, tools=[add, shout]) as s:
            return await s.run("go")

    result = run_on(loop, main)
    assert result.exit_code == 0, result.error
    assert "tool result: 42 / tool result: HI / " in result.response
    assert "invalid arguments for add" in result.response
    [new] = agent.requests("session/new")
    assert [server["name"] for server in new["params"]["mcpServers"]] == ["agy-host-bridge"]


def test_tool_schemas_come_from_type_hints_and_docstrings() -> None:
    from agy_host.runtime.python_tools import tool_from_function

    tool = tool_from_function(add)
    assert tool.description == "Add two numbers."
    assert tool.input_schema["required"] == ["a"]
    assert tool.input_schema["properties"]["a"] == {"type": "integer", "description": "the first number"}
    assert tool.input_schema["properties"]["b"]["default"] == 2
    with pytest.raises(TypeError, match="name"):
        tool_from_function(lambda: None)


def test_run_blocks_and_returns_the_result(home: Home) -> None:
    agent = home.agent("happy")
    r = agy_host.run("summarise README.md", agent=agent.command_line, env=home.env, cwd=home.cwd)
    assert (r.response, r.stop_reason, r.exit_code) == ("HELLO", "stop", 0)
    assert r.session.startswith("py-") and r.conversation_id
    shown = json.loads(home.cli("sessions", "list", "--format", "json").stdout)
    assert r.session in json.dumps(shown)


def test_a_failing_agent_is_an_error_with_its_own_words(home: Home) -> None:
    agent = home.agent("prompt-error")
    r = agy_host.run("go", agent=agent.command_line, env=home.env, cwd=home.cwd)
    assert r.exit_code == 1 and r.error
    with pytest.raises(agy_host.TurnError) as failed:
        agy_host.run("go", agent=agent.command_line, env=home.env, cwd=home.cwd, check=True)
    assert failed.value.exit_code == 1 and failed.value.agent_text == r.error


def test_open_session_outside_an_event_loop_says_what_to_use(home: Home) -> None:
    opener = home.open(home.agent("happy"))

    async def enter() -> None:
        async with opener:
            pass

    # a coroutine driven by hand has no async library
    coro = enter()
    with pytest.raises(agy_host.UsageError, match="run\\(\\)"):
        coro.send(None)
    coro.close()
    assert os.environ is not None


CTRL_C_SCRIPT = """
import asyncio, os, signal, sys, trio
import agy_host

agent, loop = sys.argv[1], sys.argv[2]


async def main():
    async with agy_host.open_session(agent=agent, session="ctrl-c") as s:
        async for event in s.prompt("go"):
            if isinstance(event, agy_host.TextDelta):
                os.kill(os.getpid(), signal.SIGINT)


try:
    trio.run(main) if loop == "trio" else asyncio.run(main())
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(130)
"""


@pytest.mark.parametrize("loop", LOOPS)
def test_ctrl_c_aborts_the_turn_and_keeps_the_binding(home: Home, loop: str, tmp_path: Path) -> None:
    agent = home.agent("cancel-graceful")
    script = tmp_path / "ctrl_c.py"
    script.write_text(CTRL_C_SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script), agent.command_line, loop],
        env=home.env,
        cwd=home.cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 130 and "KeyboardInterrupt" in proc.stdout, proc.stderr
    assert "session/cancel" in agent.methods()
    assert "ctrl-c" in home.cli("sessions", "list", "--format", "json").stdout
