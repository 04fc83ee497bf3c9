"""Sessions from code (issue 27 item 5): ``list_sessions``, ``get_session``,
``delete_session`` and ``fork_session`` over the store ``agy-host sessions``
shows, against real agent processes (the kit's fake ACP agent and fake
``agy``), under trio and asyncio. Sessions made by ``agy_host`` are the
CLI's and the reverse; a fork is the agent's ``session/fork``, and an
engine or agent without one says so.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import sniffio
import trio
from acp_cli import agy_host as agy_host_cli
from program_kit import LOOPS, Home, run_on

import agy_host
from agy_host.contract.events import UsageCounts
from agy_host.exit_codes import ExitCode

USAGE = {"prompt": [{"echo": "re: "}, {"prompt_usage": {"inputTokens": 10, "outputTokens": 4, "totalTokens": 14}}]}
FORKS = {"sessionCapabilities": {"fork": {}}}


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path)


def cli(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    """``agy-host ARGS`` in the same HOME (so the same store), the ACP engine selected."""
    return agy_host_cli(home.tmp, *args)


@pytest.mark.parametrize("loop", LOOPS)
def test_sessions_made_by_a_program_and_by_the_cli_are_one_store(home: Home, loop: str) -> None:
    agent = home.agent(USAGE)
    made = cli(home, "run", "--agent", agent.command_line, "--session", "from-cli", "hello from the cli")
    assert made.returncode == 0, made.stderr

    async def main() -> Any:
        async with agy_host.open_session(agent=agent.command_line, env=home.env, cwd=home.cwd, session="work") as s:
            await s.run("one")
            await s.run("two")
        # plain functions, called from inside the program's loop
        return agy_host.list_sessions(env=home.env), agy_host.get_session("work", env=home.env)

    listed, work = run_on(loop, main)
    by_name = {info.name: info for info in listed}
    assert set(by_name) == {"from-cli", "work"}, by_name
    info = by_name["work"]
    assert info.named and info.turns == 2 and info.engines == ["acp"], info
    assert info.cwd == str(home.cwd) and info.last_used, info
    [(key, conversation)] = info.conversation_ids.items()
    assert key.startswith("work@acp") and conversation, info
    assert info.usage == UsageCounts(input_tokens=20, output_tokens=8, total_tokens=28), info.usage
    assert by_name["from-cli"].turns == 1 and by_name["from-cli"].usage == UsageCounts(
        input_tokens=10, output_tokens=4, total_tokens=14
    )

    assert isinstance(work, agy_host.SessionDetail) and work.turns == 2
    assert [(e.prompt, e.response, e.stop_reason) for e in work.entries] == [
        ("one", "re: one", "stop"),
        ("two", "re: two", "stop"),
    ], work.entries
    first = work.entries[0]
    assert first.usage == UsageCounts(input_tokens=10, output_tokens=4, total_tokens=14), first
    assert first.time.endswith("Z") and first.duration_s is not None and first.engine == "acp", first
    assert first.conversation_id == conversation and first.cwd == str(home.cwd), first

    shown = cli(home, "sessions", "list", "--format", "json")
    doc = json.loads(shown.stdout)
    assert {s["name"]: s["turns"] for s in doc["sessions"]} == {"from-cli": 1, "work": 2}, doc
    assert {s["name"]: s["usage"]["total_tokens"] for s in doc["sessions"]} == {"from-cli": 14, "work": 28}

    agy_host.delete_session("work", env=home.env)
    assert "work" not in cli(home, "sessions", "list").stdout
    with pytest.raises(agy_host.SessionNotFound, match="no such session 'work'"):
        agy_host.get_session("work", env=home.env)
    with pytest.raises(agy_host.SessionNotFound):
        agy_host.delete_session("work", env=home.env)
    removed = cli(home, "sessions", "rm", "from-cli")
    assert removed.returncode == 0 and "and its transcript" in removed.stdout, removed.stderr
    assert agy_host.list_sessions(env=home.env) == []


def test_list_sessions_takes_the_clis_filters(home: Home) -> None:
    """``cwd=``, ``agent=`` and ``all=`` select as ``sessions list --cwd``,
    ``--agent`` and ``--all`` do: unnamed runs (a program's ``run()``
    without ``session=``) show the latest five unless ``all=True``."""
    agent = home.agent("echo")
    other = home.tmp / "elsewhere"
    other.mkdir()
    for i in range(6):
        agy_host.run(f"run {i}", agent=agent.command_line, env=home.env, cwd=home.cwd)
    agy_host.run("named", agent=agent.command_line, env=home.env, cwd=other, session="there")

    default = agy_host.list_sessions(env=home.env)
    assert [i.named for i in default].count(False) == 5 and "there" in {i.name for i in default}
    everything = agy_host.list_sessions(all=True, env=home.env)
    assert len(everything) == 7 and all(i.name.startswith("py-") for i in everything if not i.named)
    assert [i.name for i in agy_host.list_sessions(cwd=other, env=home.env)] == ["there"]
    assert len(agy_host.list_sessions(cwd=home.cwd, all=True, env=home.env)) == 6
    assert agy_host.list_sessions(agent="nothing-like-it", env=home.env) == []
    assert len(agy_host.list_sessions(agent="testing.acp.agent", all=True, env=home.env)) == 7


@pytest.mark.parametrize("opened", [False, True], ids=["alone", "beside-an-open-session"])
@pytest.mark.parametrize("loop", LOOPS)
def test_fork_copies_the_conversation_where_the_agent_offers_session_fork(home: Home, loop: str, opened: bool) -> None:
    """The agent forks the conversation (``session/fork``); the new session
    is bound to the fork, starts with the source's transcript, and its next
    turn continues the fork while the source keeps its own. Under asyncio
    the fork runs in the trio guest of a session open on the loop, or in a
    guest run of its own."""
    agent = home.agent({**USAGE, "session_id": "generate", "agent_capabilities": FORKS})

    async def main() -> Any:
        async with agy_host.open_session(agent=agent.command_line, env=home.env, cwd=home.cwd, session="src") as s:
            await s.run("one")
            if opened:
                forked = await agy_host.fork_session("src", "branch", agent=agent.command_line, env=home.env)
        if not opened:
            forked = await agy_host.fork_session("src", "branch", agent=agent.command_line, env=home.env)
        async with agy_host.open_session(
            agent=agent.command_line, env=home.env, cwd=home.cwd, session="branch", resume=True
        ) as b:
            result = await b.run("two")
        return forked, result

    forked, result = run_on(loop, main)
    source = agy_host.get_session("src", env=home.env)
    [source_id] = source.conversation_ids.values()
    [fork_id] = forked.conversation_ids.values()
    assert forked.name == "branch" and fork_id.startswith(f"{source_id}-fork-"), forked
    assert forked.turns == 1 and forked.engines == ["acp"], forked
    [asked] = agent.events("session-forked")
    assert asked["sessionId"] == source_id and asked["forkedId"] == fork_id and asked["cwd"] == str(home.cwd)
    assert result.exit_code == 0 and result.conversation_id == fork_id, result
    reopened = [m["params"]["sessionId"] for m in agent.received() if m.get("method") == "session/load"]
    assert reopened[-1] == fork_id, reopened
    branch = agy_host.get_session("branch", env=home.env)
    assert [(e.prompt, e.conversation_id) for e in branch.entries] == [("one", fork_id), ("two", fork_id)]
    assert source.turns == 1 and agy_host.get_session("src", env=home.env).conversation_ids == source.conversation_ids


@pytest.mark.parametrize("loop", LOOPS)
def test_an_agent_without_session_fork_says_so(home: Home, loop: str) -> None:
    agent = home.agent("echo")
    agy_host.run("one", agent=agent.command_line, env=home.env, cwd=home.cwd, session="src")

    async def main() -> None:
        await agy_host.fork_session("src", "branch", agent=agent.command_line, env=home.env)

    with pytest.raises(agy_host.NotSupported, match=r"does not offer session/fork \(no sessionCapabilities.fork"):
        run_on(loop, main)
    assert "session/fork" not in agent.methods(), "asked only what the agent offers"
    assert [i.name for i in agy_host.list_sessions(env=home.env)] == ["src"], "no half-made fork"


def test_stream_json_and_the_harness_cannot_fork(home: Home, tmp_path: Path) -> None:
    """agy's CLI and the harness have no way to copy a conversation: the
    error names the engine and what can."""
    pytest.importorskip("agy_host_stream_json.engine", reason="the stream-json engine is not installed")
    from agy_host.config import state_dir
    from agy_host.runtime.store import SessionBinding, SessionStore
    from agy_host.testing.agy_cli.agent import make_fake_agy

    fake = make_fake_agy(tmp_path / "agy", "happy")
    env = {**home.env, "AGY_BIN": str(fake.bin)}
    done = agy_host.run("one", engine="stream-json", env=env, cwd=home.cwd, session="cli-conv")
    assert done.exit_code == 0, done.error
    with pytest.raises(agy_host.NotSupported, match="the stream-json engine cannot fork a conversation"):
        trio.run(lambda: agy_host.fork_session("cli-conv", engine="stream-json", env=env))

    pytest.importorskip("agy_host_harness", reason="the harness engine is not installed")
    store = SessionStore.in_state_dir(state_dir(env))
    store.set("h@harness", SessionBinding(conversation_id="cascade-1", engine="harness"))
    with pytest.raises(agy_host.NotSupported, match="the harness engine cannot fork a conversation"):
        trio.run(lambda: agy_host.fork_session("h", engine="harness", env=env))


def test_fork_refuses_an_unknown_source_and_a_taken_name(home: Home) -> None:
    agent = home.agent({"agent_capabilities": FORKS})
    for name in ("src", "taken"):
        agy_host.run(name, agent=agent.command_line, env=home.env, cwd=home.cwd, session=name)

    async def fork(source: str, target: str) -> None:
        await agy_host.fork_session(source, target, agent=agent.command_line, env=home.env)

    with pytest.raises(agy_host.SessionNotFound, match="session 'nobody' has no conversation on engine 'acp'"):
        trio.run(fork, "nobody", "x")
    with pytest.raises(agy_host.UsageError, match="session 'taken' exists already"):
        trio.run(fork, "src", "taken")
    with pytest.raises(agy_host.UsageError, match="contains"):
        trio.run(fork, "src", "no spaces")
    assert "session/fork" not in agent.methods()


@pytest.mark.parametrize("loop", LOOPS)
def test_a_session_is_not_deleted_under_its_running_turn(home: Home, loop: str) -> None:
    """A turn writes its binding and transcript back when it ends, so a
    delete during it would not delete: it is refused with exit code 7 (the
    CLI's ``sessions rm`` too), and works once the turn ended."""
    counter = str(home.tmp / "prompts")  # each cold agent process plays the next prompt list
    agent = home.agent(
        {
            "cancel": "graceful",
            "prompt_counter": counter,
            "prompts": [[{"chunk": "ok"}], [{"chunk": "working"}, {"hang": True}]],
        }
    )
    agy_host.run("first", agent=agent.command_line, env=home.env, cwd=home.cwd, session="busy")

    async def main() -> Any:
        async with agy_host.open_session(agent=agent.command_line, env=home.env, cwd=home.cwd, session="busy") as s:
            async with s.prompt("long") as turn:
                async for event in turn:
                    if isinstance(event, agy_host.TextDelta):
                        break
                try:
                    agy_host.delete_session("busy", env=home.env)
                except agy_host.AgyHostError as exc:
                    refused = exc
                rm = cli(home, "sessions", "rm", "busy") if sniffio.current_async_library() == "trio" else None
            return refused, rm

    refused, rm = run_on(loop, main)
    assert refused.exit_code == ExitCode.SESSION_BUSY and "is running a turn" in str(refused), refused
    if rm is not None:
        assert rm.returncode == ExitCode.SESSION_BUSY and "is running a turn" in rm.stderr, rm.stderr
    agy_host.delete_session("busy", env=home.env)
    assert agy_host.list_sessions(env=home.env) == []
