"""Host faults: agy-host killed mid-write, two agy-host processes at once,
corrupt files on disk, and what a dead agy-host left behind.

Writers are real processes (this interpreter running agy-host's own store
and config code, or the ``agy-host`` CLI) and kills are real SIGKILLs.
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import msgspec

from agy_host import config as config_mod
from agy_host.runtime.store import STORE_FILE, SessionBinding, SessionStore
from agy_host.testing.pytest_plugin import AgyHostHome, CliResult

#: A writer that never stops: a store binding (big, so a write takes a while) or a config key per round.
#: It says "ready" after its first whole write; the kill lands in a later one.
WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from agy_host.runtime.store import SessionBinding, SessionStore
    from agy_host import config_writes as config

    kind, path = sys.argv[1], Path(sys.argv[2])
    store = SessionStore(path.parent) if kind == "store" else None

    def write(i):
        if store is not None:
            store.set(f"s{i % 50}", SessionBinding(conversation_id=f"c{i}", agent="x" * 20_000))
        else:
            config.set_value("turn.permission_timeout_seconds", str(60 + i % 500), path=path)

    write(0)  # one whole write first: on a slow machine a kill could otherwise beat every write
    print("ready", flush=True)
    i = 1
    while True:
        write(i)
        i += 1
    """
)


def kill_mid_write(kind: str, path: Path, rounds: int = 6) -> None:
    rng = random.Random(8)
    for _ in range(rounds):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, kind, str(path)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 0.3))
        proc.send_signal(signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL


def test_sigkill_mid_write_never_corrupts_the_session_store(tmp_path: Path) -> None:
    kill_mid_write("store", tmp_path / STORE_FILE)
    warnings: list[str] = []
    store = SessionStore(tmp_path, warn=warnings.append)
    assert 0 < len(store) <= 50 and all(b.agent == "x" * 20_000 for b in store.all().values())
    assert warnings == []  # every session file readable: nothing moved aside
    folder = tmp_path / "sessions"
    assert not list(folder.glob("*.corrupt-*"))
    # A kill between the temp's write and the rename strands the session's
    # one temp (``.NAME.json.tmp``, written only under the store's lock): the
    # session's next write takes it over, and ``sessions prune`` sweeps the
    # temps of sessions never written again once they are a minute old. The
    # kill lands there only sometimes, so both kinds are planted too.
    (folder / ".s1.json.tmp").write_bytes(b'{"version": 2, "sess')
    (folder / ".gone.json.tmp").write_bytes(b'{"version": 2, "sess')
    assert store.get("gone") is None and "gone" not in store.names(), "a temp is never read as a session"
    store.set("s1", SessionBinding(conversation_id="c"))
    assert not (folder / ".s1.json.tmp").exists() and store.get("s1") == SessionBinding(conversation_id="c")
    for temp in folder.glob(".*.json.tmp"):
        os.utime(temp, (0, 0))
    assert store.sweep_temps() >= 1 and not list(folder.glob(".*.tmp"))


MOVER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from agy_host.runtime.store import SessionStore
    print("ready", flush=True)
    SessionStore(Path(sys.argv[1]))  # finds sessions.json and moves it into a file per session
    print("moved", flush=True)
    """
)


def test_sigkill_mid_move_of_the_old_store_loses_no_binding(tmp_path: Path) -> None:
    """Issue 29: the first format's ``sessions.json`` moves into one file per
    session. Killed (SIGKILL) at random points of the move, and started
    again each time, the store ends with every binding of the old file, the
    old file kept byte for byte once, and nothing moved aside as corrupt."""
    bindings = {
        f"{'run-20261201-120000-' + format(i, '04x') if i % 3 else f'named-{i}'}@acp:p{i % 2}": {
            "conversation_id": f"c{i}",
            "engine": "acp",
            "agent": "x" * 2_000,
            "cwd": "/p",
            "updated_at": f"2026-12-01T12:{i % 60:02d}:00Z",
            "last_message_count": i + 1,
        }
        for i in range(3_000)
    }
    original = (json.dumps({"version": 1, "bindings": bindings}, indent=2) + "\n").encode()
    probe = tmp_path / "probe"  # how long a whole move takes here: the kills land inside it
    probe.mkdir()
    (probe / STORE_FILE).write_bytes(original)
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", MOVER, str(probe)], check=True, capture_output=True)
    whole = time.monotonic() - started
    state = tmp_path / "state"
    state.mkdir()
    (state / STORE_FILE).write_bytes(original)
    rng = random.Random(29)
    for _ in range(5):
        proc = subprocess.Popen([sys.executable, "-c", MOVER, str(state)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.3, 0.9) * whole)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    partly = len(list((state / "sessions").glob("*.json"))) if (state / "sessions").is_dir() else 0
    warnings: list[str] = []
    store = SessionStore(state, warn=warnings.append)
    assert {k: msgspec.to_builtins(b) for k, b in store.all().items()} == bindings, f"{partly} files before"
    [kept] = state.glob(f"{STORE_FILE}.v1-*")
    assert kept.read_bytes() == original and not (state / STORE_FILE).exists()
    assert not list(state.rglob("*.corrupt-*")) and all("moved" in w for w in warnings), warnings


def test_sigkill_mid_write_never_corrupts_the_config(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    big = {f"k{i}": "v" * 100 for i in range(5000)}  # the user's own table, rewritten by every set
    import tomli_w

    path.write_text(tomli_w.dumps({"plugins": {"mine": big}}))
    kill_mid_write("config", path)
    raw = tomllib.loads(path.read_text())
    assert raw["plugins"]["mine"] == big
    assert 60 <= raw["turn"]["permission_timeout_seconds"] < 560
    warnings: list[str] = []
    config_mod.load(path=path, warn=warnings.append, env={})
    assert not [w for w in warnings if "moved" in w], warnings


CONCURRENT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from agy_host.runtime.store import SessionBinding, SessionStore

    who, path, go = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    while not go.exists():
        time.sleep(0.001)
    for i in range(40):  # four sessions both processes write: each file read, changed and replaced at once
        SessionStore(path.parent).set(f"s{i % 4}@{who}-{i}", SessionBinding(conversation_id=f"{who}-conv-{i}"))
    """
)


def test_two_processes_updating_the_store_at_once_lose_no_binding(tmp_path: Path) -> None:
    path, go = tmp_path / STORE_FILE, tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT, who, str(path), str(go)]) for who in ("a", "b")]
    time.sleep(0.3)  # both interpreters started and waiting
    go.touch()
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    bindings = SessionStore(tmp_path).all()
    assert sorted(bindings) == sorted(f"s{i % 4}@{w}-{i}" for w in ("a", "b") for i in range(40))
    assert all(b.conversation_id == k.split("@")[1].replace("-", "-conv-", 1) for k, b in bindings.items())


def test_a_corrupt_store_and_config_are_moved_aside_reported_and_kept(
    agy_host_home: AgyHostHome, agy_host_cli: object
) -> None:
    state = agy_host_home.state_home / "agy-host"
    state.mkdir(parents=True, exist_ok=True)
    store_bytes = b'{"version": 1, "bindings": {"work": {"conversation_id": "abc"'  # torn
    (state / STORE_FILE).write_bytes(store_bytes)  # the first format's one file
    session_bytes = b'{"version": 2, "session": "torn", "bindings": {"torn": {"conv'
    (state / "sessions").mkdir()
    (state / "sessions" / "torn.json").write_bytes(session_bytes)  # a session's own file
    config_bytes = b"[turn\ntimeout_seconds = = 5\n"
    config_path = agy_host_home.config_home / "agy-host" / "config.toml"
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_bytes(config_bytes)

    run = agy_host_cli  # the real CLI in a subprocess
    assert callable(run)
    result: CliResult = run("sessions", "list")
    assert result.returncode == 0, result
    [store_kept] = state.glob(f"{STORE_FILE}.corrupt-*")
    [session_kept] = (state / "sessions").glob("torn.json.corrupt-*")
    [config_kept] = config_path.parent.glob("config.toml.corrupt-*")
    assert store_kept.read_bytes() == store_bytes and config_kept.read_bytes() == config_bytes
    assert session_kept.read_bytes() == session_bytes
    for kept in (store_kept, session_kept, config_kept):
        assert str(kept) in result.stderr, result  # reported, with where
    again: CliResult = run("sessions", "list")
    assert again.returncode == 0 and "corrupt" not in again.stderr, again  # reported once, then a clean start


async def test_a_stale_bridge_registration_of_a_dead_pid_is_swept(tmp_path: Path) -> None:
    from agy_host_bridge_mcp.cli_registration import config_file, entry_name
    from agy_host_bridge_mcp.testing import running_bridge

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # reaped: this pid is free, no process has it (pids are not reused this fast)
    home = tmp_path / "home"
    path = config_file({"HOME": str(home)})
    path.parent.mkdir(parents=True)
    mine = {"serverUrl": "http://127.0.0.1:1/mcp"}
    stale = {"serverUrl": "http://127.0.0.1:2/mcp", "headers": {"x-bridge-token": "old"}}
    path.write_text(json.dumps({"mcpServers": {"mine": mine, entry_name(dead.pid): stale}}))
    async with running_bridge(tmp_path, engine="stream-json") as bridge:
        during = json.loads(path.read_text())["mcpServers"]
        assert bridge.service.url is not None
    after = json.loads(path.read_text())["mcpServers"]
    assert entry_name(dead.pid) not in during, during  # swept at start
    assert during["mine"] == mine and during[entry_name(os.getpid())]["serverUrl"] == bridge.service.url
    assert after == {"mine": mine}  # ours removed at the end, the user's entry untouched


def _cli_run(session: str) -> list[str]:
    agent = f"{sys.executable} -m agy_host.testing.acp.agent --scenario happy"
    return [sys.executable, "-m", "agy_host.cli.main", "run", "--session", session, "--agent", agent, "hi"]


def _cli_env(tmp_path: Path) -> dict[str, str]:
    from agy_host.testing.isolation import isolated_env

    return isolated_env(tmp_path / "home", AGY_HOST_TTY="none")


def test_a_reader_that_left_stderr_never_fails_a_good_turn(tmp_path: Path) -> None:
    """``agy-host run ... 2>&1 | head -1``: stderr's reader is gone before the
    status line is written. The turn happened; its exit code says so."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            _cli_run("broken-stderr"),
            env=_cli_env(tmp_path),
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=write_end,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 0 and proc.stdout == b"HELLO\n"


def test_a_closed_stdout_is_refused_before_the_turn_with_a_reason(tmp_path: Path) -> None:
    """``agy-host run ... >&-``: nothing could show the answer, so no turn is
    started (no tokens spent), and the reason is given, not an internal error."""
    close_stdout_then_run = "import os, subprocess, sys; os.close(1); sys.exit(subprocess.call(sys.argv[1:]))"
    proc = subprocess.run(
        [sys.executable, "-c", close_stdout_then_run, *_cli_run("closed-stdout")],
        env=_cli_env(tmp_path),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=60,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 1 and "stdout is closed" in err and "internal error" not in err, err


# -- a store lock held by another process ---------------------------------------------


_HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0)
os.write(fd, b"pid %d (the-holder)\\n" % os.getpid())
print("held", flush=True)
time.sleep(300)
"""


def _hold_store_lock(tmp_path: Path, script: str = _HOLD, name: str | None = None) -> subprocess.Popen[str]:
    """A process holding the store's lock (``script`` takes it); ``name`` is its argv[0]."""
    state = tmp_path / "home" / ".local" / "state" / "agy-host"
    state.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [name or sys.executable, "-c", script, str(state / f"{STORE_FILE}.lock")],
        executable=sys.executable,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def _end(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.wait()
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def _plant(tmp_path: Path) -> None:
    """A session ``held`` to remove: ``sessions rm`` writes the store, so it
    takes the store's lock (reading commands never do)."""
    state = tmp_path / "home" / ".local" / "state" / "agy-host"
    SessionStore(state).set("held@acp", SessionBinding(conversation_id="c-held", engine="acp"))


def _sessions(tmp_path: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agy_host.cli.main", "sessions", *args],
        env=_cli_env(tmp_path),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _wait_notice_then_ctrl_c(tmp_path: Path) -> tuple[str, int, float]:
    """``sessions rm held`` on a held store: its waiting notice, its exit code
    after Ctrl-C, and how long that exit took."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agy_host.cli.main", "sessions", "rm", "held"],
        env=_cli_env(tmp_path),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        ready, _, _ = select.select([proc.stderr], [], [], 30)
        assert ready, "nothing said the command is waiting for a lock"
        line = proc.stderr.readline()
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=30)
        return line, code, time.monotonic() - started
    finally:
        _end(proc)


def test_a_held_store_lock_is_shown_and_ctrl_c_ends_the_wait(tmp_path: Path) -> None:
    """Another process holds ``sessions.json``'s lock (stopped with Ctrl-Z,
    say): the wait says who holds it, and Ctrl-C ends it (it used to wait
    silently, deaf to Ctrl-C, for as long as the holder lived)."""
    _plant(tmp_path)
    holder = _hold_store_lock(tmp_path)
    try:
        line, code, took = _wait_notice_then_ctrl_c(tmp_path)
    finally:
        _end(holder)
    assert "waiting for" in line and f"pid {holder.pid} (the-holder)" in line and "Ctrl-C" in line, line
    assert code == 130
    assert took < 5.0  # sanity: the 10 s bound was not waited out


_HOLD_SILENTLY = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)  # another program: it takes the lock and writes no note
print("held", flush=True)
time.sleep(300)
"""


def test_a_store_lock_held_by_another_program_names_that_program(tmp_path: Path) -> None:
    """Issue 28 item 13: another program holding the store's lock was named
    after the note an earlier agy-host left in the lock file (agy-host named
    itself). The kernel's list of locks names the real holder now."""
    _plant(tmp_path)
    first = _sessions(tmp_path, "rm", "held")  # it notes itself in the lock file while it holds it
    assert first.returncode == 0, first.stderr
    _plant(tmp_path)
    holder = _hold_store_lock(tmp_path, _HOLD_SILENTLY, "another-program")
    try:
        line, code, _ = _wait_notice_then_ctrl_c(tmp_path)
    finally:
        _end(holder)
    assert f"held by pid {holder.pid} (another-program -c)" in line, line
    assert "main.py" not in line and "agy-host" not in line.split("held by")[1], line
    assert code == 130


def test_a_held_store_lock_is_given_up_after_its_bound_with_the_holder_named(tmp_path: Path) -> None:
    from agy_host.fsutil import LOCK_TIMEOUT_S

    _plant(tmp_path)
    holder = _hold_store_lock(tmp_path)
    try:
        proc = _sessions(tmp_path, "rm", "held", timeout=LOCK_TIMEOUT_S + 50)
    finally:
        _end(holder)
    assert proc.returncode == 1, proc.stderr
    assert f"gave up after {LOCK_TIMEOUT_S:g}s" in proc.stderr and f"pid {holder.pid} (the-holder)" in proc.stderr
    assert "internal error" not in proc.stderr


def test_a_turn_waits_out_a_held_store_lock_once_and_says_so_once(tmp_path: Path) -> None:
    """A turn writes its binding when its conversation is known and again
    when it ends; with the lock held by a program that never lets go, the
    command waits the lock's bound once, tells the wait once and the lost
    binding once, and the turn's own outcome stands."""
    from agy_host.fsutil import LOCK_TIMEOUT_S
    from agy_host.testing.agents import fake_acp_agent_command

    agent = fake_acp_agent_command("happy", workdir=tmp_path / "agents")
    holder = _hold_store_lock(tmp_path)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "agy_host.cli.main", "run", "--agent", agent.command_line, "--session", "lk", "hi"],
            env=_cli_env(tmp_path),
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=LOCK_TIMEOUT_S * 4 + 30,
        )
    finally:
        _end(holder)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("waiting for") == 1, proc.stderr
    assert proc.stderr.count("could not save session 'lk'") == 1, proc.stderr
    assert f"gave up after {LOCK_TIMEOUT_S:g}s" in proc.stderr, proc.stderr


def test_commands_that_only_read_the_store_never_wait_for_its_lock(tmp_path: Path) -> None:
    """Issue 29: the store is a file per session, replaced whole by every
    write, so reading needs no lock: ``sessions list`` and ``show`` answer
    while another process holds it (they used to wait, then give up)."""
    _plant(tmp_path)
    holder = _hold_store_lock(tmp_path)
    try:
        listed = _sessions(tmp_path, "list")
        shown = _sessions(tmp_path, "show", "held")
    finally:
        _end(holder)
    for proc in (listed, shown):
        assert proc.returncode == 0 and "waiting for" not in proc.stderr, proc.stderr
    assert "c-held" in listed.stdout and "c-held" in shown.stdout
