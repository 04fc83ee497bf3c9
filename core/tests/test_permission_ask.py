"""The ``ask`` policy on a real pseudo-terminal (``AGY_HOST_TTY``), its
non-interactive fallbacks, questions, and the host's wiring (configure,
the ``fail`` preflight, the deadline)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import trio
import trio.testing

from agy_host.builtins.permission_ask import AskPolicy, render_diff, render_request
from agy_host.config import Config
from agy_host.contract.events import FileDiff, PermissionOption
from agy_host.contract.permissions import PermissionRequest
from agy_host.runtime.host import Host
from agy_host.testing.terminal import Pty

OPTIONS = [
    PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
    PermissionOption(option_id="always", name="Always", kind="allow_always"),
    PermissionOption(option_id="deny", name="Deny", kind="reject_once"),
]
ANSWERS = [
    PermissionOption(option_id="1", name="Red", kind="allow_once"),
    PermissionOption(option_id="2", name="Blue", kind="allow_once"),
]


def edit_request(**kw: Any) -> PermissionRequest:
    return PermissionRequest(
        session="s",
        call_id="6d81335b",
        title="Run client_create_file?",
        options=OPTIONS,
        tool_kind="edit",
        tool_name="client_create_file",
        args={"target_file": "/w/a.txt", "code_content": "ok\n"},
        diff=FileDiff(path="/w/a.txt", old_text="one\ntwo\n", new_text="one\nTWO\n"),
        **kw,
    )


def question() -> PermissionRequest:
    return PermissionRequest(
        session="s",
        call_id="interaction_d316f47f",
        title="Do you prefer red or blue?",
        options=ANSWERS,
        is_question=True,
    )


@pytest.fixture
def tty() -> Iterator[Pty]:
    with Pty() as term:
        yield term


def policy(tty_path: str, fallback: str = "deny") -> AskPolicy:
    cfg = Config()
    cfg.permissions.ask_fallback = fallback  # type: ignore[assignment]
    p = AskPolicy()
    p.configure(cfg, {"AGY_HOST_TTY": tty_path})
    return p


async def test_the_person_picks_an_option(tty: Pty) -> None:
    tty.type("3\n")
    decision = await policy(tty.path).decide(edit_request())
    assert (decision.option_id, decision.policy) == ("deny", "ask")
    assert "Deny" in decision.reason
    screen = tty.screen()
    assert "Run client_create_file?" in screen and "tool: client_create_file (edit)" in screen
    assert '"target_file": "/w/a.txt"' in screen
    assert "-two" in screen and "+TWO" in screen  # the edit's diff
    assert "1) Allow  [allow_once]" in screen and "3) Deny  [reject_once]" in screen


async def test_declining_cancels(tty: Pty) -> None:
    tty.type("0\n")
    decision = await policy(tty.path).decide(edit_request())
    assert decision.option_id is None and "declined" in decision.reason


async def test_a_question_is_shown_as_a_question(tty: Pty) -> None:
    tty.type("nonsense\n2\n")
    decision = await policy(tty.path).decide(question())
    assert decision.option_id == "2"
    screen = tty.screen()
    assert "session 's' asks you a question" in screen and "Do you prefer red or blue?" in screen
    assert "2) Blue" in screen and "permission" not in screen


@pytest.mark.parametrize(("fallback", "expected"), [("allow", "allow"), ("deny", "deny"), ("fail", None)])
async def test_without_a_terminal_the_fallback_decides(fallback: str, expected: str | None) -> None:
    decision = await policy("none", fallback).decide(edit_request())
    assert decision.option_id == expected
    assert "asking is turned off" in decision.reason


@pytest.mark.parametrize("fallback", ["allow", "deny", "fail"])
async def test_a_question_is_never_answered_without_a_person(fallback: str) -> None:
    decision = await policy("/nonexistent/tty", fallback).decide(question())
    assert decision.option_id is None and "a question needs a person" in decision.reason


async def test_the_fail_preflight() -> None:
    assert policy("none", "fail").check_ready() is not None
    assert policy("none", "deny").check_ready() is None


async def test_a_terminal_that_hangs_up_counts_as_no_terminal(tty: Pty) -> None:
    p = policy(tty.path)
    os.close(tty.master)  # the terminal window was closed
    tty.master = os.open(os.devnull, os.O_RDONLY)  # keep the fixture's close happy
    decision = await p.decide(edit_request())
    assert decision.option_id == "deny"  # the deny fallback


async def test_the_host_configures_the_policy_and_bounds_it(
    agy_host_home: Any, tty: Pty, autojump_clock: trio.testing.MockClock
) -> None:
    host = Host(
        env={**os.environ, "AGY_HOST_TTY": tty.path, "AGY_HOST_ASK_FALLBACK": "allow"},
        permissions="ask",
        warn=lambda _m: None,
    )
    policy_obj = host.permission_policy()
    assert isinstance(policy_obj, AskPolicy) and policy_obj.fallback == "allow"
    decision = await host.decide_permission(edit_request())  # nobody types: the deadline answers
    assert decision.option_id is None and "no answer within 5m" in decision.reason


def test_the_host_refuses_to_start_ask_with_fail_and_no_terminal(agy_host_home: Any) -> None:
    env = {**os.environ, "AGY_HOST_TTY": "none", "AGY_HOST_ASK_FALLBACK": "fail"}
    host = Host(env=env, permissions="ask", warn=lambda _m: None)
    problem = host.policy_problem()
    assert problem is not None and "needs a terminal" in problem
    assert Host(env=env, permissions="auto", warn=lambda _m: None).policy_problem() is None


def test_render_diff_caps_long_edits() -> None:
    new = "".join(f"line {i}\n" for i in range(300))
    lines = render_diff(FileDiff(path="/w/big.txt", new_text=new), limit=100)
    assert lines[0] == "--- /w/big.txt (new file)"
    assert len(lines) == 102 and lines[-1].startswith("… ")


def test_a_sub_agents_request_says_who_asks() -> None:
    shown = render_request(
        edit_request(origin="subagent 3f2c9a10"), waiting="  (1 more question waiting: session 'b')\n"
    )
    assert "agy-host: session 's', subagent 3f2c9a10 asks for permission" in shown
    assert "(1 more question waiting: session 'b')" in shown


def test_an_always_option_says_what_choosing_it_will_do() -> None:
    """Issue 26 item 2: "(remembered for this session)" read as if it had
    already been remembered."""
    shown = render_request(edit_request())
    assert "2) Always  [allow_always]  (if chosen, not asked again for this tool this session)" in shown
    assert "remembered" not in shown


async def test_a_prompt_cut_short_ends_its_line(tty: Pty) -> None:
    """Nobody answered in time: the prompt's line is ended before the
    terminal is given back, so the next line drawn starts on its own."""
    with trio.move_on_after(0.3):
        await policy(tty.path).decide(edit_request())
    assert tty.screen().endswith("choose [1-3, 0 for none]: \r\n")  # the terminal maps LF to CR LF


BACKGROUND_CHILD = """
import fcntl, json, os, pty, termios, trio
from agy_host.builtins.permission_ask import AskPolicy
from agy_host.config import Config
from agy_host.contract.events import PermissionOption
from agy_host.contract.permissions import PermissionRequest

master, slave = pty.openpty()
fcntl.ioctl(slave, termios.TIOCSCTTY, 0)  # our controlling terminal; our group holds its foreground


def policy(fallback):
    cfg = Config()
    cfg.permissions.ask_fallback = fallback
    made = AskPolicy()
    made.configure(cfg, {"AGY_HOST_TTY": os.ttyname(slave)})
    return made


if os.fork() == 0:  # a job in the background: a group of its own, not the terminal's foreground
    os.setpgid(0, 0)
    options = [PermissionOption(option_id="deny", name="Deny", kind="reject_once")]
    request = PermissionRequest(session="s", call_id="c", title="Run it?", options=options)
    reason = trio.run(policy("deny").decide, request).reason
    print(json.dumps({"ready": policy("fail").check_ready(), "reason": reason}), flush=True)
    os._exit(0)
os.wait()
print(json.dumps({"foreground": policy("fail").check_ready()}), flush=True)
"""


def test_in_the_background_the_terminal_counts_as_absent(tmp_path: Any) -> None:
    """Issue 28 item 11: a process outside the terminal's foreground process
    group would be stopped by SIGTTIN on its first read; it is treated as
    having no terminal (the fallback answers, ``fail`` refuses to start),
    and the reason says why. In the foreground the terminal is used."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", BACKGROUND_CHILD], capture_output=True, text=True, timeout=60, start_new_session=True
    )
    assert done.returncode == 0, done.stderr
    background, foreground = (json.loads(line) for line in done.stdout.strip().splitlines())
    assert foreground == {"foreground": None}, "in the foreground, ask may start"
    assert "needs a terminal: agy-host runs in the background" in background["ready"]
    reason = background["reason"]
    assert "(agy-host runs in the background" in reason and "fallback deny: reject_once" in reason
