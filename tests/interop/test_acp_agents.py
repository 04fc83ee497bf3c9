"""agy-host's real CLI drives real third-party ACP agents.

For each agent::

    agy-host run --agent "<command line>" --format json --session <name> "<prompt>"

with HOME and the XDG folders in a temporary folder. The JSON-lines contract:
one object per line with a ``type`` (``turn_start``, ``text``, ``thought``,
``tool``, ``permission``, ``usage``, ``notice``, ``tool_use``, ``turn_end``)
and a final ``done`` object with ``stop_reason``, ``exit_code``, ``session``
and ``conversation_id``.

Checked: initialize + session/new + a prompt whose reply streams as text; a
second ``run`` with the same ``--session`` continues the same conversation
(same conversation id, through session/load, where the agent advertises
``loadSession``); a clean shutdown (exit code 0, no agent process left in
``/proc``).
"""

from __future__ import annotations

import json
import shlex
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from interop.provision import AgentLaunch, FastAgent, SdkAgents
from interop.rawacp import communicate_or_fail, kill_all, start_cli, wait_gone

pytestmark = pytest.mark.interop

#: The event types of the JSON-lines contract (``done`` closes the stream).
EVENT_TYPES = {
    "turn_start",
    "text",
    "thought",
    "tool",
    "permission",
    "usage",
    "notice",
    "plan",
    "commands",
    "tool_use",
    "turn_end",
    "done",
}

#: A turn against these agents is quick (one to a few seconds); this only
#: keeps a hung CLI from hanging the suite.
RUN_TIMEOUT = 180.0


@dataclass
class Run:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    events: list[dict[str, Any]]

    def describe(self) -> str:
        return (
            f"$ {shlex.join(self.argv)}\nexit {self.returncode}\n--- stdout ---\n{self.stdout[-6000:]}"
            f"\n--- stderr ---\n{self.stderr[-6000:]}"
        )

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind]

    @property
    def text(self) -> str:
        return "".join(str(e.get("delta", "")) for e in self.of_type("text"))

    @property
    def done(self) -> dict[str, Any]:
        return self.events[-1]


def _run_cli(cli: Path, launch: AgentLaunch, session: str, prompt: str, *, cwd: Path, env: dict[str, str]) -> Run:
    argv = [str(cli), "run", "--agent", shlex.join(launch.argv), "--format", "json", "--session", session, prompt]
    proc = start_cli(argv, env, cwd)
    out, err = communicate_or_fail(proc, argv, launch.marker, RUN_TIMEOUT)
    events: list[dict[str, Any]] = []
    run = Run(argv, proc.returncode, out, err, events)
    for n, line in enumerate(out.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            pytest.fail(f"stdout line {n} is not JSON: {line!r}\n{run.describe()}")
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            pytest.fail(f"stdout line {n} is not an object with a 'type': {line!r}\n{run.describe()}")
        events.append(obj)
    return run


def _check_turn(run: Run, launch: AgentLaunch, session: str, token: str) -> None:
    ctx = run.describe()
    assert run.returncode == 0, ctx
    assert run.events, f"no JSON events on stdout\n{ctx}"
    unknown = {e["type"] for e in run.events} - EVENT_TYPES
    assert not unknown, f"event types outside the contract: {sorted(unknown)}\n{ctx}"

    done = run.done
    assert done["type"] == "done", f"the last line must be the done object\n{ctx}"
    assert len(run.of_type("done")) == 1, ctx
    assert done.get("stop_reason") == "stop", ctx
    assert done.get("exit_code") == 0, ctx
    assert done.get("session") == session, ctx
    assert isinstance(done.get("conversation_id"), str) and done["conversation_id"], ctx

    types = [e["type"] for e in run.events]
    assert {"turn_start", "text", "turn_end"} <= set(types), ctx
    assert types.index("turn_start") < types.index("text") < types.index("turn_end") < len(types) - 1, ctx
    for start in run.of_type("turn_start"):
        assert not start.get("sandbox"), f"the host fell back to its sandbox agent instead of {launch.name}\n{ctx}"
    assert [e.get("stop_reason") for e in run.of_type("turn_end")] == ["stop"], ctx
    assert token in run.text, f"{launch.name}'s reply did not stream back as text events\n{ctx}"
    if launch.name == "sdk-example":
        assert "Client sent:" in run.text, ctx  # that agent's own prefix: it really ran

    left = wait_gone(launch.marker)
    if left:
        kill_all(launch.marker)
    assert not left, f"agent processes left after agy-host exited: {left}\n{ctx}"


def _two_turns(cli: Path, launch: AgentLaunch, cwd: Path, env: dict[str, str]) -> tuple[Run, Run, str]:
    session = f"interop-{uuid.uuid4().hex[:8]}"
    first_token = f"alpha-{uuid.uuid4().hex[:10]}"
    first = _run_cli(cli, launch, session, f"please echo {first_token}", cwd=cwd, env=env)
    _check_turn(first, launch, session, first_token)

    second_token = f"bravo-{uuid.uuid4().hex[:10]}"
    second = _run_cli(cli, launch, session, f"please echo {second_token}", cwd=cwd, env=env)
    _check_turn(second, launch, session, second_token)
    return first, second, session


@pytest.mark.parametrize("which", ["echo", "example"])
def test_cli_drives_sdk_example_agent(
    which: str, agy_host_cli: Path, sdk_agents: SdkAgents, workdir: Path, isolated_env: dict[str, str]
) -> None:
    # These agents do not advertise loadSession: the second run cannot resume
    # the agent's own conversation, but it must be a working turn on the same
    # host session (both runs are checked in full by _two_turns).
    _, second, _ = _two_turns(agy_host_cli, sdk_agents.launch(which), workdir, isolated_env)
    # ...and the user is told the agent's conversation could not be resumed.
    warnings = [e for e in second.of_type("notice") if e.get("level") in {"warning", "error"}]
    assert warnings, f"the second run lost the agent conversation silently\n{second.describe()}"


def test_cli_drives_fast_agent_and_resumes_with_session_load(
    agy_host_cli: Path, fast_agent: FastAgent, workdir: Path, isolated_env: dict[str, str], tmp_path: Path
) -> None:
    launch = fast_agent.launch(tmp_path)
    first, second, _ = _two_turns(agy_host_cli, launch, workdir, isolated_env)
    assert second.done["conversation_id"] == first.done["conversation_id"], (
        f"the second run started a new conversation instead of session/load\n{first.describe()}\n{second.describe()}"
    )
    # session/load, not session/new: fast-agent keeps one folder per session.
    assert launch.home is not None
    sessions = [p.name for p in (launch.home / "sessions").iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(sessions) == 1, f"fast-agent holds {sessions}: the second run did session/new"
    # The replayed history of the first turn is not rendered again as new text.
    assert "alpha-" not in second.text, second.describe()
    # fast-agent advertises its slash commands as soon as the session exists
    # (a task started with session/new, before agy-host attached the turn): kept, and shown.
    commands = first.of_type("commands")
    assert commands and all(c["name"] for c in commands[-1]["commands"]), first.describe()
