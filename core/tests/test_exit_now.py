"""The console script ends with ``os._exit`` once the command returned
(agy_host.cli.exit_now), and loses nothing a normal exit would have written.

Real ``agy-host`` processes against the fake ACP agent, with a probe plugin
installed the way users install plugins: its module holds an object whose
finalizer leaves a mark (the interpreter's finalization is what is skipped),
registers an exit handler and keeps a file open with a buffered line (both
must still be written), and can start a non-daemon thread (then Python's own
exit must wait for it, as before)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from processes import interrupted

from agy_host.testing.agents import fake_acp_agent_command
from agy_host.testing.isolation import install_plugin, isolated_env

AGY_HOST = Path(sys.executable).with_name("agy-host")

pytestmark = [
    pytest.mark.skipif(not AGY_HOST.exists(), reason=f"console script not installed next to {sys.executable}"),
    pytest.mark.skipif(
        not any(ep.name == "acp" for ep in metadata.entry_points(group="agy_host.engines")),
        reason="the ACP engine is not installed",
    ),
]

PROBE = """
import atexit, os, threading, time

MARK = os.environ["AGYT_EXIT_MARK"]


class _Finalized:
    # Bound now: at finalization the module's globals and builtins may be gone.
    def __del__(self, _open=open, _path=MARK + ".finalized"):
        _open(_path, "w").close()


KEEP = _Finalized()
atexit.register(lambda: open(MARK + ".atexit", "w").close())
OPEN = open(MARK + ".buffered", "w")  # never closed: its line sits in the buffer
OPEN.write("pending line\\n")

if os.environ.get("AGYT_EXIT_THREAD") == "1":
    def _late():
        time.sleep(0.5)
        open(MARK + ".thread", "w").close()

    threading.Thread(target=_late, daemon=False).start()
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    site = install_plugin(tmp_path / "site", "agyt_exit_probe", PROBE)
    return isolated_env(
        tmp_path / "home",
        AGY_HOST_ENGINE="acp",
        PYTHONPATH=str(site),
        AGYT_EXIT_MARK=str(tmp_path / "mark"),
    )


def _mark(env: dict[str, str], what: str) -> Path:
    return Path(env["AGYT_EXIT_MARK"] + "." + what)


def _agent(tmp_path: Path, scenario: str = "echo", **options: object) -> str:
    return fake_acp_agent_command(scenario, workdir=tmp_path / "agents", **options).command_line


def _agy(env: dict[str, str], *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(AGY_HOST), *args], env=env, capture_output=True, text=True, timeout=timeout)


def _session(env: dict[str, str], name: str) -> dict[str, object]:
    proc = _agy(env, "sessions", "show", name, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, object] = json.loads(proc.stdout)
    return doc


def test_a_run_skips_finalization_and_loses_nothing(env: dict[str, str], tmp_path: Path) -> None:
    proc = _agy(env, "run", "--agent", _agent(tmp_path), "--session", "ends", "hello there")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello there\n"
    assert "[done] stop" in proc.stderr
    assert not _mark(env, "finalized").exists(), "the interpreter's finalization ran"
    assert _mark(env, "atexit").exists(), "an exit handler did not run"
    assert _mark(env, "buffered").read_text() == "pending line\n", "an open file's buffer was lost"
    doc = _session(env, "ends")
    session = doc["session"]
    assert isinstance(session, dict) and session["bindings"], doc
    transcript = doc["transcript"]
    assert isinstance(transcript, list)
    assert [(e["role"], e["text"]) for e in transcript] == [("user", "hello there"), ("assistant", "hello there")]


def test_a_long_answer_on_a_pipe_is_read_to_its_end(env: dict[str, str], tmp_path: Path) -> None:
    # About 1 MB, written when the turn ends: far more than the pipe holds,
    # so the process is still writing when the command has decided its code.
    agent = _agent(tmp_path, "flood", flood_count=50_000, flood_text="0123456789abcdefghij")
    proc = _agy(env, "run", "--agent", agent, "--format", "quiet", "go")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "0123456789abcdefghij" * 50_000 + "\n"
    proc = _agy(env, "run", "--agent", agent, "--format", "json", "go")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    done = json.loads(lines[-1])
    assert done["type"] == "done" and done["exit_code"] == 0
    text = "".join(e["delta"] for e in map(json.loads, lines) if e["type"] == "text")
    assert len(text) == 20 * 50_000


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["run", "--engine", "no-such-engine", "hi"], 1),
        (["run", "--no-such-flag", "hi"], 2),
        (["run", "--session", "nobody", "--resume", "hi"], 4),
    ],
)
def test_exit_codes_are_the_commands(env: dict[str, str], args: list[str], code: int) -> None:
    proc = _agy(env, *args)
    assert proc.returncode == code, proc.stderr
    assert proc.stderr.strip(), "the reason was not said"
    assert not _mark(env, "finalized").exists()


def test_a_failed_turn_keeps_its_code_and_its_binding(env: dict[str, str], tmp_path: Path) -> None:
    proc = _agy(env, "run", "--agent", _agent(tmp_path, "prompt-error"), "--session", "bad", "hi")
    assert proc.returncode == 1, proc.stderr
    assert "[error]" in proc.stderr or "error" in proc.stderr
    assert not _mark(env, "finalized").exists()
    assert _session(env, "bad")["session"]


def test_ctrl_c_exits_130_and_keeps_the_binding(env: dict[str, str], tmp_path: Path) -> None:
    agent = fake_acp_agent_command("cancel-graceful", workdir=tmp_path / "agents")
    argv = [str(AGY_HOST), "run", "--agent", agent.command_line, "--session", "ctl", "go"]
    proc = interrupted(argv, env, lambda: bool(agent.requests("session/prompt")), what="the prompt")
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not _mark(env, "finalized").exists()
    assert _session(env, "ctl")["session"]


def test_a_non_daemon_thread_gets_pythons_own_exit(env: dict[str, str], tmp_path: Path) -> None:
    # Python waits for such a thread before it exits; so must agy-host.
    env = {**env, "AGYT_EXIT_THREAD": "1"}
    proc = _agy(env, "run", "--agent", _agent(tmp_path), "hi")
    assert proc.returncode == 0, proc.stderr
    assert _mark(env, "thread").exists(), "the process left before its thread finished"
    assert _mark(env, "atexit").exists()


def test_a_reader_that_left_changes_nothing(env: dict[str, str], tmp_path: Path) -> None:
    agent = _agent(tmp_path, "flood", flood_count=20_000, flood_text="0123456789abcdefghij")
    proc = subprocess.Popen(
        [str(AGY_HOST), "run", "--agent", agent, "go"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.close()  # nobody reads the answer
    _out, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, err
    assert b"Traceback" not in err


def test_in_process_callers_get_the_code_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests, embedding programs and benchmark workers call main() with
    # arguments: the process must not end under them.
    from agy_host.cli.main import main

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert main(["config", "path"]) == 0
    assert main(["--version"]) == 0
    assert os.getpid() > 0  # still here
