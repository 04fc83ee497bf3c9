"""Safe by default (issue 26 item 1, issue 27 item 7).

With no ``--permissions``, no ``permissions.policy`` and no ``permissions=``
callback, nobody chose a policy. Then agy-host asks the person at the
terminal; where nobody can be asked (stdin not a terminal, no terminal at
all, a Python program) a permission request fails closed: refused, the turn
exits 5, and the closing line, ``result.error`` and the ``--format json`` end
say how to allow. A choice the user made (``--permissions auto``,
``config set permissions.policy auto``, ``ask_fallback``) is never
overridden. Real ``agy-host`` processes, the kit's fake ACP agent and fake
``agy``, a real pseudo-terminal (tmux) for the person.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import tmux_kit
import trio
from tmux_kit import TMUX, Pane, shell_script

import agy_host
from agy_host.testing.agents import FakeAgent, fake_acp_agent_command
from agy_host.testing.isolation import isolated_env
from agy_host.testing.terminal import Pty

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")
pane_for = tmux_kit.pane_for  # the fixture

AGY_HOST = [sys.executable, "-m", "agy_host.cli.main"]
#: What the CLI's closing line says to do (the hint of agy_host.service.unattended).
CLI_HINT = "To allow: --permissions auto, rules (--permissions rules with [[permissions.rules]]), --answers FILE"
RESTORE = "`agy-host config set permissions.policy auto` to allow by default, as before"
#: The permission prompt's input line (the fake agent offers allow and deny).
CHOOSE = "choose [1-2, 0 for none]: "


def env_for(tmp_path: Path, engine: str = "acp", **extra: str) -> dict[str, str]:
    return isolated_env(tmp_path / "home", AGY_HOST_ENGINE=engine, **extra)


def permission_agent(tmp_path: Path) -> FakeAgent:
    """Asks before its tool: allowed it says ``PERMIS``, refused ``DENIED``."""
    return fake_acp_agent_command("permission", workdir=tmp_path / "agents")


def agy_run(env: dict[str, str], tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``agy-host ARGS`` with no terminal on stdin (a script, CI)."""
    return subprocess.run(
        [*AGY_HOST, *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )


def json_end(proc: subprocess.CompletedProcess[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``turn_end`` and ``done`` documents of a ``--format json`` run."""
    docs = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    [end] = [d for d in docs if d["type"] == "turn_end"]
    return end, docs[-1]


def answers(agent: FakeAgent) -> list[Any]:
    return [e.get("optionId", e.get("outcome")) for e in agent.events("permission-answer")]


# -- at a terminal, the person is asked ----------------------------------------------


def run_in_a_pane(tmp_path: Path, pane_for: list[Pane], agent: FakeAgent, before: str, prompt: str) -> Pane:
    """``BEFORE agy-host run --agent AGENT PROMPT`` at a real terminal (a tmux
    pane, agy-host's own terminal: no AGY_HOST_TTY), then ``echo EXIT $?``."""
    env = env_for(tmp_path)
    env.pop("AGY_HOST_TTY", None)
    run = shlex.join([*AGY_HOST, "run", "--agent", agent.command_line, "-f", "plain", prompt])
    body = f"{before}{run}\necho EXIT $?"
    pane = Pane(["bash", "--norc", "--noprofile", str(shell_script(tmp_path / "go.sh", env, tmp_path, body))])
    pane_for.append(pane)
    return pane


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
def test_the_default_asks_the_person_at_a_real_terminal(tmp_path: Path, pane_for: list[Pane]) -> None:
    """No ``--permissions``: at a terminal the request is put to the person
    (it used to be allowed without asking anyone)."""
    agent = permission_agent(tmp_path)
    pane = run_in_a_pane(tmp_path, pane_for, agent, "", "go")
    shown = pane.wait_for(re.escape(CHOOSE.rstrip()))
    assert "asks for permission" in shown and "Run fake_tool?" in shown, shown
    pane.type("1")  # 1) Allow
    shown = pane.wait_for(r"EXIT \d+")
    assert "EXIT 0" in shown and "PERMIS" in shown, shown
    assert answers(agent) == ["allow"]


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
def test_a_prompt_piped_in_is_nobody_to_ask_even_at_a_terminal(tmp_path: Path, pane_for: list[Pane]) -> None:
    """stdin is a pipe (a script feeding agy-host): the default asks nobody,
    though a terminal is there, and the closing line says why and how to allow."""
    agent = permission_agent(tmp_path)
    pane = run_in_a_pane(tmp_path, pane_for, agent, "echo go | ", "-")
    shown = pane.wait_for(r"EXIT \d+")
    assert "EXIT 5" in shown and "DENIED" in shown and "asks for permission" not in shown, shown
    assert "[exit 5] the agent asked permission for 'Run fake_tool?' and it was refused" in shown, shown
    assert "nobody could be asked (stdin is not a terminal" in shown and CLI_HINT in shown, shown
    assert answers(agent) == ["deny"]


# -- nobody to ask: fail closed, saying how to allow ---------------------------------


def test_without_a_terminal_the_acp_agents_request_fails_closed(tmp_path: Path) -> None:
    agent = permission_agent(tmp_path)
    env = env_for(tmp_path)
    text = agy_run(env, tmp_path, "run", "--agent", agent.command_line, "-f", "plain", "go")
    assert text.returncode == 5 and text.stdout == "DENIED\n", text
    closing = [line for line in text.stderr.splitlines() if line.startswith("[exit 5]")]
    assert len(closing) == 1 and CLI_HINT in closing[0] and RESTORE in closing[0], text.stderr
    as_json = agy_run(env, tmp_path, "run", "--agent", agent.command_line, "-f", "json", "go")
    end, done = json_end(as_json)
    assert as_json.returncode == 5 and end["exit_code"] == 5 and done["exit_code"] == 5, as_json
    assert CLI_HINT in end["error"] and done["error"] == end["error"], as_json
    assert answers(agent) == ["deny", "deny"]


def test_without_a_terminal_agys_denial_fails_closed(tmp_path: Path) -> None:
    """stream-json: headless agy cannot ask, so it denies the tool itself;
    the turn exits 5 too (it exited 0) and says how to allow there."""
    pytest.importorskip("agy_host_stream_json.engine", reason="the stream-json engine is not installed")
    from agy_host.testing.agy_cli.agent import make_fake_agy

    tool = {"tool": {"name": "run_command", "params": {"CommandLine": "ls"}, "output": "a.txt"}}
    fake = make_fake_agy(tmp_path / "agy", {"turns": [[tool, {"say": ["went on"]}]]})
    env = env_for(tmp_path, "stream-json", AGY_BIN=str(fake.bin))
    proc = agy_run(env, tmp_path, "run", "-f", "json", "go")
    end, done = json_end(proc)
    assert proc.returncode == 5 and done["exit_code"] == 5, proc
    assert "the agent asked permission for 'ls' and it was refused" in end["error"], end
    assert "To allow: --permissions skip" in end["error"], end
    cards = [d for d in map(json.loads, proc.stdout.splitlines()) if d["type"] == "tool"]
    assert cards and cards[-1]["status"] == "denied", cards


# -- a choice is never overridden ----------------------------------------------------


def test_config_set_permissions_policy_auto_restores_allowing(tmp_path: Path) -> None:
    agent = permission_agent(tmp_path)
    env = env_for(tmp_path)
    assert agy_run(env, tmp_path, "run", "--agent", agent.command_line, "go").returncode == 5
    done = agy_run(env, tmp_path, "config", "set", "permissions.policy", "auto")
    assert done.returncode == 0, done
    allowed = agy_run(env, tmp_path, "run", "--agent", agent.command_line, "-f", "json", "go")
    end, _ = json_end(allowed)
    assert allowed.returncode == 0 and end["response"] == "PERMIS", allowed
    assert answers(agent) == ["deny", "allow"]
    shown = agy_run(env, tmp_path, "config", "show")
    assert 'policy = "auto"' in shown.stdout, shown


#: Choices a user makes, and the exit code of the permission agent's turn under each.
CHOICES = [
    (["--permissions", "auto"], {}, 0),
    ([], {"AGY_HOST_PERMISSIONS": "auto"}, 0),
    ([], {"AGY_HOST_ASK_FALLBACK": "allow"}, 0),  # the default's fallback, chosen
    ([], {"AGY_HOST_SKIP_PERMISSIONS": "true"}, 0),  # skipping chosen: what the agent still asks is allowed
    (["--permissions", "deny"], {}, 5),
]


def test_an_explicit_choice_is_never_overridden(tmp_path: Path) -> None:
    """The default refuses here (nobody to ask); every choice the user made
    is kept as it was, and a refusal the user chose needs no hint."""
    agent = permission_agent(tmp_path)
    for args, extra, code in [([], {}, 5), *CHOICES]:
        env = env_for(tmp_path, **extra)
        proc = agy_run(env, tmp_path, "run", "--agent", agent.command_line, *args, "-f", "json", "go")
        end, _ = json_end(proc)
        assert proc.returncode == code, (args, extra, proc)
        assert ("To allow" in end.get("error", "")) == (not args and not extra), (args, extra, end)


# -- a Python program without a callback ---------------------------------------------

LOOPS = ["trio", "asyncio"]


def run_on(loop: str, fn: Callable[[], Awaitable[Any]]) -> Any:
    if loop == "trio":
        return trio.run(fn)
    return asyncio.run(fn())  # type: ignore[arg-type]


@pytest.mark.parametrize("loop", LOOPS)
def test_a_program_without_a_permissions_callback_fails_closed(tmp_path: Path, loop: str) -> None:
    """Issue 27 item 7: even with a terminal at hand the program is never
    prompted there; the request is refused and ``result.error`` (and the
    typed error of ``check=True``) says how to allow, in Python's words."""
    agent = permission_agent(tmp_path)
    with Pty() as tty:
        env = env_for(tmp_path, AGY_HOST_TTY=tty.path)

        async def main() -> tuple[Any, BaseException | None]:
            async with agy_host.open_session(agent=agent.command_line, env=env, cwd=tmp_path) as s:
                result = await s.run("go")
                try:
                    await s.run("again", check=True)
                except agy_host.PermissionDenied as exc:
                    return result, exc
            return result, None

        result, raised = run_on(loop, main)
        screen = tty.screen()
    assert result.exit_code == 5 and result.response == "DENIED", result
    assert 'To allow: permissions="auto" or a permissions= callback' in result.error, result.error
    assert "nobody could be asked (the program passed no permissions= callback)" in result.error, result.error
    assert raised is not None and 'permissions="auto"' in str(raised), raised
    assert "asks for permission" not in screen, f"the program was prompted at the terminal:\n{screen}"
    assert answers(agent) == ["deny", "deny"]


def test_stream_json_never_shows_a_call_agy_denied_as_done_first(tmp_path: Path) -> None:
    """agy >= 1.2.17 reports a command it denied (headless, it cannot ask)
    as a "done" step, and names the denial only in its result: the card
    goes from started to denied, never through done (new-user trial)."""
    pytest.importorskip("agy_host_stream_json.engine", reason="the stream-json engine is not installed")
    from agy_host.testing.agy_cli.agent import make_fake_agy

    steps = [{"tool": {"name": "run_command", "params": {"CommandLine": "make"}}}, {"say": "tried"}]
    agy = make_fake_agy(tmp_path / "fake-agy", {"build": "1.2.17", "turns": [steps]})
    env = env_for(tmp_path, "stream-json", AGY_HOST_TTY="none") | agy.env
    proc = agy_run(env, tmp_path, "run", "--format", "json", "go")
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    cards = [e["status"] for e in events if e["type"] == "tool"]
    assert proc.returncode == 5 and cards == ["started", "denied"], proc.stdout
