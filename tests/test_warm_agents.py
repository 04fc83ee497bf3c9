"""Warm agents across commands: real ``agy-host`` commands, a real keeper
process and the kit's fake ACP agent (docs/sessions.md).

Each test lives in its own HOME (so its own keeper directory) with warm
agents on, and ends by stopping its keeper and checking that no keeper and
no agent of its own is left running (:mod:`warm_kit`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from warm_kit import RUN_TIMEOUT, Warm, alive, events, of, until, wait_gone

from agy_host.testing.agents import fake_acp_agent_command
from agy_host.testing.store import edit_bindings

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")


@pytest.fixture
def warm(tmp_path: Path) -> Iterator[Warm]:
    home = Warm(tmp_path)
    yield home
    home.close()


def test_the_second_command_runs_on_the_warm_agent(warm: Warm) -> None:
    """No second spawn, initialize or load: the same agent process answers,
    in the same conversation, and the output has the cold path's shape."""
    agent = fake_acp_agent_command("echo", workdir=warm.tmp / "agents")
    first = warm.run(agent, "w", "one")
    second = warm.run(agent, "w", "two")
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    methods = [m.get("method") for m in agent.received() if "method" in m]
    assert methods.count("initialize") == 1 and "session/load" not in methods, methods
    assert methods.count("session/prompt") == 2, methods
    ends = of(first, "turn_end") + of(second, "turn_end")
    assert [e["response"] for e in ends] == ["one", "two"]
    assert ends[0]["conversation_id"] == ends[1]["conversation_id"]
    assert [e["type"] for e in events(second)] == [e["type"] for e in events(first)]
    [info] = warm.status()["sessions"]
    assert (info["session"], info["warm"], info["turns"], info["turn_running"]) == ("w", True, 2, False)
    assert info["engine"] == "acp" and info["agent_pid"] and alive(info["agent_pid"])


def test_a_keeper_that_ends_leaves_no_lock_or_folder_behind(warm: Warm) -> None:
    """Its socket, its lock file and (when empty) the runtime folder go with
    it: with a long state path that folder is in /tmp, one per state dir, and
    test runs had left thousands."""
    agent = fake_acp_agent_command("echo", workdir=warm.tmp / "agents")
    assert warm.run(agent, "w", "one").returncode == 0
    where = warm.runtime_dir()
    assert sorted(p.suffix for p in where.iterdir()) == [".lock", ".sock"]
    warm.close()
    assert not where.exists(), sorted(where.iterdir())
    for args in (["sessions", "status"], ["sessions", "cancel", "w"], ["sessions", "stop", "--all"]):
        warm.cli(*args)
    assert warm.run(agent, "w", "cold", "--keep-alive", "0").returncode == 0
    assert not where.exists(), "a command that only asks a running keeper made its folder again"
    assert warm.run(agent, "w", "two").returncode == 0, "the next command starts a keeper there again"
    assert warm.keeper_pid() is not None


def test_warm_and_cold_give_the_same_output(warm: Warm) -> None:
    agent = fake_acp_agent_command("echo", workdir=warm.tmp / "agents")
    cold = warm.run(agent, "c", "same", "--keep-alive", "0")
    assert warm.status()["keeper"] is None, "--keep-alive 0 starts no keeper"
    warm.run(agent, "h", "first")
    hot = warm.run(agent, "h", "same")

    def shape(proc: subprocess.CompletedProcess[str]) -> list[tuple[str, Any]]:
        out = []
        for event in events(proc):
            kept = {k: v for k, v in event.items() if k not in ("duration_s", "session", "conversation_id")}
            out.append((kept["type"], kept))
        return out

    assert shape(cold) == shape(hot)
    assert cold.returncode == hot.returncode == 0


def test_an_unnamed_run_keeps_nothing_warm(warm: Warm) -> None:
    agent = fake_acp_agent_command("echo", workdir=warm.tmp / "agents")
    proc = warm.cli("run", "--agent", agent.command_line, "hi")
    assert proc.returncode == 0, proc.stderr
    assert warm.status()["keeper"] is None


def test_the_attached_command_answers_the_warm_agents_permission_requests(warm: Warm) -> None:
    """Each command's own terminal answers (``--permissions ask``): the
    prompt is drawn on the attached command's terminal, not the first one's."""
    from agy_host.testing.terminal import Pty

    agent = fake_acp_agent_command("permission", workdir=warm.tmp / "agents")
    with Pty() as first_tty, Pty() as second_tty:
        first_tty.type("2\n")  # 2) deny
        denied = warm.run(agent, "p", "go", "--permissions", "ask", AGY_HOST_TTY=first_tty.path)
        second_tty.type("1\n")  # 1) allow
        allowed = warm.run(agent, "p", "go", "--permissions", "ask", AGY_HOST_TTY=second_tty.path)
        first_screen, second_screen = first_tty.screen(), second_tty.screen()
    context = f"{denied.stdout}{denied.stderr}{allowed.stdout}{allowed.stderr}\n{first_screen}\n{second_screen}"
    assert denied.returncode == 5 and "DENIED" in denied.stdout, context
    assert allowed.returncode == 0 and "PERMIS" in allowed.stdout, context
    assert first_screen.count("asks for permission") == 1 and second_screen.count("asks for permission") == 1, context
    assert [m.get("method") for m in agent.received()].count("initialize") == 1, "one warm agent answered both"


def test_another_agent_command_starts_cold_and_the_old_agent_ends(warm: Warm) -> None:
    one = fake_acp_agent_command("echo", workdir=warm.tmp / "a1")
    two = fake_acp_agent_command("echo", workdir=warm.tmp / "a2")
    assert warm.run(one, "s", "x").returncode == 0
    [before] = warm.status()["sessions"]
    assert warm.run(two, "s", "y").returncode == 0
    [after] = warm.status()["sessions"]
    assert after["agent_pid"] != before["agent_pid"]
    assert wait_gone(before["agent_pid"], 10), "the old warm agent ended"


def test_an_edited_config_file_starts_cold_and_the_old_agent_ends(warm: Warm) -> None:
    """The warm host was built from config.toml as it was: after an edit the
    next command starts cold on the new config, never the stale one."""
    agent = fake_acp_agent_command("echo", workdir=warm.tmp / "agents")
    config = warm.home / ".config" / "agy-host" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('system_prompt = "first rules"\n')
    assert warm.run(agent, "s", "x").returncode == 0
    [before] = warm.status()["sessions"]
    assert warm.run(agent, "s", "y").returncode == 0
    [same] = warm.status()["sessions"]
    assert same["agent_pid"] == before["agent_pid"], "an unchanged config stays warm"
    config.write_text('system_prompt = "second rules"\n')
    third = warm.run(agent, "s", "z")
    assert third.returncode == 0, third.stderr
    [after] = warm.status()["sessions"]
    assert after["agent_pid"] != before["agent_pid"], "the edited config started a new agent"
    assert wait_gone(before["agent_pid"], 10), "the old warm agent ended"
    assert [m.get("method") for m in agent.received()].count("initialize") == 2


def test_sessions_cancel_ends_the_running_turn_from_another_terminal(warm: Warm) -> None:
    agent = fake_acp_agent_command("slow", workdir=warm.tmp / "agents")
    proc = warm.start_run(agent, "slow", "go")
    until(lambda: any(s["turn_running"] for s in warm.status()["sessions"]), "the turn to run")
    cancel = warm.cli("sessions", "cancel", "slow")
    assert cancel.returncode == 0, cancel.stderr
    out, err = proc.communicate(timeout=RUN_TIMEOUT)
    assert proc.returncode == 130, out + err
    assert [s["warm"] for s in warm.status()["sessions"]] == [True], "the agent stays warm"
    idle = warm.cli("sessions", "cancel", "slow")  # warm, nothing runs now: nothing to cancel
    assert idle.returncode == 0 and "no turn is running on session 'slow'; nothing to cancel" in idle.stdout, idle
    unknown = warm.cli("sessions", "cancel", "nosuch")
    assert unknown.returncode == 4 and "no warm session 'nosuch'" in unknown.stderr, unknown
    stop = warm.cli("sessions", "stop", "nosuch")
    assert stop.returncode == 0 and "no warm agent for session 'nosuch'; nothing to stop" in stop.stdout, stop


def test_a_killed_client_gets_its_turn_cancelled_and_the_agent_stays_warm(warm: Warm) -> None:
    agent = fake_acp_agent_command("slow", workdir=warm.tmp / "agents")
    proc = warm.start_run(agent, "k", "go")
    until(lambda: any(s["turn_running"] for s in warm.status()["sessions"]), "the turn to run")
    [info] = warm.status()["sessions"]
    proc.kill()
    proc.communicate(timeout=10)
    killed = time.monotonic()
    until(lambda: "session/cancel" in [m.get("method") for m in agent.received()], "the agent's cancel", 5)
    assert time.monotonic() - killed < 3.0, "the turn is cancelled when its command goes, not when it would end"
    until(lambda: not warm.status()["sessions"][0]["turn_running"], "the turn to end")
    [after] = warm.status()["sessions"]
    assert after["warm"] and after["agent_pid"] == info["agent_pid"]


def test_a_killed_keeper_ends_the_attached_command_and_its_agents(warm: Warm) -> None:
    agent = fake_acp_agent_command("slow", workdir=warm.tmp / "agents")
    assert warm.run(fake_acp_agent_command("echo", workdir=warm.tmp / "e"), "other", "x").returncode == 0
    proc = warm.start_run(agent, "kk", "go")
    until(lambda: any(s["turn_running"] for s in warm.status()["sessions"]), "the turn to run")
    pids = [s["agent_pid"] for s in warm.status()["sessions"]]
    keeper = warm.keeper_pid()
    assert keeper is not None
    os.kill(keeper, signal.SIGKILL)
    started = time.monotonic()
    out, err = proc.communicate(timeout=RUN_TIMEOUT)
    assert proc.returncode == 1 and time.monotonic() - started < 3, out + err
    assert "keeper" in err and "binding is kept" in err, err
    for pid in pids:
        assert wait_gone(pid, 10), f"agent {pid} outlived its keeper"
    again = warm.run(fake_acp_agent_command("echo", workdir=warm.tmp / "e"), "other", "again")
    assert again.returncode == 0 and of(again, "turn_end")[0]["response"] == "again", again.stderr


def test_an_agent_that_died_while_warm_is_replaced_without_an_error(warm: Warm) -> None:
    agent = fake_acp_agent_command("echo", workdir=warm.tmp / "agents")
    assert warm.run(agent, "d", "one").returncode == 0
    [info] = warm.status()["sessions"]
    os.kill(info["agent_pid"], signal.SIGKILL)
    assert wait_gone(info["agent_pid"], 5)
    second = warm.run(agent, "d", "two")
    assert second.returncode == 0 and of(second, "turn_end")[0]["response"] == "two", second.stdout + second.stderr
    assert "error" not in second.stderr.lower(), second.stderr


def test_the_keepers_place_is_private_and_a_hostile_client_is_dropped(warm: Warm) -> None:
    agent = fake_acp_agent_command("echo", workdir=warm.tmp / "agents")
    assert warm.run(agent, "h", "one").returncode == 0
    where = warm.runtime_dir()
    assert where.stat().st_mode & 0o777 == 0o700
    [sock] = list(where.glob("keeper-*.sock"))
    assert sock.stat().st_mode & 0o777 == 0o600
    for garbage in (b"\xff\xff\xff\xff", b"\x00\x00\x00\x05hello", b"\x00\x00\x00\x10" + b'{"kind":"hello"}'):
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(str(sock))
            client.sendall(garbage)
            client.settimeout(5)
            with contextlib.suppress(OSError):
                client.recv(100)
    hello = json.dumps({"kind": "hello", "wire": 1, "build": "0.0.0-other", "pid": 1}).encode()
    with socket.socket(socket.AF_UNIX) as client:
        client.connect(str(sock))
        client.sendall(len(hello).to_bytes(4, "big") + hello)
        client.settimeout(5)
        reply = client.recv(1000)
    assert b'"refused"' in reply and b"0.0.0-other" in reply
    assert warm.run(agent, "h", "two").returncode == 0, "the keeper goes on"


def test_doctor_shows_the_keeper_and_its_warm_agents(warm: Warm) -> None:
    agent = fake_acp_agent_command("echo", workdir=warm.tmp / "agents")
    before = warm.cli("doctor", "--agent", agent.command_line)
    assert "not running (nothing is warm)" in before.stdout, before.stdout
    assert warm.run(agent, "doc", "x").returncode == 0
    after = warm.cli("doctor", "--agent", agent.command_line)
    pid = warm.keeper_pid()
    assert f"pid {pid}" in after.stdout and "doc" in after.stdout and "idle" in after.stdout, after.stdout


def test_a_warm_turn_carries_the_agents_commands_as_a_cold_one_does(warm: Warm) -> None:
    """The agent advertises its commands once, when its session opens; a
    command whose turn runs warm still gets them (``commands`` event)."""
    agent = fake_acp_agent_command("plan", workdir=warm.tmp / "agents")
    cold = warm.run(agent, "cmd", "one")
    hot = warm.run(agent, "cmd", "two")
    assert [m.get("method") for m in agent.received()].count("initialize") == 1
    assert of(cold, "commands") and of(hot, "commands") == of(cold, "commands"), hot.stdout
    types = [e["type"] for e in events(hot)]
    assert types.index("commands") == types.index("turn_start") + 1, types


def test_a_cold_command_ends_the_sessions_warm_agent_first(warm: Warm) -> None:
    """``--keep-alive 0`` on a session with a warm agent: two agents never
    hold one conversation; the warm one ends before the cold turn."""
    agent = fake_acp_agent_command("echo", workdir=warm.tmp / "agents")
    assert warm.run(agent, "both", "one").returncode == 0
    [info] = warm.status()["sessions"]
    cold = warm.run(agent, "both", "two", "--keep-alive", "0")
    assert cold.returncode == 0, cold.stderr
    assert wait_gone(info["agent_pid"], 10), "the warm agent ended"
    assert warm.status()["sessions"] == []


def test_a_warm_agent_another_process_went_past_is_replaced(warm: Warm) -> None:
    """A turn ran on the session elsewhere (here: the binding moved on, as a
    cold command of another build or the Python API would leave it): the
    warm agent does not have that exchange, so the next command starts cold."""
    agent = fake_acp_agent_command("echo", workdir=warm.tmp / "agents")
    assert warm.run(agent, "moved", "one").returncode == 0
    [info] = warm.status()["sessions"]
    edit_bindings(
        warm.home / ".local" / "state" / "agy-host",
        lambda bindings: [b.update(updated_at="2099-01-01T00:00:00Z") for b in bindings.values()],
    )
    again = warm.run(agent, "moved", "two")
    assert again.returncode == 0, again.stderr
    [after] = warm.status()["sessions"]
    assert after["agent_pid"] != info["agent_pid"], "a new agent, which loads the conversation"
    assert "session/load" in [m.get("method") for m in agent.received()]


def test_a_keeper_whose_code_was_upgraded_ends_once_idle(warm: Warm, tmp_path: Path) -> None:
    """A newer agy-host never talks to an older keeper (another build, another
    socket); the older one notices the upgrade and ends with its agents."""
    import shutil

    import agy_host

    site = tmp_path / "site"
    shutil.copytree(Path(agy_host.__file__).parent, site / "agy_host")
    warm.env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [warm.env.get("PYTHONPATH")])])
    agent = fake_acp_agent_command("echo", workdir=warm.tmp / "agents")
    assert warm.run(agent, "old", "one").returncode == 0
    keeper = warm.keeper_pid()
    [info] = warm.status()["sessions"]
    assert keeper is not None
    later = time.time() + 5
    os.utime(site / "agy_host" / "keeper" / "wire.py", (later, later))  # an upgrade, as pip leaves it
    assert wait_gone(keeper, 20), "the old keeper ended"
    assert wait_gone(info["agent_pid"], 10), "and its agent with it"


#: A render hook that holds the keeper at the turn's end until the test has
#: seen ``turn_end`` on the command's stdout (a file it creates), then says
#: whether it was released or gave up.
SLOW_HOOK = """
import os, time
from pathlib import Path
from agy_host import hookimpl
from agy_host.contract.events import TurnEnded

@hookimpl
def agy_host_render_event(event):
    if not isinstance(event, TurnEnded) or "SLOW_HOOK_DIR" not in os.environ:
        return
    folder = Path(os.environ["SLOW_HOOK_DIR"])
    deadline = time.monotonic() + 20
    while not (folder / "seen").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    (folder / "hook").write_text("released" if (folder / "seen").exists() else "gave up")
"""


@pytest.mark.parametrize("thin", ["1", "0"])
def test_the_command_shows_the_turns_end_before_the_keepers_own_hooks_run(tmp_path: Path, thin: str) -> None:
    """As on the cold path, where the renderer draws ``turn_end`` before the
    render hooks (the transcript's write of a long answer) run: the keeper
    sends the end at once, and the command still exits only after them."""
    from agy_host.testing.isolation import install_plugin

    site = install_plugin(tmp_path / "site", "slow_end_hook", SLOW_HOOK)
    folder = tmp_path / "hook"
    folder.mkdir()
    path = os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
    warm = Warm(tmp_path, PYTHONPATH=path, SLOW_HOOK_DIR=str(folder), AGY_HOST_THIN=thin)
    try:
        agent = fake_acp_agent_command("echo", workdir=warm.tmp / "agents")
        (folder / "seen").touch()  # the first command starts the keeper; its hook is not held
        assert warm.run(agent, "s", "one").returncode == 0
        (folder / "seen").unlink()
        proc = warm.start_run(agent, "s", "two")
        assert proc.stdout is not None
        for line in proc.stdout:
            if json.loads(line).get("type") == "turn_end":
                (folder / "seen").touch()
                break
        proc.communicate(timeout=RUN_TIMEOUT)
        assert proc.returncode == 0
        assert (folder / "hook").read_text() == "released", "turn_end came only after the keeper's hooks"
    finally:
        warm.close()


def _edit_asking(*options: tuple[str, str]) -> dict[str, Any]:
    """A permission request for an edit, offering ``(option id, kind)``; the
    agent then says which option it got."""
    offered = [{"optionId": oid, "name": f"option {oid}", "kind": kind} for oid, kind in options]
    return {
        "permission": {
            "tool_call": {"toolCallId": "edit-1", "title": "Edit notes.txt", "kind": "edit"},
            "options": offered,
            "branches": {oid: [{"chunk": f"[{oid}]"}] for oid, _ in options},
        }
    }


def test_an_always_answer_stays_with_the_command_that_gave_it(warm: Warm) -> None:
    """The person picks "always": the warm agent is sent the one-time answer
    (it outlives the command), the command's own memory answers its second
    request without asking, and the next command is asked again."""
    from agy_host.testing.terminal import Pty

    asking = _edit_asking(("always", "allow_always"), ("once", "allow_once"), ("no", "reject_once"))
    scenario = {"prompts": [[{"echo": True}], [asking, asking], [asking]]}
    agent = fake_acp_agent_command(scenario, workdir=warm.tmp / "agents")
    assert warm.run(agent, "a", "warm up", "--permissions", "ask").returncode == 0
    with Pty() as tty:
        tty.type("1\n")  # 1) option always
        first = warm.run(agent, "a", "edit twice", "--permissions", "ask", AGY_HOST_TTY=tty.path)
        screen = tty.screen()
    context = f"{first.stdout}{first.stderr}\n{screen}"
    assert first.returncode == 0 and "[once][once]" in first.stdout, context
    assert screen.count("asks for permission") == 1, "the command remembers its own 'always'"
    cards = [e for e in events(first) if e["type"] == "permission"]
    assert [(c["selected"], c["policy"]) for c in cards] == [("once", "ask"), ("once", "remembered")], context
    assert "sent to the warm agent as 'option once'" in cards[0]["reason"], context
    later = warm.run(agent, "a", "edit again", "--permissions", "ask", AGY_HOST_TTY="none")
    # this command's person never said "always", and nobody can be asked: refused
    assert later.returncode == 5 and "[no]" in later.stdout, later.stdout
    assert [m.get("method") for m in agent.received()].count("initialize") == 1, "one warm agent throughout"


def test_an_agent_that_offers_no_one_time_answer_keeps_it_and_is_not_kept_warm(warm: Warm) -> None:
    from agy_host.testing.terminal import Pty

    asking = _edit_asking(("always", "allow_always"), ("no", "reject_once"))
    scenario = {"prompts": [[{"echo": True}], [asking], [{"echo": True}]]}
    agent = fake_acp_agent_command(scenario, workdir=warm.tmp / "agents")
    assert warm.run(agent, "k", "warm up", "--permissions", "ask").returncode == 0
    [before] = warm.status()["sessions"]
    with Pty() as tty:
        tty.type("1\n")  # 1) option always
        ran = warm.run(agent, "k", "edit", "--permissions", "ask", AGY_HOST_TTY=tty.path)
    assert ran.returncode == 0 and "[always]" in ran.stdout, ran.stderr
    assert "is not kept warm for another command" in ran.stderr, ran.stderr
    assert wait_gone(before["agent_pid"], 15), "the agent that keeps the answer ended with the command"
    assert warm.status()["sessions"] == []


def test_a_replaced_warm_agent_says_what_differed_by_name_only(warm: Warm) -> None:
    """New-user trial: a command from another shell replaced the warm agent
    and lost a Gemini conversation without saying why. The command now says
    which settings or variables differ (names, never values), and variables
    a shell sets only for itself leave the agent warm."""
    agent = fake_acp_agent_command("echo", workdir=warm.tmp / "agents")
    assert warm.run(agent, "d", "one", PYENV_SHELL="bash").returncode == 0
    [first] = warm.status()["sessions"]
    same = warm.run(agent, "d", "two", PYENV_SHELL="zsh", VTE_VERSION="7600")
    assert same.returncode == 0 and not of(same, "notice"), same.stdout
    assert warm.status()["sessions"][0]["agent_pid"] == first["agent_pid"], "shell-only variables keep it warm"
    other = warm.run(agent, "d", "three", MY_API_KEY="sk-secret-value", PYENV_SHELL="zsh")
    assert other.returncode == 0, other.stderr
    [notice] = [e for e in of(other, "notice") if e.get("code") == "warm-replaced"]
    assert "the environment (MY_API_KEY)" in notice["message"], notice
    assert "sk-secret-value" not in other.stdout + other.stderr
    asked = warm.run(agent, "d", "four", "--permissions", "ask", MY_API_KEY="sk-secret-value")
    assert asked.returncode == 0 and not of(asked, "notice"), "--permissions ask is the default's policy"
    again = warm.run(agent, "d", "five", "--permissions", "auto", MY_API_KEY="sk-secret-value")
    [notice] = [e for e in of(again, "notice") if e.get("code") == "warm-replaced"]
    assert "other settings: --permissions;" in notice["message"], notice
