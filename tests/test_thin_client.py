"""The warm path's thin client (agy_host.keeper.thin): real ``agy-host run``
commands, a real keeper and the kit's fake ACP agent.

Each command that should take the thin path runs under ``python -X
importtime``, so the test sees what it imported: the thin path imports
neither trio nor typer's application nor an engine; a command it cannot
take whole goes the normal way (which builds the typer app). Its output is
compared with the normal path's (``AGY_HOST_THIN=0``) on the same warm
agent: the same events, text, closing line, ``done`` document and exit code.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from warm_kit import RUN_TIMEOUT, Warm, alive, methods, until, wait_gone

from agy_host.testing.agents import FakeAgent, fake_acp_agent_command
from agy_host.testing.terminal import Pty

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")

#: The first prompt answers (the command that warms the agent up); the later ones play ``then``.
WARM_UP = [{"echo": True}, {"stop": "end_turn"}]


class Ran:
    """One command: its exit code, stdout, stderr without the import lines, and what it imported."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code = code
        self.out = out
        lines = err.splitlines(keepends=True)
        self.imported = {m.group(1) for line in lines if (m := re.match(r"import time:.*\|\s*([\w.]+)\s*$", line))}
        self.err = "".join(line for line in lines if not line.startswith("import time:"))

    @property
    def thin(self) -> bool:
        """The command ran without the typer application, trio or an engine."""
        return (
            "agy_host.keeper.thin" in self.imported
            and not self.imported & {"agy_host.cli.app", "trio"}
            and not any(m.startswith("agy_host_acp") for m in self.imported)
        )

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.out.splitlines() if line.startswith("{")]

    def context(self) -> str:
        return f"exit {self.code}\n--- stdout\n{self.out}\n--- stderr\n{self.err}"


class Thin(Warm):
    """Warm's HOME, with commands run under ``-X importtime``."""

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-X", "importtime", "-m", "agy_host.cli.main", *args]

    def command(self, agent: FakeAgent, session: str, prompt: str, *args: str, **env: str) -> Ran:
        proc = self.cli("run", "--agent", agent.command_line, "--session", session, *args, prompt, **env)
        return Ran(proc.returncode, proc.stdout, proc.stderr)

    def popen(self, agent: FakeAgent, session: str, prompt: str, *args: str) -> subprocess.Popen[str]:
        return self.start("run", "--agent", agent.command_line, "--session", session, *args, prompt)


@pytest.fixture
def thin(tmp_path: Path) -> Iterator[Thin]:
    home = Thin(tmp_path)
    yield home
    home.close()


def agent_then(home: Thin, then: list[dict[str, Any]], **scenario: Any) -> FakeAgent:
    return fake_acp_agent_command({"prompts": [WARM_UP, then], **scenario}, workdir=home.tmp / "agents")


def turn_started(home: Thin, session: str, **scenario: Any) -> tuple[FakeAgent, subprocess.Popen[str]]:
    """A warm agent whose second turn hangs after its first chunk, and that
    turn's command (``--format json``), once it started."""
    agent = agent_then(home, [{"chunk": "started"}, {"hang": True}], **scenario)
    assert home.command(agent, session, "warm up", "--format", "json").code == 0
    proc = home.popen(agent, session, "go", "--format", "json")
    assert proc.stdout is not None
    assert '"turn_start"' in proc.stdout.readline()
    return agent, proc


def ended(proc: subprocess.Popen[str]) -> Ran:
    out, err = proc.communicate(timeout=RUN_TIMEOUT)
    return Ran(proc.returncode, out, err)


def steady(ran: Ran) -> tuple[int, str, str]:
    """What must not differ between two runs of one command: durations and
    the session's conversation id aside (they are the agent's and the clock's)."""
    out = re.sub(r'"duration_s":[0-9.e+-]+', '"duration_s":0', ran.out)
    err = re.sub(r" in \d+\.\ds;", " in 0.0s;", ran.err)
    return ran.code, out, err


def test_a_warm_turn_runs_in_the_thin_client(thin: Thin) -> None:
    agent = fake_acp_agent_command("echo", workdir=thin.tmp / "agents")
    first = thin.command(agent, "t", "one", "--format", "json")
    assert first.code == 0 and not first.thin, first.context()  # no keeper yet: the normal path starts one
    second = thin.command(agent, "t", "two", "--format", "json")
    assert second.code == 0, second.context()
    assert second.thin, sorted(m for m in second.imported if m.startswith(("agy_host", "trio", "typer")))
    assert [e["type"] for e in second.events()] == ["turn_start", "text", "turn_end", "done"], second.context()
    assert second.events()[-2]["response"] == "two"
    sent = methods(agent)
    assert sent.count("initialize") == 1 and sent.count("session/prompt") == 2, sent


def test_the_thin_client_leaves_out_what_it_does_not_use(thin: Thin) -> None:
    """Start-up is most of a warm turn: no file-locking or secrets modules
    (only the config's writer and a generated session name need them)."""
    agent = fake_acp_agent_command("echo", workdir=thin.tmp / "agents")
    thin.command(agent, "t", "one")
    second = thin.command(agent, "t", "two")
    assert second.thin and second.code == 0, second.context()
    assert not second.imported & {"agy_host.fsutil", "secrets", "tempfile"}, sorted(second.imported)


SAME_OUTPUT = {
    "json, usage": ("usage", ("--format", "json")),
    "text, usage": ("usage", ()),
    "quiet": ("usage", ("--format", "quiet")),
    "text, plan, verbose": ("plan", ("--verbose", "-f", "plain")),
    "json, model and limits": ("happy", ("-f", "json", "-m", "fake-model", "--timeout", "2", "--max-tokens", "900")),
    "text, an edit and its diff": ("tool-diff", ("--format", "text")),
    "json, an agent error": ("prompt-error", ("--format", "json")),
    "text, an agent error": ("prompt-error", ()),
}


@pytest.mark.parametrize("case", sorted(SAME_OUTPUT))
def test_the_thin_client_says_what_the_normal_path_says(case: str, thin: Thin) -> None:
    scenario, flags = SAME_OUTPUT[case]
    agent = fake_acp_agent_command(scenario, workdir=thin.tmp / "agents")
    thin.command(agent, "same", "warm up", *flags)
    quick = thin.command(agent, "same", "hello world", *flags)
    full = thin.command(agent, "same", "hello world", *flags, AGY_HOST_THIN="0")
    assert quick.thin, quick.context()
    assert not full.thin and "agy_host.cli.app" in full.imported, full.context()
    assert steady(quick) == steady(full), f"thin:\n{quick.context()}\nnormal:\n{full.context()}"
    assert methods(agent).count("initialize") == 1, f"all three turns on one warm agent: {methods(agent)}"


def merged(seen: tuple[int, str, str]) -> tuple[int, str, str]:
    """``steady`` output with consecutive ``text`` events joined: how a flood's
    text is cut into events follows the pipe's reads, which differ run to run."""
    code, out, err = seen
    if not out.startswith("{"):
        return seen
    events: list[dict[str, Any]] = []
    for line in out.splitlines():
        event = json.loads(line)
        if event.get("type") == "text" and events and events[-1].get("type") == "text":
            events[-1] = {**events[-1], "delta": events[-1]["delta"] + event["delta"]}
        else:
            events.append(event)
    return code, "\n".join(json.dumps(e) for e in events), err


#: 1- to 4-byte characters and JSON escapes, 24,000 times: a 0.7 MB answer.
LONG_PIECE = 'line "quoted" \u00e9\u4e2d\U0001f600\n'


@pytest.mark.parametrize("flags", [("--format", "json"), ("--format", "quiet"), ()], ids=["json", "quiet", "text"])
def test_a_long_answer_comes_once_and_reads_the_same_warm_thin_warm_full_and_cold(
    thin: Thin, flags: tuple[str, ...]
) -> None:
    """The keeper leaves ``turn_end``'s answer out when the text events
    carried it (keeper/rebuild.py); both clients put it back: the same
    output as a cold command's."""
    played = [{"flood": True}, {"stop": "end_turn"}]
    long = {"flood_count": 24_000, "flood_text": LONG_PIECE}
    agent = fake_acp_agent_command({"prompts": [WARM_UP, played], **long}, workdir=thin.tmp / "agents")
    assert thin.command(agent, "long", "warm up").code == 0
    quick = thin.command(agent, "long", "go", *flags)
    full = thin.command(agent, "long", "go", *flags, AGY_HOST_THIN="0")
    fresh = fake_acp_agent_command({"prompts": [played], **long}, workdir=thin.tmp / "agents")
    cold = thin.command(fresh, "long", "go", *flags, "--keep-alive", "0")
    assert quick.thin and not full.thin, quick.context()
    assert merged(steady(quick)) == merged(steady(full)), (
        f"thin:\n{quick.context()[:3000]}\nfull:\n{full.context()[:3000]}"
    )
    whole = LONG_PIECE * 24_000
    for ran in (quick, cold):
        assert ran.code == 0, ran.context()[:3000]
        if flags[1:] == ("json",):
            [end] = [e for e in ran.events() if e["type"] == "turn_end"]
            assert end["response"] == whole and "response_elided" not in end
            assert [e["type"] for e in ran.events()] == [e["type"] for e in cold.events()]
        else:
            assert ran.out == whole


def test_ctrl_c_through_the_thin_client_aborts_the_turn_and_the_agent_stays_warm(thin: Thin) -> None:
    agent, proc = turn_started(thin, "c", cancel="graceful")
    proc.send_signal(signal.SIGINT)
    ran = ended(proc)
    assert ran.thin, ran.context()
    assert ran.code == 130, ran.context()
    assert "agy-host: interrupting the turn (Ctrl-C again to stop waiting)" in ran.err, ran.context()
    assert ran.events()[-1]["type"] == "done" and ran.events()[-1]["exit_code"] == 130, ran.context()
    assert "session/cancel" in methods(agent)
    [info] = thin.status()["sessions"]
    assert info["warm"] and not info["turn_running"] and alive(info["agent_pid"])


def test_a_second_signal_stops_waiting_and_sigterm_says_so(thin: Thin) -> None:
    """An agent that ignores the cancel: SIGTERM aborts, a second stops
    waiting for it; the exit code is SIGTERM's, as on the full client."""
    agent, proc = turn_started(thin, "t2", cancel="ignore")
    proc.send_signal(signal.SIGTERM)
    until(lambda: "session/cancel" in methods(agent), "the agent's cancel", 10)
    proc.send_signal(signal.SIGTERM)
    ran = ended(proc)
    assert ran.thin, ran.context()
    assert ran.code == 143, ran.context()
    assert "agy-host: SIGTERM: ending the turn (SIGTERM again to stop waiting)" in ran.err, ran.context()
    assert "agy-host: not waiting for the agent any longer" in ran.err, ran.context()
    assert ran.err.rstrip().endswith("agy-host: ended by SIGTERM"), ran.context()


def test_a_permission_request_is_answered_by_the_commands_own_terminal(thin: Thin) -> None:
    """The thin client hands the turn to the full client at the request: the
    prompt is drawn on this command's terminal and its answer goes back."""
    agent = fake_acp_agent_command("permission", workdir=thin.tmp / "agents")
    assert thin.command(agent, "p", "go", "--permissions", "ask", "-f", "json", AGY_HOST_TTY="none").code == 5
    with Pty() as tty:
        tty.type("1\n")  # 1) allow
        ran = thin.command(agent, "p", "go", "--permissions", "ask", "-f", "json", AGY_HOST_TTY=tty.path)
        screen = tty.screen()
    context = f"{ran.context()}\n--- terminal\n{screen}"
    assert "agy_host.keeper.thin" in ran.imported and "agy_host.cli.app" not in ran.imported, context
    assert ran.code == 0 and "PERMIS" in ran.out and screen.count("asks for permission") == 1, context
    [answered] = [e for e in ran.events() if e["type"] == "permission"]
    assert (answered["selected"], answered["policy"]) == ("allow", "ask"), context
    assert methods(agent).count("initialize") == 1, "one warm agent answered both"


def test_the_default_policy_is_the_full_clients(thin: Thin) -> None:
    """Issue 26 item 1: with no --permissions and nobody to ask, a warm
    turn the thin client takes fails closed and says how to allow, exactly
    as the normal path does (it used to allow: the thin client had a default
    of its own); with the policy set to auto both allow."""
    agent = fake_acp_agent_command("permission", workdir=thin.tmp / "agents")
    assert thin.command(agent, "d", "warm up", "-f", "json").code == 5  # the normal path starts the keeper
    quick = thin.command(agent, "d", "go", "-f", "json")
    full = thin.command(agent, "d", "go", "-f", "json", AGY_HOST_THIN="0")
    assert "agy_host.keeper.thin" in quick.imported and "agy_host.cli.app" not in quick.imported, quick.context()
    assert quick.code == 5 and "To allow: --permissions auto" in quick.events()[-1]["error"], quick.context()
    assert steady(quick) == steady(full), f"thin:\n{quick.context()}\nnormal:\n{full.context()}"
    assert methods(agent).count("initialize") == 1, "one warm agent answered the three commands"
    allowed = thin.command(agent, "d", "go", "-f", "json", AGY_HOST_PERMISSIONS="auto")
    assert allowed.code == 0 and "PERMIS" in allowed.out, allowed.context()


def test_a_question_gets_the_normal_paths_answer(thin: Thin) -> None:
    """No terminal and no rules: the command's broker fails the question
    closed, exactly as the normal path does."""
    agent = fake_acp_agent_command("question", workdir=thin.tmp / "agents")
    thin.command(agent, "q", "warm up", "-f", "json")
    quick = thin.command(agent, "q", "ask me", "-f", "json")
    full = thin.command(agent, "q", "ask me", "-f", "json", AGY_HOST_THIN="0")
    assert "agy_host.keeper.thin" in quick.imported and "agy_host.cli.app" not in quick.imported, quick.context()
    assert steady(quick) == steady(full), f"thin:\n{quick.context()}\nnormal:\n{full.context()}"


def test_without_a_keeper_or_a_fitting_warm_agent_the_normal_path_runs(thin: Thin) -> None:
    one = fake_acp_agent_command("echo", workdir=thin.tmp / "a1")
    two = fake_acp_agent_command("echo", workdir=thin.tmp / "a2")
    first = thin.command(one, "f", "one", "-f", "json")
    assert first.code == 0, first.context()
    assert "agy_host.keeper.thin" in first.imported and "agy_host.cli.app" in first.imported, "looked, then fell back"
    assert [e["type"] for e in first.events()] == ["turn_start", "text", "turn_end", "done"], first.context()
    other = thin.command(two, "f", "two", "-f", "json")  # another agent: the keeper refuses the thin client
    assert other.code == 0 and not other.thin, other.context()
    assert [e["type"] for e in other.events()] == ["notice", "turn_start", "text", "turn_end", "done"], other.context()
    assert other.events()[0]["code"] == "warm-replaced" and "other settings: --agent;" in other.events()[0]["message"]
    assert other.events()[-2]["response"] == "two"
    cold = thin.command(two, "f", "three", "-f", "json", "--keep-alive", "0")
    assert cold.code == 0 and "agy_host.keeper.thin" in cold.imported and not cold.thin, cold.context()


def test_warm_agents_turned_off_in_the_config_run_cold(thin: Thin) -> None:
    """``turn.keep_alive_minutes = 0`` in the config file (which the warm
    agent's profile does not cover) is read by the thin client too: the agent
    warm in the keeper is not used, the command runs its own."""
    del thin.env["AGY_HOST_KEEP_ALIVE_MINUTES"]  # the config's default (5) keeps the first agent warm
    agent = fake_acp_agent_command("echo", workdir=thin.tmp / "agents")
    assert thin.command(agent, "o", "one", "-f", "json").code == 0
    assert thin.cli("config", "set", "turn.keep_alive_minutes", "0").returncode == 0
    off = thin.command(agent, "o", "two", "-f", "json")
    assert off.code == 0 and "agy_host.keeper.thin" in off.imported and not off.thin, off.context()
    assert off.events()[-2]["response"] == "two"
    assert methods(agent).count("initialize") == 2, "the second command started an agent of its own"


def test_a_killed_keeper_ends_the_thin_client_with_the_full_clients_words(thin: Thin) -> None:
    _, proc = turn_started(thin, "k")
    keeper = thin.keeper_pid()
    assert keeper is not None
    started = time.monotonic()
    os.kill(keeper, signal.SIGKILL)
    ran = ended(proc)
    assert ran.thin and ran.code == 1 and time.monotonic() - started < 3, ran.context()
    assert "agy-host: error: the keeper holding the warm agent ended mid-turn; the session binding is kept" in ran.err
    assert wait_gone(keeper, 10)
