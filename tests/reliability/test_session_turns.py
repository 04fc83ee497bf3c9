"""One turn at a time per session, across processes (``runtime/turn_lock.py``).

Real ``agy-host run`` processes on one session against the kit's fake ACP
agent, whose first prompt sleeps so the first command is mid-turn when the
second starts. The agent's log (shared by both commands' agents) says
which conversation each command opened; a counter file makes the second
command's agent play the second prompt list.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agy_host.testing.agents import FakeAgent, fake_acp_agent_command
from agy_host.testing.isolation import isolated_env

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")

SESSION = "work"
NOTICE = "Ctrl-C to stop waiting, --no-wait to fail instead"


class Command:
    """One ``agy-host run --format FMT --session work`` in the background,
    its stdout and stderr in files so they can be read while it runs."""

    def __init__(self, tmp_path: Path, agent: FakeAgent, name: str, *args: str, fmt: str = "json") -> None:
        self.out = tmp_path / f"{name}.out"
        self.err = tmp_path / f"{name}.err"
        argv = [sys.executable, "-m", "agy_host.cli.main", "run", "--agent", agent.command_line]
        argv += ["--format", fmt, "--session", SESSION, *args, f"prompt of {name}"]
        with self.out.open("w") as out, self.err.open("w") as err:
            self.proc = subprocess.Popen(
                argv,
                env=isolated_env(tmp_path / "home", AGY_HOST_ENGINE="acp", AGY_HOST_TTY="none"),
                cwd=tmp_path,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
            )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr(self) -> str:
        return self.err.read_text()

    def wait_for_stderr(self, text: str, seconds: float = 30) -> str:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            said = self.stderr()
            if text in said:
                return said
            assert self.proc.poll() is None, f"exited {self.proc.returncode} before saying {text!r}:\n{said}"
            time.sleep(0.05)
        raise AssertionError(f"not said within {seconds}s: {text!r}\n{self.stderr()}")

    def finish(self, seconds: float = 60) -> int:
        return self.proc.wait(timeout=seconds)

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.out.read_text().splitlines() if line.startswith("{")]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events() if e.get("type") == kind]

    def __repr__(self) -> str:
        return f"pid {self.pid} -> {self.proc.returncode}\n{self.out.read_text()[-2000:]}\n{self.stderr()[-2000:]}"


@pytest.fixture
def commands() -> Iterator[list[Command]]:
    started: list[Command] = []
    yield started
    for command in started:
        if command.proc.poll() is None:
            command.proc.kill()
            command.proc.wait()


def sleepy_agent(tmp_path: Path, first_sleep: float) -> FakeAgent:
    """The first prompt (in any process) sleeps, then answers; later ones echo."""
    scenario = {
        "session_id": "generate",
        "prompt_counter": str(tmp_path / "prompts.count"),
        "prompts": [[{"sleep": first_sleep}, {"chunk": "first answer"}], [{"echo": "echo: "}]],
    }
    return fake_acp_agent_command(scenario, workdir=tmp_path / "agents")


def start(
    commands: list[Command], tmp_path: Path, agent: FakeAgent, name: str, *args: str, fmt: str = "json"
) -> Command:
    command = Command(tmp_path, agent, name, *args, fmt=fmt)
    commands.append(command)
    return command


def mid_turn(agent: FakeAgent, command: Command, prompts: int = 1, seconds: float = 30) -> None:
    """Until the agent received ``prompts`` prompts: ``command`` holds the session."""
    deadline = time.monotonic() + seconds
    while len(agent.requests("session/prompt")) < prompts:
        assert command.proc.poll() is None, command
        assert time.monotonic() < deadline, f"no prompt reached the agent:\n{command}"
        time.sleep(0.05)


def holding(commands: list[Command], tmp_path: Path, first_sleep: float) -> tuple[FakeAgent, Command]:
    """A first command mid-turn on the session (its turn sleeps ``first_sleep``)."""
    agent = sleepy_agent(tmp_path, first_sleep)
    first = start(commands, tmp_path, agent, "first")
    mid_turn(agent, first)
    return agent, first


def waiting(commands: list[Command], tmp_path: Path, agent: FakeAgent) -> tuple[Command, str]:
    """A second command, once it said it waits: it and its stderr."""
    second = start(commands, tmp_path, agent, "second")
    return second, second.wait_for_stderr(NOTICE)


def locks(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "home" / ".local" / "state" / "agy-host" / "locks"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def test_a_second_command_waits_with_a_notice_then_continues_the_same_conversation(
    tmp_path: Path, commands: list[Command]
) -> None:
    agent, first = holding(commands, tmp_path, first_sleep=6)
    second, said = waiting(commands, tmp_path, agent)
    [line] = [line for line in said.splitlines() if NOTICE in line]
    assert f"session '{SESSION}' is busy: pid {first.pid} (agy-host run --agent" in line, line
    assert "running a turn for" in line, line
    assert first.finish() == 0, first
    assert second.finish() == 0, second
    [first_end], [second_end] = first.of("turn_end"), second.of("turn_end")
    conversation = first_end["conversation_id"]
    assert conversation and second_end["conversation_id"] == conversation, (first, second)
    assert second_end["response"] == "echo: prompt of second", second
    assert agent.methods().count("session/new") == 1, agent.methods()
    [load] = agent.requests("session/load")
    assert load["params"]["sessionId"] == conversation
    assert locks(tmp_path) == [], "the lock file outlived its turns"


def test_no_wait_fails_at_once_with_exit_7_naming_the_holder(tmp_path: Path, commands: list[Command]) -> None:
    agent, first = holding(commands, tmp_path, first_sleep=60)
    started = time.monotonic()
    second = start(commands, tmp_path, agent, "second", "--no-wait")
    assert second.finish(seconds=30) == 7, second
    assert time.monotonic() - started < 15, "--no-wait waited"
    [end], [done] = second.of("turn_end"), second.of("done")
    assert end["error_kind"] == "busy" and done["exit_code"] == 7, second
    for error in (end["error"], done["error"]):
        assert f"session '{SESSION}' is busy: pid {first.pid} (agy-host run --agent" in error, error
    text = start(commands, tmp_path, agent, "third", "--no-wait", fmt="text")
    assert text.finish(seconds=30) == 7, text
    assert f"is busy: pid {first.pid} (agy-host run" in text.stderr(), text
    assert len(agent.requests("session/prompt")) == 1, "a refused command reached the agent"
    assert first.proc.poll() is None, "the holder was disturbed"


def test_ctrl_c_leaves_the_queue_and_the_holder_goes_on(tmp_path: Path, commands: list[Command]) -> None:
    agent, first = holding(commands, tmp_path, first_sleep=6)
    second, _ = waiting(commands, tmp_path, agent)
    signalled = time.monotonic()
    second.proc.send_signal(signal.SIGINT)
    assert second.finish(seconds=30) == 130, second
    assert time.monotonic() - signalled < 5, "Ctrl-C did not end the wait at once"
    assert "stopped waiting" in second.stderr(), second
    [done] = second.of("done")
    assert done["exit_code"] == 130 and done["stop_reason"] == "aborted", done
    assert not second.of("turn_start"), "a turn that never ran was framed as one"
    assert first.finish() == 0, first
    assert first.of("turn_end")[0]["response"] == "first answer", first
    assert len(agent.requests("session/prompt")) == 1, "the command that left the queue reached the agent"
    assert locks(tmp_path) == [], "something was left behind"


def test_sigkill_of_the_holder_lets_the_waiter_go_on(tmp_path: Path, commands: list[Command]) -> None:
    agent, first = holding(commands, tmp_path, first_sleep=60)
    second, _ = waiting(commands, tmp_path, agent)
    first.proc.kill()
    first.proc.wait()
    assert second.finish() == 0, second
    assert second.of("turn_end")[0]["response"] == "echo: prompt of second", second
    assert locks(tmp_path) == [], "the dead holder's lock file was not taken over and removed"


# -- the Python API -----------------------------------------------------------------


def _api(tmp_path: Path, agent: FakeAgent, **options: Any) -> Any:
    import agy_host

    env = isolated_env(tmp_path / "home", AGY_HOST_ENGINE="acp", AGY_HOST_TTY="none")
    return agy_host.open_session(agent=agent.command_line, env=env, cwd=tmp_path, session=SESSION, **options)


async def _refused(tmp_path: Path, agent: FakeAgent, holder: Command) -> None:
    """``wait=False`` while another process runs a turn on the session: the
    turn ends at once with exit code 7 naming the holder, and raises
    :class:`agy_host.SessionBusy` under ``check=True``."""
    import agy_host

    async with _api(tmp_path, agent, wait=False) as session:
        result = await session.run("go")
        assert (result.exit_code, result.error_kind) == (7, "busy"), result
        assert f"session '{SESSION}' is busy: pid {holder.pid} (agy-host run" in result.error, result
        with pytest.raises(agy_host.SessionBusy) as raised:
            await session.run("go", check=True)
        assert raised.value.exit_code == 7 and isinstance(raised.value, agy_host.AgyHostError)
    assert len(agent.requests("session/prompt")) == 1, "a refused turn reached the agent"
    assert holder.proc.poll() is None, "the holder was disturbed"


async def test_the_python_api_wait_false_is_session_busy_under_trio(tmp_path: Path, commands: list[Command]) -> None:
    await _refused(tmp_path, *holding(commands, tmp_path, first_sleep=60))


def test_the_python_api_wait_false_is_session_busy_under_asyncio(tmp_path: Path, commands: list[Command]) -> None:
    asyncio.run(_refused(tmp_path, *holding(commands, tmp_path, first_sleep=60)))


async def _waits(tmp_path: Path, agent: FakeAgent, holder: Command) -> None:
    """Waiting (the default) under the program's loop: it goes on once the
    holder's turn ended, on the conversation the holder left."""
    async with _api(tmp_path, agent) as session:
        result = await session.run("after")
    assert holder.finish() == 0, holder
    assert result.exit_code == 0 and result.response == "echo: after", result
    assert result.conversation_id == holder.of("turn_end")[0]["conversation_id"], (result, holder)


def test_the_python_api_waits_under_asyncio_and_says_so_on_its_logger(
    tmp_path: Path, commands: list[Command], caplog: pytest.LogCaptureFixture
) -> None:
    agent, holder = holding(commands, tmp_path, first_sleep=3)
    with caplog.at_level("WARNING", logger="agy_host"):
        asyncio.run(_waits(tmp_path, agent, holder))
    [said] = [r.getMessage() for r in caplog.records if "is busy" in r.getMessage()]
    assert f"pid {holder.pid} (agy-host run" in said and "wait=False to fail instead" in said, said
