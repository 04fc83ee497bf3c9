"""Agent process faults, on both engines: a crash mid-turn, an agent that
ignores SIGTERM, hangs, floods stderr, never answers initialize, exits
before it, cannot be found, or hides behind a wrapper.

Every agent is a real child process (the kit's fake ACP agent, the fake
agy, or a purpose-built script in ``agents/``) spawned by the real engine.
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from reliability._support import (
    AGENTS,
    AGY_RAW,
    ENGINES,
    acp_engine,
    driver,
    group_members,
    pid_running,
    raw_engine,
    request,
    stream_json_engine,
    wait_until,
    wrapper_script,
)

from agy_host.contract.events import Activity, TextActivity
from agy_host.engine.base import Engine
from agy_host.testing.agents import fake_acp_agent_command
from agy_host.testing.agy_cli.agent import make_fake_agy
from agy_host.testing.contract import collect, outcome_of, text_of

HAPPY_AGY = [{"say": ["HE", "LLO"]}]


def fake_acp(tmp: Path, scenario: str | dict[str, Any], **options: Any) -> list[str]:
    return fake_acp_agent_command(scenario, workdir=tmp / "fake-acp", **options).command


def first_then(tmp: Path, first: list[str], then: list[str]) -> str:
    """A command line that runs ``first`` on its first start and ``then`` on
    every later one (a crashed agent that comes back healthy)."""
    flag = tmp / "started-once"
    script = f"if [ -e {shlex.quote(str(flag))} ]; then exec {shlex.join(then)}; fi; "
    script += f": > {shlex.quote(str(flag))}; exec {shlex.join(first)}"
    return shlex.join(["sh", "-c", script])


def agy(tmp: Path, scenario: dict[str, Any], **settings: Any) -> Path:
    return make_fake_agy(tmp / "agy", scenario, **settings).bin


async def run_until_text(drv: Any, req: Any, on_text: Any) -> list[Activity]:
    fired = False

    def hook(act: Activity) -> None:
        nonlocal fired
        if isinstance(act, TextActivity) and not fired:
            fired = True
            on_text()

    handle = await drv.run(req)
    return await collect(handle, seconds=30, on=hook)


# -- crash mid-turn ----------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_crash_mid_turn_is_visible_within_a_second_and_the_next_turn_reloads(
    tmp_path: Path, engine: str
) -> None:
    if engine == "acp":
        happy = fake_acp_agent_command("happy", workdir=tmp_path / "fake-acp")
        crash = fake_acp(tmp_path, "crash-mid-turn")
        eng: Engine = acp_engine(tmp_path, first_then(tmp_path, crash, happy.command))
        stderr_line = "fake: crashing mid-turn"
    else:
        stderr_line = "fake-agy: crashing mid-turn"
        crash_turn = [{"say": ["PARTIAL"]}, {"exit": {"code": 1, "stderr": stderr_line}}]
        fake = make_fake_agy(tmp_path / "agy", {"turns": [crash_turn, HAPPY_AGY]})
        eng = stream_json_engine(tmp_path, fake.bin)
    seen: list[float] = []
    async with driver(eng) as drv:
        acts = await run_until_text(drv, request(tmp_path), lambda: seen.append(time.monotonic()))
        ended = time.monotonic()
        first = outcome_of(acts)
        second_acts = await collect(await drv.run(request(tmp_path, conversation_id=first.conversation_id)))
    assert first.status == "error" and first.error_kind == "exited", first
    assert stderr_line in (first.error or ""), first  # the agent's stderr tail, in the error itself
    assert text_of(acts) == "PARTIAL"
    assert ended - seen[0] < 1.0 + 1.0, "the crash took more than a second to surface"  # 1 s, plus slack
    second = outcome_of(second_acts)
    assert second.status == "ok" and text_of(second_acts), second
    assert second.conversation_id == first.conversation_id
    if engine == "acp":
        [load] = happy.requests("session/load")  # the conversation is reloaded, not started anew
        assert load["params"]["sessionId"] == first.conversation_id
        assert not happy.requests("session/new")
    else:
        argv = fake.argvs()[-1]
        assert argv[argv.index("--conversation") + 1] == first.conversation_id


# -- SIGTERM ignored ----------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
async def test_an_agent_ignoring_sigterm_is_killed_after_the_grace(tmp_path: Path, engine: str) -> None:
    if engine == "acp":
        stubborn = fake_acp_agent_command(
            {"prompt": [{"chunk": "T0"}, {"hang": True}]},
            workdir=tmp_path / "fake-acp",
            sigterm="ignore",
            cancel="ignore",
            stdin_eof="ignore",
        )
        happy = fake_acp(tmp_path, "happy")
        eng: Engine = acp_engine(tmp_path, first_then(tmp_path, stubborn.command, happy), kill_grace_seconds=1.0)
        sigterms = lambda: stubborn.events("sigterm")  # noqa: E731
    else:
        endless = [{"say": ["T0"]}, {"hang": True}]
        fake = make_fake_agy(tmp_path / "agy", {"turns": [endless, HAPPY_AGY], "sigterm": "ignore"})
        eng = stream_json_engine(tmp_path, fake.bin, kill_grace_seconds=1.0)
        sigterms = lambda: fake.events("sigterm")  # noqa: E731
    pids: list[int] = []
    async with driver(eng) as drv:

        def abort() -> None:
            pid = drv.snapshot().pid
            assert pid is not None
            pids.append(pid)
            handle.abort("test")

        handle = await drv.run(request(tmp_path))
        started = time.monotonic()
        acts = await collect(handle, on=lambda a: abort() if isinstance(a, TextActivity) and not pids else None)
        took = time.monotonic() - started
        out = outcome_of(acts)
        assert out.aborted, out
        [pid] = pids
        assert await wait_until(lambda: not pid_running(pid), 10), "the agent survived its kill"
        after = await collect(await drv.run(request(tmp_path, conversation_id=out.conversation_id)))
        third = await collect(await drv.run(request(tmp_path, conversation_id=out.conversation_id)))
        snapshot = drv.snapshot()
    assert took < 15
    assert sigterms(), "the agent never got a SIGTERM"  # it got one, ignored it, and is gone: SIGKILL
    # the old process's exit did not take the new one down: two more turns on it
    assert outcome_of(after).status == "ok" and outcome_of(third).status == "ok"
    assert snapshot.pid != pid


# -- hangs, stderr floods ------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_hanging_agent_fails_the_turn_on_inactivity(tmp_path: Path, engine: str) -> None:
    if engine == "acp":
        eng: Engine = acp_engine(tmp_path, fake_acp(tmp_path, {"prompt": [{"hang": True}]}))
    else:
        eng = stream_json_engine(tmp_path, agy(tmp_path, {"turns": [[{"hang": True}]]}))
    async with driver(eng) as drv:
        acts = await collect(await drv.run(request(tmp_path, inactivity_s=1.0)), seconds=20)
    out = outcome_of(acts)
    assert out.status == "error" and out.error_kind == "inactivity", out


@pytest.mark.parametrize("engine", ENGINES)
async def test_ten_megabytes_of_stderr_never_block_the_agent(tmp_path: Path, engine: str) -> None:
    flood = 10_000_000
    if engine == "acp":
        steps = [{"stderr_flood_bytes": flood}, {"chunk": "FLOODED"}]
        eng: Engine = acp_engine(tmp_path, fake_acp(tmp_path, {"prompt": steps}))
    else:
        eng = raw_engine(engine, tmp_path, "stderr", flood)
    async with driver(eng) as drv:
        acts = await collect(await drv.run(request(tmp_path, inactivity_s=15.0)), seconds=30)
    out = outcome_of(acts)
    assert out.status == "ok" and text_of(acts).endswith("FLOODED"), out


# -- start-up failures ----------------------------------------------------------------------


async def test_an_agent_that_never_answers_initialize_hits_a_deadline_naming_the_command(tmp_path: Path) -> None:
    """ACP only: agy's CLI has no handshake (its first line is part of the turn)."""
    eng = acp_engine(tmp_path, fake_acp(tmp_path, "hang-initialize"), initialize_timeout_seconds=0.5)
    async with driver(eng) as drv:
        out = outcome_of(await collect(await drv.run(request(tmp_path)), seconds=20))
    assert out.status == "error" and out.error_kind == "spawn", out
    assert "initialize" in (out.error or "") and "0.5s" in (out.error or "")
    assert "agy_host.testing.acp.agent" in (out.error or "")  # the command, named


@pytest.mark.parametrize("engine", ENGINES)
async def test_an_agent_exiting_before_it_starts_is_a_visible_error(tmp_path: Path, engine: str) -> None:
    if engine == "acp":
        eng: Engine = acp_engine(tmp_path, fake_acp(tmp_path, "exit-before-initialize"))
    else:
        script = wrapper_script(tmp_path / "bin" / "agy", ["sh", "-c", "echo 'error: agy gave up early' >&2; exit 1"])
        eng = stream_json_engine(tmp_path, script)
    async with driver(eng) as drv:
        out = outcome_of(await collect(await drv.run(request(tmp_path)), seconds=20))
    assert out.status == "error" and out.error_kind in ("spawn", "exited", "agent"), out
    if engine == "acp":
        assert "exited before initialize" in (out.error or ""), out
    else:
        assert "agy gave up early" in (out.error or ""), out


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_missing_command_is_a_spawn_error_naming_it(tmp_path: Path, engine: str) -> None:
    missing = str(tmp_path / "no-such-agent")
    eng = acp_engine(tmp_path, [missing, "--acp"]) if engine == "acp" else stream_json_engine(tmp_path, missing)
    async with driver(eng) as drv:
        out = outcome_of(await collect(await drv.run(request(tmp_path)), seconds=20))
    assert out.status == "error" and out.error_kind == "spawn", out
    assert missing in (out.error or ""), out


# -- wrappers -----------------------------------------------------------------------------


@pytest.mark.parametrize("wrapper", ["sh -c", "npx-style"])
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_wrapped_agent_leaves_no_orphan_after_an_abort(tmp_path: Path, engine: str, wrapper: str) -> None:
    """The wrapper stays the direct child (no ``exec``) and both it and the
    agent ignore SIGTERM (``sh``) or only the wrapper goes (``npx``): only
    the SIGKILL of the whole process group leaves nothing behind."""
    if engine == "acp":
        inner = fake_acp(tmp_path, {"prompt": [{"chunk": "T0"}, {"hang": True}]}, cancel="ignore", stdin_eof="ignore")
    else:
        fake = make_fake_agy(tmp_path / "agy", {"turns": [[{"say": ["T0"]}, {"hang": True}]]})
        inner = [str(fake.bin)]
    if wrapper == "sh -c":
        wrapped = ["sh", "-c", f'trap "" TERM; {shlex.join(inner)} "$@"; echo wrapper-done >&2', "wrapper"]
    else:
        wrapped = [sys.executable, str(AGENTS / "npx_style.py"), *inner]
    if engine == "acp":
        eng: Engine = acp_engine(tmp_path, wrapped, kill_grace_seconds=0.3)
    else:
        eng = stream_json_engine(tmp_path, wrapper_script(tmp_path / "bin" / "agy", wrapped), kill_grace_seconds=0.3)
    members: list[int] = []
    group: list[int] = []
    async with driver(eng) as drv:

        def abort() -> None:
            pgid = drv.snapshot().pid
            assert pgid is not None
            group.append(pgid)
            members.extend(group_members(pgid))
            handle.abort("test")

        handle = await drv.run(request(tmp_path))
        out = outcome_of(
            await collect(handle, on=lambda a: abort() if isinstance(a, TextActivity) and not group else None)
        )
        assert out.aborted, out
        [pgid] = group
        assert len(members) >= 2, f"expected the wrapper and the agent behind it, got {members}"
        assert await wait_until(lambda: not group_members(pgid), 10), f"orphans left: {group_members(pgid)}"


async def test_the_raw_agy_is_a_real_agent(tmp_path: Path) -> None:
    """Guards the helper other tests rely on: the raw agy answers a turn."""
    async with driver(raw_engine("stream-json", tmp_path, "numbered", 3)) as drv:
        acts = await collect(await drv.run(request(tmp_path)))
    assert text_of(acts) == "0,1,2," and AGY_RAW.is_file()
    await trio.sleep(0)


# -- exit while a descendant holds stdout ----------------------------------------------


async def test_stream_json_sees_agy_exit_although_a_descendant_holds_its_stdout(tmp_path: Path) -> None:
    """agy crashes mid-turn, but a child it started (a tool, an MCP server)
    inherited its stdout and keeps the pipe open: the turn still ends as a
    crash at once, not at EOF (which used to be the 30 s inactivity here), and
    the descendant goes with agy's group."""
    stderr_line = "fake-agy: crashing mid-turn"
    crash_turn = [{"say": ["PARTIAL"]}, {"exit": {"code": 1, "stderr": stderr_line}}]
    fake = make_fake_agy(tmp_path / "agy", {"turns": [crash_turn]})
    pidfile = tmp_path / "holder.pid"
    holder = wrapper_script(tmp_path / "agy-with-holder", [str(fake.bin)], prelude=f"sleep 300 & echo $! > {pidfile}\n")
    eng = stream_json_engine(tmp_path, holder)
    async with driver(eng) as drv:
        started = time.monotonic()
        acts = await collect(await drv.run(request(tmp_path)), seconds=60)
        took = time.monotonic() - started
    first = outcome_of(acts)
    assert first.status == "error" and first.error_kind == "exited", first
    assert stderr_line in (first.error or ""), first
    assert text_of(acts) == "PARTIAL"
    assert took < 10.0, f"{took:.1f}s: the crash was noticed only at the inactivity timeout"
    pid = int(pidfile.read_text())
    assert await wait_until(lambda: not pid_running(pid)), "the descendant holding stdout outlived agy's group"
