"""``agy-host chat`` in a real terminal (tmux): line editing, a turn, a slash
command, Ctrl-C in the middle of a turn (the turn aborts, the chat goes on),
history, and leaving with Ctrl-D. The agent is the fake ACP agent, a real
process; the screen is read back with ``tmux capture-pane``."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

AGY_HOST = Path(sys.executable).with_name("agy-host")
TMUX = shutil.which("tmux")
#: Generous: a slow CI machine must not fail this test; a broken chat fails it anyway.
WAIT_S = 30.0

pytestmark = [
    pytest.mark.skipif(TMUX is None, reason="tmux is not installed"),
    pytest.mark.skipif(not AGY_HOST.exists(), reason=f"console script not installed next to {sys.executable}"),
    pytest.mark.skipif(
        not any(ep.name == "acp" for ep in metadata.entry_points(group="agy_host.engines")),
        reason="the ACP engine is not installed",
    ),
]

SCENARIO = {
    "cancel": "graceful",
    "prompts": [
        [{"thought": "reading the question"}, {"echo": True}, {"stop": "end_turn"}],
        [{"chunk": "C1"}, {"repeat": {"steps": [{"sleep": 0.15}, {"chunk": " tick"}]}}],
        [{"echo": True}, {"stop": "end_turn"}],
    ],
}


class Terminal:
    """One tmux server (own socket) running one command in a 120x40 window."""

    def __init__(self, socket: str) -> None:
        assert TMUX is not None
        self.base = [TMUX, "-L", socket, "-f", "/dev/null"]

    def start(self, script: Path) -> None:
        subprocess.run([*self.base, "new-session", "-d", "-x", "120", "-y", "40", str(script)], check=True)

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.base, "send-keys", *keys], check=True)

    def type(self, text: str) -> None:
        subprocess.run([*self.base, "send-keys", "-l", text], check=True)

    def screen(self) -> str:
        proc = subprocess.run([*self.base, "capture-pane", "-p", "-S", "-200"], capture_output=True, text=True)
        return proc.stdout

    def wait_for(self, check: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            screen = self.screen()
            if check(screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; screen:\n{self.screen()}")

    def kill(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True, check=False)


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    term = Terminal(f"agy-host-test-{uuid.uuid4().hex[:8]}")
    try:
        yield term
    finally:
        term.kill()


def lines(screen: str) -> list[str]:
    return [line.rstrip() for line in screen.splitlines() if line.strip()]


def test_chat_in_a_real_terminal(terminal: Terminal, tmp_path: Path, fake_acp_agent: Callable[..., Any]) -> None:
    agent = fake_acp_agent(SCENARIO)
    home = tmp_path / "home"
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""),
        "LANG": "C.UTF-8",
        # ``env -i`` drops the suite's setting: no keeper outlives the test (warm chats: tests/test_warm_commands.py)
        "AGY_HOST_KEEP_ALIVE_MINUTES": "0",
    }
    command = [str(AGY_HOST), "chat", "--engine", "acp", "--agent", agent.command_line, "--session", "tty"]
    script = tmp_path / "chat.sh"
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    # The pane's shell is in the terminal's foreground process group, so it
    # gets the Ctrl-C too; the trap keeps it alive to report the exit code.
    script.write_text(
        f"#!/bin/sh\ntrap : INT\ncd {shlex.quote(str(tmp_path))}\n"
        f"env -i {exports} {shlex.join(command)}\necho EXIT=$?\nsleep 600\n"
    )
    script.chmod(0o755)
    terminal.start(script)
    terminal.wait_for(lambda s: "acp ›" in s, "the prompt")

    # line editing: a typo fixed in the middle of the line
    terminal.type("helo world")
    terminal.keys("Home", "Right", "Right", "Right")
    terminal.type("l")
    terminal.keys("Enter")
    screen = terminal.wait_for(lambda s: s.count("── done") == 1, "the first turn to end")
    rows = lines(screen)
    asked = rows.index("acp › hello world")
    assert rows[asked + 1].startswith("✻ thought for "), "thinking collapsed to one line"
    assert rows[asked + 2] == "hello world", "the answer streamed below the prompt"
    assert rows[asked + 3].startswith("── done · ") and rows[asked + 3].endswith("session tty")

    # a slash command
    terminal.type("/help")
    terminal.keys("Enter")
    terminal.wait_for(lambda s: "/engine [NAME]" in s and "/doctor" in s, "the /help list")

    # Ctrl-C in the middle of a turn aborts the turn, not the chat
    terminal.type("count forever")
    terminal.keys("Enter")
    terminal.wait_for(lambda s: "C1 tick tick" in s, "the second turn to stream")
    terminal.keys("C-c")
    screen = terminal.wait_for(lambda s: "── aborted" in s, "the aborted turn to end")
    assert "interrupting the turn" in screen
    terminal.wait_for(lambda s: lines(s)[-1] == "acp ›", "the prompt after the aborted turn")

    # the chat goes on in the same conversation
    terminal.type("still here")
    terminal.keys("Enter")
    terminal.wait_for(lambda s: s.count("── done") == 2 and "\nstill here\n" in s, "the third turn")
    prompts = agent.requests("session/prompt")
    assert len(prompts) == 3
    assert len({p["params"]["sessionId"] for p in prompts}) == 1, "one agent conversation throughout"
    assert agent.requests("session/cancel"), "Ctrl-C reached the agent as session/cancel"

    # history: Up recalls the last message; Ctrl-C at the prompt clears the line
    terminal.keys("Up")
    terminal.wait_for(lambda s: lines(s)[-1] == "acp › still here", "the history entry")
    terminal.keys("C-c")
    terminal.wait_for(
        lambda s: "(Ctrl-D or /exit leaves the chat)" not in s and lines(s)[-1] == "acp ›", "a clear line"
    )

    # Ctrl-D on an empty line leaves
    terminal.keys("C-d")
    screen = terminal.wait_for(lambda s: "EXIT=" in s, "the chat to exit")
    assert "EXIT=0" in screen
    history = (home / ".local" / "state" / "agy-host" / "chat-history").read_text().splitlines()
    assert [json.loads(h) for h in history] == ["hello world", "/help", "count forever", "still here"]
