"""Warm agents in the Python API: ``open_session(session=NAME)`` runs on the
session's warm agent in a real keeper process, as ``agy-host run --session``
does (docs/sessions.md, docs/python.md), against the kit's fake ACP agent.

The program's own ``tools=`` run in this process (they record the pid they
ran in), its permission callback answers the warm agent's requests, and what
cannot cross to a keeper runs cold. Each test has its own HOME (so its own
keeper) with warm agents on, and ends with no keeper and no agent of its own
left running.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from warm_kit import Warm, read_until, wait_gone

import agy_host
from agy_host.keeper import wire
from agy_host.testing.agents import FakeAgent, fake_acp_agent_command

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")

LOOPS = ["trio", "asyncio"]


def run_on(loop: str, fn: Callable[[], Awaitable[Any]]) -> Any:
    if loop == "trio":
        return trio.run(fn)
    return asyncio.run(fn())  # type: ignore[arg-type]


class WarmHome(Warm):
    """The warm-agent suites' HOME (tests/warm_kit.py), seen from a program:
    sessions opened in this process, the keeper asked in-process (also from
    inside a running loop), and every agent the keeper ran checked gone."""

    def __init__(self, tmp_path: Path) -> None:
        super().__init__(tmp_path)
        self.agent_pids: set[int] = set()
        #: A keeper the test killed.
        self.killed = 0

    def agent(self, scenario: Any) -> FakeAgent:
        return fake_acp_agent_command(scenario, workdir=self.tmp / "agents")

    def open(self, agent: FakeAgent, **kw: Any) -> Any:
        return agy_host.open_session(agent=agent.command_line, env=self.env, cwd=self.cwd, **kw)

    async def astatus(self) -> wire.StatusReply | None:
        """The keeper's status; ``None`` when no keeper runs (none is started)."""
        from agy_host.keeper.client import request
        from agy_host.runtime.host import Host

        host = Host(env=self.env)
        try:
            reply = await request(host, wire.Status())
        finally:
            host.close()
        if not isinstance(reply, wire.StatusReply):
            return None
        self.agent_pids.update(s.agent_pid for s in reply.sessions if s.agent_pid)
        return reply

    async def until_running(self) -> wire.StatusReply:
        """The keeper's status once a turn runs on one of its sessions."""
        with trio.fail_after(30):
            while True:
                status = await self.astatus()
                if status is not None and any(i.turn_running for i in status.sessions):
                    return status
                await trio.sleep(0.05)

    def close(self) -> None:
        trio.run(self.astatus)  # the agents running now
        super().close()
        for pid in self.agent_pids:
            assert wait_gone(pid, 10), f"agent {pid} outlived its keeper"


@pytest.fixture
def warm(tmp_path: Path) -> Iterator[WarmHome]:
    home = WarmHome(tmp_path)
    try:
        yield home
    finally:
        home.close()


calls: list[tuple[int, int, int]] = []


def add(a: int, b: int = 2) -> int:
    """Add two numbers (in the process that offered the tool)."""
    calls.append((a, b, os.getpid()))
    return a + b


def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


ASK_THEN_ADD = {
    "prompt": [
        {"permission": {"branches": {"allow": [{"chunk": "ALLOWED / "}], "reject": [{"chunk": "DENIED / "}]}}},
        {"mcp_call": {"tool": "add", "arguments": {"a": 40}}},
        {"stop": "end_turn"},
    ]
}


@pytest.mark.parametrize("loop", LOOPS)
def test_the_second_open_session_runs_on_the_warm_agent_and_the_program_answers(warm: WarmHome, loop: str) -> None:
    """Two programs' sessions (two ``open_session`` blocks) on one name: one
    agent process, one ``initialize``; the agent's tool call runs ``add`` in
    this process and its permission request reaches this callback, both
    through the keeper."""
    agent = warm.agent(ASK_THEN_ADD)
    calls.clear()
    asked: list[agy_host.PermissionRequest] = []

    async def allow(request: agy_host.PermissionRequest) -> bool:
        asked.append(request)
        return True

    async def main() -> list[Any]:
        results = []
        for prompt in ("one", "two"):
            async with warm.open(agent, session="w", tools=[add], permissions=allow) as s:
                results.append(await s.run(prompt))
        return results

    first, second = run_on(loop, main)
    for result in (first, second):
        assert (result.exit_code, result.response) == (0, "ALLOWED / tool result: 42"), result.error
    assert first.conversation_id == second.conversation_id
    assert calls == [(40, 2, os.getpid())] * 2, "add ran here, once per turn"
    assert len(asked) == 2 and asked[0].options
    methods = agent.methods()
    assert methods.count("initialize") == 1 and "session/load" not in methods, methods
    assert methods.count("session/prompt") == 2
    [info] = warm.status()["sessions"]
    assert (info["session"], info["warm"], info["turns"]) == ("w", True, 2)


QUESTION_PERMISSION_TOOL = {
    "prompt": [
        {
            "request": {
                "method": "elicitation/create",
                "params": {
                    "sessionId": "<session>",
                    "mode": "form",
                    "message": "Which branch?",
                    "requestedSchema": {"type": "object", "properties": {"branch": {"type": "string"}}},
                },
                "branches": {"accept": [{"chunk": "ANSWERED / "}], "cancel": [{"chunk": "CANCELLED / "}]},
            }
        },
        *ASK_THEN_ADD["prompt"][:1],
        {"mcp_call": {"tool": "nap_then_shout", "arguments": {"text": "hi"}}},
        {"stop": "end_turn"},
    ]
}


@pytest.mark.parametrize("loop", LOOPS)
def test_on_a_warm_agent_every_callback_awaits_its_own_library(warm: WarmHome, loop: str) -> None:
    """Issue 28 item 5 through the keeper: the warm agent's question,
    permission request and tool call reach this program's callbacks, which
    await the program's own library (asyncio under asyncio) and see it running."""
    import sniffio

    agent = warm.agent(QUESTION_PERMISSION_TOOL)
    seen: list[tuple[str, str]] = []

    async def nap(kind: str) -> None:
        await (asyncio.sleep(0.01) if loop == "asyncio" else trio.sleep(0.01))
        seen.append((kind, sniffio.current_async_library()))

    async def on_question(question: agy_host.Question) -> dict[str, str]:
        await nap("on_question")
        return {"branch": "dev"}

    async def allow(request: agy_host.PermissionRequest) -> bool:
        await nap("permissions")
        return True

    async def nap_then_shout(text: str) -> str:
        """Upper-case the text, after a nap."""
        await nap("tool")
        return text.upper()

    async def main() -> Any:
        async with warm.open(
            agent, session="n", tools=[nap_then_shout], permissions=allow, on_question=on_question
        ) as s:
            return await s.run("go")

    result = run_on(loop, main)
    assert (result.exit_code, result.response) == (0, "ANSWERED / ALLOWED / tool result: HI"), result.error
    assert seen == [("on_question", loop), ("permissions", loop), ("tool", loop)]
    status = warm.status()
    assert [i["session"] for i in status["sessions"]] == ["n"], status


def test_another_tool_list_starts_cold_and_an_unnamed_session_is_kept_when_asked(warm: WarmHome) -> None:
    agent = warm.agent(ASK_THEN_ADD)

    async def main() -> None:
        async with warm.open(agent, session="t", tools=[add], permissions=lambda r: True) as s:
            assert (await s.run("one")).exit_code == 0
        before = await warm.astatus()
        async with warm.open(agent, session="t", tools=[add, shout], permissions=lambda r: True) as s:
            assert (await s.run("two")).exit_code == 0
        after = await warm.astatus()
        assert before is not None and after is not None
        assert before.sessions[0].agent_pid != after.sessions[0].agent_pid
        async with warm.open(agent, keep_alive=1, tools=[add], permissions=lambda r: True) as s:
            unnamed = s.name
            assert (await s.run("three")).exit_code == 0
        kept = await warm.astatus()
        assert kept is not None and unnamed in [i.session for i in kept.sessions]
        assert [i.keep_alive_s for i in kept.sessions if i.session == unnamed] == [60.0]

    trio.run(main)
    assert agent.methods().count("initialize") == 3, "a new tool list, and a new session, each start an agent"


class _InProcess:
    """A plugin object of this program: a keeper could not load it."""

    name = "in-process"


def test_what_cannot_cross_to_a_keeper_runs_cold_and_says_so(warm: WarmHome, caplog: pytest.LogCaptureFixture) -> None:
    agent = warm.agent("happy")

    async def main() -> None:
        async with warm.open(agent, session="p", plugins=[_InProcess()]) as s:
            assert (await s.run("one")).response == "HELLO"
        async with warm.open(agent, session="p", plugins=[_InProcess()], keep_alive=5) as s:
            assert (await s.run("two")).response == "HELLO"
        async with warm.open(agent, session="off", keep_alive=0) as s:
            assert (await s.run("three")).response == "HELLO"
        async with warm.open(agent) as s:  # unnamed
            assert (await s.run("four")).response == "HELLO"

    with caplog.at_level(logging.INFO, logger="agy_host"):
        trio.run(main)
    assert warm.status()["keeper"] is None, "nothing started a keeper"
    assert agent.methods().count("initialize") == 4
    said = [(r.levelno, r.getMessage()) for r in caplog.records if "without a warm agent" in r.getMessage()]
    assert [level for level, _ in said] == [logging.INFO, logging.WARNING], said
    assert "plugins=" in said[0][1]


def test_a_keeper_killed_mid_turn_is_keeper_lost(warm: WarmHome) -> None:
    agent = warm.agent("slow")

    async def main() -> None:
        async with warm.open(agent, session="k") as s, trio.open_nursery() as nursery:

            async def kill_the_keeper() -> None:
                while "session/prompt" not in agent.methods():
                    await trio.sleep(0.05)
                warm.killed = (await warm.until_running()).keeper_pid
                os.kill(warm.killed, signal.SIGKILL)

            nursery.start_soon(kill_the_keeper)
            with trio.fail_after(30), pytest.raises(agy_host.KeeperLost) as lost:
                await s.run("go")
            assert lost.value.exit_code == 1
            assert "keeper" in str(lost.value) and "binding is kept" in str(lost.value)

    trio.run(main)
    assert warm.killed and wait_gone(warm.killed, 10)
    assert warm.agent_pids and all(wait_gone(pid, 10) for pid in warm.agent_pids), "the agent ended with its keeper"


def test_a_busy_warm_agent_is_waited_for_or_refused_as_on_the_cold_path(
    warm: WarmHome, caplog: pytest.LogCaptureFixture
) -> None:
    """While one program's turn runs on the warm agent, ``wait=False`` ends
    at once as a busy turn (exit 7, ``SessionBusy``); a waiting turn that is
    cancelled, or a waiting command's Ctrl-C, leaves the keeper's queue at
    once with nothing sent, ever; the holder's own cancel reaches the agent
    through the keeper."""
    agent = warm.agent("cancel-graceful")
    seen: dict[str, Any] = {}

    def ctrl_c_while_queued() -> subprocess.CompletedProcess[str]:
        proc = warm.start("run", "--agent", agent.command_line, "--session", "b", "--format", "json", "ctrl-c")
        try:
            read_until(proc, "session-busy")
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
        finally:
            proc.kill()  # a command that did not end is not left behind
            proc.wait()
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    async def main() -> None:
        async with warm.open(agent, session="b") as holder, trio.open_nursery() as nursery:
            running = trio.CancelScope()

            async def hold() -> None:
                with running:
                    await holder.run("hold")
                seen["holder"] = holder.result

            nursery.start_soon(hold)
            await warm.until_running()
            async with warm.open(agent, session="b", wait=False) as other:
                seen["events"] = [type(e).__name__ async for e in other.prompt("refused")]
                seen["refused"] = other.result
                with pytest.raises(agy_host.SessionBusy):
                    await other.run("refused", check=True)
            async with warm.open(agent, session="b") as waiting:
                with trio.move_on_after(1.5):
                    await waiting.run("queued")
                seen["left"] = waiting.result
            seen["ctrl-c"] = await trio.to_thread.run_sync(ctrl_c_while_queued)
            running.cancel()
        async with warm.open(agent, session="b") as after, after.prompt("after") as turn:
            async for event in turn:  # the next turn in the keeper's queue runs: this one
                if isinstance(event, agy_host.TextDelta):
                    break

    with caplog.at_level(logging.WARNING, logger="agy_host"):
        trio.run(main)
    refused = seen["refused"]
    assert (refused.exit_code, refused.error_kind) == (7, "busy"), refused
    assert "session 'b'" in refused.error
    assert seen["events"] == ["TurnStarted", "TurnEnded"]
    left = seen["left"]
    assert (left.exit_code, left.stop_reason) == (130, "aborted") and "nothing was sent" in left.error, left
    assert any("is busy" in r.getMessage() and "wait=False" in r.getMessage() for r in caplog.records)
    ctrl_c = seen["ctrl-c"]
    assert ctrl_c.returncode == 130 and "nothing was sent" in ctrl_c.stdout, ctrl_c.stdout + ctrl_c.stderr
    assert "leaving the queue; this command's turn never ran" in ctrl_c.stderr, ctrl_c.stderr
    assert "interrupting the turn" not in ctrl_c.stderr, "it ran no turn to interrupt"
    sent = [json.dumps(r["params"]["prompt"]) for r in agent.requests("session/prompt")]
    assert len(sent) == 2 and "hold" in sent[0] and "after" in sent[1], "no queued turn reached the agent"
    assert (seen["holder"].stop_reason, seen["holder"].exit_code) == ("aborted", 130)
    assert "session/cancel" in agent.methods()


def test_wait_false_holds_in_the_keeper_too(warm: WarmHome) -> None:
    """The session's turn lock held by a cold program: the warm turn with
    ``wait=False`` ends at once in the keeper as busy, instead of waiting there."""
    agent = warm.agent("cancel-graceful")

    async def main() -> Any:
        async with warm.open(agent, session="c", keep_alive=0) as cold, trio.open_nursery() as nursery:
            running = trio.CancelScope()

            async def hold() -> None:
                with running:
                    await cold.run("hold")

            nursery.start_soon(hold)
            while "session/prompt" not in agent.methods():
                await trio.sleep(0.05)
            with trio.fail_after(20):
                async with warm.open(agent, session="c", wait=False) as other:
                    result = await other.run("refused")
            running.cancel()
        return result

    result = trio.run(main)
    assert (result.exit_code, result.error_kind) == (7, "busy"), result
    assert list(warm.sessions()) == ["c"], "the refused turn went to the keeper"
