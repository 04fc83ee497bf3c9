"""``run --agent COMMAND`` starts its agent before the command's imports
(agy_host.cli.agent_ahead) and the engine adopts it (agy_host.engine.ahead);
a child nobody adopts never outlives the command.

Real ``agy-host`` processes: the agent is the fake ACP agent behind a shell
that notes its pid, and a probe plugin (imported while the command loads its
plugins, long after the start-ahead point and before the engine would start
anything) looks whether the agent is already running."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import pytest
import trio
from processes import interrupted

from agy_host.cli.agent_ahead import agent_argv
from agy_host.engine import ahead
from agy_host.engine.base import ENGINE_GROUP
from agy_host.engine.process import open_in_own_group
from agy_host.testing.isolation import install_plugin, isolated_env

AGY_HOST = Path(sys.executable).with_name("agy-host")
ACP = any(ep.name == "acp" for ep in metadata.entry_points(group=ENGINE_GROUP))

needs_cli = pytest.mark.skipif(not AGY_HOST.exists() or not ACP, reason="needs the console script and the ACP engine")

PROBE = """
import os, time

MARK, OUT = os.environ["AGYT_AGENT_MARK"], os.environ["AGYT_PROBE_OUT"]
deadline = time.monotonic() + 10
while not os.path.exists(MARK) and time.monotonic() < deadline:
    time.sleep(0.01)
with open(OUT, "w") as fh:
    fh.write("ahead" if os.path.exists(MARK) else "late")
if os.environ.get("AGYT_PROBE_HOLD"):
    open(os.environ["AGYT_PROBE_HOLD"], "w").close()
    time.sleep(60)
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    site = install_plugin(tmp_path / "site", "agyt_ahead_probe", PROBE)
    return isolated_env(
        tmp_path / "home",
        PYTHONPATH=str(site),
        AGYT_AGENT_MARK=str(tmp_path / "agent.pids"),
        AGYT_PROBE_OUT=str(tmp_path / "probe"),
    )


def _agent(env: dict[str, str]) -> str:
    """The fake echo agent behind a shell that appends its pid to the mark."""
    inner = f"{sys.executable} -m agy_host.testing.acp.agent --scenario echo"
    return f"sh -c 'echo $$ >> {env['AGYT_AGENT_MARK']}; exec {inner}'"


def _pids(env: dict[str, str]) -> list[int]:
    mark = Path(env["AGYT_AGENT_MARK"])
    return [int(line) for line in mark.read_text().split()] if mark.exists() else []


def _gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            return True  # a zombie: ended, reaped by whoever inherited it
        time.sleep(0.05)
    return False


@needs_cli
def test_the_agent_starts_before_the_plugins_load_and_is_adopted(env: dict[str, str]) -> None:
    proc = subprocess.run(
        [str(AGY_HOST), "run", "--engine", "acp", "--agent", _agent(env), "hello"],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello\n"
    assert Path(env["AGYT_PROBE_OUT"]).read_text() == "ahead"
    assert len(_pids(env)) == 1, "the agent was started twice: the engine did not adopt it"


@needs_cli
def test_an_agent_nobody_adopts_is_ended_when_the_command_fails(env: dict[str, str]) -> None:
    # No prompt and nothing on stdin: exit 2 before any turn.
    proc = subprocess.run(
        [str(AGY_HOST), "run", "--agent", _agent(env)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 2, proc.stderr
    [pid] = _pids(env)
    assert _gone(pid), "the agent started ahead outlived the command"


@needs_cli
def test_ctrl_c_while_the_command_loads_ends_the_agent_started_ahead(env: dict[str, str], tmp_path: Path) -> None:
    hold = tmp_path / "holding"
    env = {**env, "AGYT_PROBE_HOLD": str(hold)}
    argv = [str(AGY_HOST), "run", "--agent", _agent(env), "hi"]
    proc = interrupted(argv, env, hold.exists, what="loading the plugins")
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr
    [pid] = _pids(env)
    assert _gone(pid), "the agent started ahead outlived the command"


def _config(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return {"AGY_HOST_CONFIG": str(path)}


@pytest.mark.skipif(not ACP, reason="the ACP engine is not installed")
@pytest.mark.parametrize(
    ("args", "argv"),
    [
        (["--agent", "python -m agent", "hi"], ["python", "-m", "agent"]),
        (["--engine", "acp", "--agent=/opt/agent", "-f", "json", "-", "more"], ["/opt/agent"]),
        (["-e", "acp", "--format=quiet", "--agent", "npx -y pkg --acp"], ["npx", "-y", "pkg", "--acp"]),
        (["--agent", "gemini", "hi"], None),  # one word: a profile, agy or sandbox, or a binary on PATH
        (["--agent", "my profile", "hi"], None),  # a profile of the config
        (["--agent", "/x/agy_acp_server.par --v", "hi"], None),  # Antigravity's server: the engine adds flags
        (["--engine", "stream-json", "--agent", "python -m a", "hi"], None),
        (["--agent", "python -m a", "--session", "s", "hi"], None),
        (["--agent", "python -m a", "--model", "m", "hi"], None),
        (["--agent", "python -m a", "--help"], None),
        (["--agent", "python -m a", "--agent", "python -m b"], None),
        (["--", "--agent", "python -m a"], None),
        (["hi", "--agent"], None),
        (["--agent", "python 'unclosed"], None),
        (["hi"], None),
    ],
)
def test_the_argv_is_predicted_only_where_the_command_line_says_it(
    args: list[str], argv: list[str] | None, tmp_path: Path
) -> None:
    env = _config(tmp_path, '[acp.profiles."my profile"]\ncommand = ["other"]\n')
    assert agent_argv(args, env) == argv


@pytest.mark.skipif(not ACP, reason="the ACP engine is not installed")
def test_an_unreadable_config_or_the_switch_predicts_nothing(tmp_path: Path) -> None:
    assert agent_argv(["--agent", "python -m a"], _config(tmp_path, "not = [toml")) is None
    assert agent_argv(["--agent", "python -m a"], {**_config(tmp_path, ""), "AGY_HOST_AHEAD": "0"}) is None
    assert agent_argv(["--agent", "python -m a"], _config(tmp_path, "")) == ["python", "-m", "a"]


async def _close(proc: trio.Process) -> None:
    if proc.returncode is None:
        proc.kill()
        await proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            await stream.aclose()


def _sleeper() -> list[str]:
    return [sys.executable, "-c", "import sys; print('ready', flush=True); sys.stdin.read()"]


async def test_the_engine_adopts_the_child_started_ahead_as_its_own() -> None:
    argv = _sleeper()
    assert ahead.start(argv, cwd=os.getcwd(), env=os.environ)
    pid = ahead._AHEAD.popen.pid if ahead._AHEAD is not None else None
    proc = await open_in_own_group(argv, cwd=os.getcwd(), env=None, what="agent command")
    try:
        assert proc.pid == pid
        assert os.getpgid(proc.pid) == proc.pid  # its own group, as the engine starts children
        assert proc.stdout is not None and proc.stdin is not None
        got = b""
        with trio.fail_after(10):
            while not got.endswith(b"\n"):
                got += await proc.stdout.receive_some(100)
        assert got == b"ready\n"
        await proc.stdin.aclose()
        with trio.fail_after(10):
            assert await proc.wait() == 0
    finally:
        await _close(proc)
    assert not ahead.pending()


async def test_a_child_started_ahead_for_another_command_is_ended_not_adopted() -> None:
    assert ahead.start(_sleeper(), cwd=os.getcwd(), env=os.environ)
    assert ahead._AHEAD is not None
    pid = ahead._AHEAD.popen.pid
    other = [sys.executable, "-c", "print('other')"]
    proc = await open_in_own_group(other, cwd=os.getcwd(), env=None, what="agent command")
    try:
        assert proc.pid != pid
        assert _gone(pid)
        with trio.fail_after(10):
            assert await proc.wait() == 0
    finally:
        await _close(proc)
    assert not ahead.pending()


def test_a_child_nobody_adopts_is_ended_by_discard() -> None:
    assert ahead.start(_sleeper(), cwd=os.getcwd(), env=os.environ)
    assert ahead._AHEAD is not None
    popen = ahead._AHEAD.popen
    ahead.discard()
    assert popen.returncode is not None
    assert not ahead.pending()
