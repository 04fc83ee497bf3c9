"""A person answering at a real terminal while the agent is slow, read off
the screen of a tmux pane (issue 28 items 6 and 11, issue 26 item 2).

The agent is silent for a second first, so the rich renderer's "waiting for
the agent" spinner is on screen when the question comes. While the prompt
holds the terminal the spinner must be gone, one still line must say who
waits for whom, and what the person types must stay on the prompt's line
(the spinner used to redraw that line every 0.08 s). Every prompt kind
(permission, a form field, the bridge's ``ask_user``), on ``run``, ``chat``
and ``ask``, cold and warm (the keeper's client and the thin client).

A refused permission exits 5 and the closing line names the request; a
command started in the background (``&``) never reads the terminal (SIGTTIN
would stop it for good): it takes the no-terminal path and says why.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import tmux_kit
from tmux_kit import TMUX, Pane, shell_script

from agy_host.testing.agents import FakeAgent, fake_acp_agent_command
from agy_host.testing.isolation import isolated_env

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
pane_for = tmux_kit.pane_for  # the fixture

AGY_HOST = [sys.executable, "-m", "agy_host.cli.main"]
#: The agent is silent this long before it asks: the spinner is up by then.
SILENT_FIRST = {"sleep": 1.0}
PERMISSION = {
    "permission": {"branches": {"allow": [{"chunk": "PERMIS"}], "reject": [{"chunk": "DENIED"}]}},
}
FORM = {
    "request": {
        "method": "elicitation/create",
        "params": {
            "sessionId": "<session>",
            "mode": "form",
            "message": "Which branch should I push to?",
            "requestedSchema": {
                "type": "object",
                "properties": {"branch": {"type": "string", "title": "Branch"}},
                "required": ["branch"],
            },
        },
        "branches": {action: [{"chunk": f"GOT {action.upper()}"}] for action in ("accept", "decline", "cancel")},
    }
}
ASK_USER = {"mcp_call": {"tool": "ask_user", "arguments": {"question": "Red or blue?"}}}
#: The permission prompt's input line.
CHOOSE = "choose [1-2, 0 for none]: "


def terminal_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The child's environment, its terminal the pane's: tmux's own TERM
    (so ``--format text`` is the rich renderer), no AGY_HOST_TTY."""
    env = isolated_env(tmp_path / "home", AGY_HOST_ENGINE="acp", **extra)
    for name in ("AGY_HOST_TTY", "TERM", "NO_COLOR", "COLUMNS", "LINES"):
        env.pop(name, None)
    return env


def agent(tmp_path: Path, *steps: dict[str, Any]) -> FakeAgent:
    return fake_acp_agent_command({"prompt": [SILENT_FIRST, *steps, {"stop": "end_turn"}]}, workdir=tmp_path / "a")


def in_pane(pane_for: list[Pane], tmp_path: Path, env: dict[str, str], body: str) -> Pane:
    pane = Pane(["bash", "--norc", "--noprofile", str(shell_script(tmp_path / "go.sh", env, tmp_path, body))])
    pane_for.append(pane)
    return pane


def answer_while_the_agent_waits(pane: Pane, prompt: str, typed: str, asker: str, after: str = "") -> str:
    """Wait for ``prompt`` (below ``after``, when given), type ``typed``
    without Enter, let the spinner's ticks pass, check the screen below
    ``after``, then press Enter; returns that part of the screen."""
    pane.wait_for(re.escape(after) + r"[\s\S]*" + re.escape(prompt.rstrip()) + r"\s*$")
    pane.keys(typed)
    time.sleep(0.6)  # seven ticks of the spinner, had it kept drawing
    shown = pane.screen().split(after, 1)[1] if after else pane.screen()
    last = shown.rstrip().splitlines()[-1]
    assert last.strip() == (prompt + typed).strip(), f"what the person typed is not on the prompt's line:\n{shown}"
    assert "waiting for the agent" not in shown, f"the spinner is still up while the person is asked:\n{shown}"
    assert f"‖ paused: {asker} waits for your answer" in shown, shown
    assert shown.count("waits for your answer") == 1, shown
    pane.type("")
    return shown


def agent_answers(found: FakeAgent) -> list[Any]:
    return [e.get("optionId", e.get("outcome")) for e in found.events("permission-answer")]


@pytest.mark.parametrize("kind", ["permission", "form", "ask_user"])
def test_run_keeps_what_the_person_types_at_every_kind_of_prompt(
    tmp_path: Path, pane_for: list[Pane], kind: str
) -> None:
    step, prompt, typed, ends, asker = {
        "permission": (PERMISSION, CHOOSE, "2", "DENIED", "session 't'"),
        "form": (FORM, "  Branch (string; required): ", "main", "GOT ACCEPT", "session 't'"),
        # the bridge's tool asks for the agent (its question names no session)
        "ask_user": (ASK_USER, "  answer (q for none): ", "blue", "tool result: The user answered: blue", "the agent"),
    }[kind]
    fake = agent(tmp_path, step)
    env = terminal_env(tmp_path)
    run = shlex.join([*AGY_HOST, "run", "--agent", fake.command_line, "--session", "t", "--permissions", "ask", "go"])
    pane = in_pane(pane_for, tmp_path, env, f"{run}\necho EXIT $?")
    answer_while_the_agent_waits(pane, prompt, typed, asker)
    shown = pane.wait_for(r"EXIT \d+")
    assert ends in shown, shown
    if kind == "permission":
        assert "EXIT 5" in shown and agent_answers(fake) == ["deny"]
        # issue 26 item 2: the closing line says why the exit code is 5
        assert "✗ exit 5: permission 'Run fake_tool?' was refused (ask: the user chose 'Deny')" in shown, shown
        assert re.search(r"── exit 5 · ", shown), shown
    else:
        assert "EXIT 0" in shown, shown
    if kind == "form":
        [answered] = [
            m["result"] for m in fake.received() if isinstance(m.get("result"), dict) and "action" in m["result"]
        ]
        assert answered == {"action": "accept", "content": {"branch": "main"}}


def test_chat_keeps_what_the_person_types_at_a_prompt(tmp_path: Path, pane_for: list[Pane]) -> None:
    fake = agent(tmp_path, PERMISSION)
    env = terminal_env(tmp_path)
    chat = shlex.join([*AGY_HOST, "chat", "--agent", fake.command_line, "--session", "c", "--permissions", "ask"])
    pane = in_pane(pane_for, tmp_path, env, f"{chat}\necho EXIT $?")
    time.sleep(1.0)  # the chat's own prompt
    pane.type("go")
    answer_while_the_agent_waits(pane, CHOOSE, "1", "session 'c'")
    pane.wait_for("PERMIS")
    pane.type("/exit")
    shown = pane.wait_for(r"EXIT \d+")
    assert "EXIT 0" in shown and agent_answers(fake) == ["allow"], shown


def test_ask_asks_and_its_status_line_names_what_was_refused(tmp_path: Path, pane_for: list[Pane]) -> None:
    """``ask`` draws nothing while the turn runs; its prompt keeps what is
    typed, and its status line says why it exits 5."""
    fake = agent(tmp_path, PERMISSION)
    env = terminal_env(tmp_path)
    ask = shlex.join([*AGY_HOST, "ask", "--agent", fake.command_line, "--permissions", "ask", "go"])
    pane = in_pane(pane_for, tmp_path, env, f"{ask}\necho EXIT $?")
    pane.wait_for(re.escape(CHOOSE.rstrip()) + r"\s*$")
    pane.keys("2")
    time.sleep(0.3)
    assert pane.screen().rstrip().endswith(CHOOSE + "2")
    pane.type("")
    shown = pane.wait_for(r"EXIT \d+")
    assert "EXIT 5" in shown and "DENIED" in shown, shown
    assert "exit 5: permission 'Run fake_tool?' was refused (ask: the user chose 'Deny')" in shown, shown


def test_warm_commands_keep_what_the_person_types_at_a_prompt(tmp_path: Path, pane_for: list[Pane]) -> None:
    """Two ``run --session w`` on a warm agent: the first through the
    keeper's client, the second through the thin client; both pause their
    spinner for the prompt."""
    from warm_kit import stop_keeper

    fake = agent(tmp_path, PERMISSION)
    env = terminal_env(tmp_path, AGY_HOST_KEEP_ALIVE_MINUTES="5")
    run = shlex.join([*AGY_HOST, "run", "--agent", fake.command_line, "--session", "w", "--permissions", "ask", "go"])
    pane = in_pane(pane_for, tmp_path, env, f"{run}\necho FIRST $?\n{run}\necho SECOND $?")
    try:
        answer_while_the_agent_waits(pane, CHOOSE, "1", "session 'w'")
        answer_while_the_agent_waits(pane, CHOOSE, "2", "session 'w'", after="FIRST 0")
        shown = pane.wait_for(r"SECOND \d+")
        assert "SECOND 5" in shown and agent_answers(fake) == ["allow", "deny"], shown
        methods = [m.get("method") for m in fake.received() if "method" in m]
        assert methods.count("initialize") == 1, f"the second command ran on the warm agent: {methods}"
    finally:
        stop_keeper(AGY_HOST, env)


def test_a_background_command_never_stops_on_the_terminal(tmp_path: Path, pane_for: list[Pane]) -> None:
    """``run --permissions ask ... &`` in an interactive shell: a background
    job that read the terminal would be stopped by SIGTTIN (state T) for
    good. It is not in the terminal's foreground, so nobody is asked: the
    ``ask`` policy's fallback (deny) answers, the reason says why, and the
    run ends with exit 5 (issue 28 item 11)."""
    fake = agent(tmp_path, PERMISSION)
    env = terminal_env(tmp_path)
    out = tmp_path / "out.txt"
    run = shlex.join([*AGY_HOST, "run", "--agent", fake.command_line, "--permissions", "ask", "go"])
    body = f"{run} >{shlex.quote(str(out))} 2>&1 &\necho PID $!\nwait $!\necho EXIT $?"
    script = shell_script(tmp_path / "bg.sh", env, tmp_path, body)
    pane = Pane(["bash", "--norc", "--noprofile", "-i"])  # a person's shell: job control, a foreground
    pane_for.append(pane)
    pane.type(f". {shlex.quote(str(script))}")
    pid = int(pane.wait_for(r"PID \d+").split("PID ", 1)[1].split()[0])
    try:
        states = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not re.search(r"EXIT \d+", pane.screen()):
            state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout
            states.append(state.strip())
            time.sleep(0.1)
        shown = pane.screen()
        assert "EXIT 149" not in shown, f"the job was stopped by SIGTTIN (128 + 21):\n{shown}"
        assert not any(s.startswith("T") for s in states), f"the job was stopped: {states}\n{shown}"
        assert "EXIT 5" in shown, f"{shown}\n{out.read_text()}"
        said = out.read_text()
        assert agent_answers(fake) == ["deny"], said
        assert "runs in the background" in said and "fallback deny" in said, said
        # nobody could be asked: the closing line says so, and how to allow (issue 26 item 1)
        closing = "[exit 5] the agent asked permission for 'Run fake_tool?' and it was refused: nobody could be asked"
        assert f"{closing} (agy-host runs in the background" in said and "To allow: --permissions auto" in said, said
    finally:
        with contextlib.suppress(ProcessLookupError):  # a job left stopped (before the fix) goes
            os.kill(pid, signal.SIGKILL)
