"""``chat`` and ``ask`` on warm agents, and every command's signals on them:
real ``agy-host`` commands, a real keeper and the kit's fake ACP agent
(docs/sessions.md). The signals end a warm command exactly as they end a
cold one (tests/reliability/test_signals.py): the exit code, the binding,
the messages; the difference is the point of it: the agent stays warm.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from warm_kit import RUN_TIMEOUT, Warm, alive, methods, of, read_until, until, wait_gone

from agy_host.testing.agents import FakeAgent, fake_acp_agent_command
from agy_host.testing.store import binding_of

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")

#: The first prompt hangs (the agent honours session/cancel), every later one echoes.
HANG_THEN_ECHO = {"prompts": [[{"chunk": "T0"}, {"hang": True}], [{"echo": True}]]}


@pytest.fixture
def warm(tmp_path: Path) -> Iterator[Warm]:
    home = Warm(tmp_path)
    yield home
    home.close()


def binding(warm: Warm, session: str) -> dict[str, Any] | None:
    return binding_of(warm.home / ".local" / "state" / "agy-host", session)


def chat(warm: Warm, agent: FakeAgent, session: str, *lines: str, args: tuple[str, ...] = ()) -> Any:
    return warm.cli(
        "chat", "--agent", agent.command_line, "--session", session, *args, stdin="".join(f"{x}\n" for x in lines)
    )


def test_chat_runs_on_the_warm_agent_applies_its_settings_live_and_leaves_it_warm(warm: Warm) -> None:
    """``run``, then ``chat`` (with a ``/model`` switch), then ``run``: one
    agent process, one conversation, no load; the model change reaches the
    live agent as a per-turn setting."""
    agent = fake_acp_agent_command("echo", workdir=warm.tmp / "agents")
    assert warm.run(agent, "w", "one").returncode == 0
    talk = chat(warm, agent, "w", "two", "/model fake-model-low", "three")
    assert talk.returncode == 0, talk.stderr
    assert "two" in talk.stdout and "three" in talk.stdout, talk.stdout
    assert "(continued)" in talk.stdout, "the chat continues the session's conversation"
    last = warm.run(agent, "w", "four")
    assert last.returncode == 0 and of(last, "turn_end")[0]["response"] == "four", last.stderr
    called = methods(agent)
    assert called.count("initialize") == 1 and "session/load" not in called, called
    assert called.count("session/prompt") == 4, called
    switched = [m for m in agent.received() if m.get("method") == "session/set_config_option"]
    assert [m["params"]["value"] for m in switched] == ["fake-model-low"], switched
    assert called.index("session/set_config_option") == 4, "applied before the chat's second turn, not later"
    [info] = warm.status()["sessions"]
    assert (info["session"], info["warm"], info["turns"]) == ("w", True, 4), info


def test_chat_doctor_shows_the_warm_agent_from_the_keeper(warm: Warm) -> None:
    agent = fake_acp_agent_command("echo", workdir=warm.tmp / "agents")
    talk = chat(warm, agent, "d", "hello", "/doctor")
    assert talk.returncode == 0, talk.stderr
    [info] = warm.status()["sessions"]
    assert "warm agent:" in talk.stdout and f"agent pid {info['agent_pid']}" in talk.stdout, talk.stdout


def test_ask_runs_on_the_warm_agent(warm: Warm) -> None:
    agent = fake_acp_agent_command("echo", workdir=warm.tmp / "agents")
    first = warm.cli("ask", "--agent", agent.command_line, "--session", "a", "--format", "json", "one")
    second = warm.cli("ask", "--agent", agent.command_line, "--session", "a", "--format", "json", "two")
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    reports = [json.loads(first.stdout), json.loads(second.stdout)]
    assert [r["text"] for r in reports] == ["one", "two"] and [r["status"] for r in reports] == ["ok", "ok"]
    assert reports[0]["conversation_id"] == reports[1]["conversation_id"]
    called = methods(agent)
    assert called.count("initialize") == 1 and "session/load" not in called, called
    assert [s["warm"] for s in warm.status()["sessions"]] == [True]


@pytest.mark.parametrize("command", ["chat", "ask"])
def test_keep_alive_0_keeps_nothing_warm(warm: Warm, command: str) -> None:
    agent = fake_acp_agent_command("echo", workdir=warm.tmp / "agents")
    if command == "chat":
        done = chat(warm, agent, "k", "hi", args=("--keep-alive", "0"))
    else:
        done = warm.cli("ask", "--agent", agent.command_line, "--session", "k", "--keep-alive", "0", "hi")
    assert done.returncode == 0, done.stderr
    assert warm.status()["keeper"] is None, "--keep-alive 0 starts no keeper"


def test_a_cold_chat_ends_the_sessions_warm_agent_first(warm: Warm) -> None:
    """``chat --keep-alive 0`` on a session that is warm runs its own agent,
    so the warm one ends first: two agents never hold one conversation."""
    agent = fake_acp_agent_command("echo", workdir=warm.tmp / "agents")
    assert warm.run(agent, "c", "one").returncode == 0
    [info] = warm.status()["sessions"]
    talk = chat(warm, agent, "c", "two", args=("--keep-alive", "0"))
    assert talk.returncode == 0 and "two" in talk.stdout, talk.stderr
    assert warm.status()["sessions"] == [] and wait_gone(info["agent_pid"], 10), "the warm agent ended"


# -- signals ---------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_warm_chat_leaves_on_sigterm_or_sighup_between_turns_and_the_agent_stays_warm(
    warm: Warm, sig: signal.Signals
) -> None:
    agent = fake_acp_agent_command("happy", workdir=warm.tmp / "agents")
    proc = warm.start("chat", "--session", "sig", "--agent", agent.command_line, stdin=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write("hi\n")
    proc.stdin.flush()
    read_until(proc, "HELLO")  # the turn's answer; the chat then waits for a line
    proc.send_signal(sig)
    # not communicate(): it closes stdin, and a chat reading EOF leaves by itself, racing the signal
    proc.wait(timeout=RUN_TIMEOUT)
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert proc.returncode == 128 + sig, err
    assert f"ended by {sig.name}" in err, err
    assert binding(warm, "sig") is not None
    [info] = warm.status()["sessions"]
    assert info["warm"] and alive(info["agent_pid"]), "the chat ended; its agent stays warm"


def test_ctrl_c_in_a_warm_chat_aborts_the_turn_and_the_chat_goes_on(warm: Warm) -> None:
    agent = fake_acp_agent_command(HANG_THEN_ECHO, workdir=warm.tmp / "agents")
    proc = warm.start("chat", "--session", "c", "--agent", agent.command_line, stdin=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write("first\n")
    proc.stdin.flush()
    until(lambda: "session/prompt" in methods(agent), "the agent's prompt")
    proc.send_signal(signal.SIGINT)
    until(lambda: "session/cancel" in methods(agent), "the agent's cancel", 10)
    out, err = proc.communicate("second\n", timeout=RUN_TIMEOUT)
    assert proc.returncode == 0, err
    assert "interrupting the turn" in err and "second" in out, out + err
    [info] = warm.status()["sessions"]
    assert info["warm"] and info["turns"] == 2, "both turns ran on the warm agent, which stays warm"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_end_a_warm_ask_like_an_abort_and_the_agent_stays_warm(
    warm: Warm, sig: signal.Signals
) -> None:
    """As on the cold path: the turn is aborted (the agent gets its cancel),
    the binding stored, the signal's exit code; the agent stays warm."""
    agent = fake_acp_agent_command(HANG_THEN_ECHO, workdir=warm.tmp / "agents")
    proc = warm.start("ask", "--session", "s", "--agent", agent.command_line, "--format", "json", "go")
    until(lambda: "session/prompt" in methods(agent), "the agent's prompt")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=RUN_TIMEOUT)
    assert proc.returncode == 128 + sig, out + err
    assert "session/cancel" in methods(agent), "the agent was told to stop"
    assert binding(warm, "s") is not None, "the session binding was lost"
    report = json.loads(out)
    assert report["status"] == "aborted" and report["exit_code"] == 128 + sig, report
    assert f"{sig.name}: ending the turn" in err, err
    [info] = warm.status()["sessions"]
    assert info["warm"] and not info["turn_running"], info
    again = warm.run(agent, "s", "again")
    assert again.returncode == 0 and of(again, "turn_end")[0]["response"] == "again", again.stderr
    assert methods(agent).count("initialize") == 1, "the same warm agent"
