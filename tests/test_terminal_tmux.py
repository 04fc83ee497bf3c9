"""Two sessions asking at once, answered by a person at a real terminal.

A Python program opens two sessions on the kit's fake ACP agent, each agent
asks for permission at the same moment, and the ``ask`` policy puts both
prompts on the program's controlling terminal: a tmux pane here, read with
``capture-pane`` and typed into with ``send-keys``, as a person would. The
prompts come one at a time, each names its session and says the other is
waiting; each session gets the answer typed at its own prompt.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import tmux_kit
from tmux_kit import TMUX, Pane, shell_script

from agy_host.testing.agents import fake_acp_agent_command
from agy_host.testing.isolation import isolated_env

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
pane_for = tmux_kit.pane_for  # the fixture

PROGRAM = """
import json, sys, trio, agy_host

setup = json.load(open(sys.argv[1]))

async def one(name, results):
    async with agy_host.open_session(agent=setup["agents"][name], session=name, env=setup["env"],
                                     cwd=setup["cwd"], permissions="ask") as s:
        result = await s.prompt("go").wait()
        results[name] = (result.exit_code, result.response)

async def main():
    results = {}
    async with trio.open_nursery() as nursery:
        for name in setup["agents"]:
            nursery.start_soon(one, name, results)
    for name, (code, response) in sorted(results.items()):
        print(f"RESULT {name} {code} {response}", flush=True)
    print("ALL DONE", flush=True)

trio.run(main)
"""


def test_two_sessions_asking_at_once_are_asked_one_at_a_time(tmp_path: Path, pane_for: list[Pane]) -> None:
    env = isolated_env(tmp_path / "home", AGY_HOST_ENGINE="acp")
    env.pop("AGY_HOST_TTY", None)  # the program's controlling terminal: the tmux pane
    agents = {name: fake_acp_agent_command("permission", workdir=tmp_path / name) for name in ("alpha", "beta")}
    setup = tmp_path / "setup.json"
    setup.write_text(
        json.dumps({"agents": {n: a.command_line for n, a in agents.items()}, "env": env, "cwd": str(tmp_path)})
    )
    program = tmp_path / "two_sessions.py"
    program.write_text(PROGRAM)
    pane = Pane([sys.executable, str(program), str(setup)])
    pane_for.append(pane)

    shown = pane.wait_for(r"session '(alpha|beta)' asks for permission[\s\S]*choose \[1-2")
    first = re.findall(r"session '(alpha|beta)' asks for permission", shown)[-1]
    second = "beta" if first == "alpha" else "alpha"
    # the second agent asks too: its prompt waits behind the first, and the first says so (in its
    # header when it was already waiting, else as a notice, with the prompt drawn again)
    waiting = rf"\(1 more question waiting: session '{second}'\)|\(session '{second}' is waiting to ask too\)"
    shown = pane.wait_for(waiting, timeout=30)
    assert f"session '{second}' asks" not in shown, "two prompts on the terminal at once"
    assert shown.rstrip().endswith("choose [1-2, 0 for none]:"), shown
    pane.type("1")  # allow the first
    shown = pane.wait_for(rf"session '{second}' asks for permission[\s\S]*choose \[1-2")
    pane.type("2")  # deny the second
    shown = pane.wait_for("ALL DONE")
    assert f"RESULT {first} 0 PERMIS" in shown, shown
    assert f"RESULT {second} 5 DENIED" in shown, shown
    assert answers(agents[first]) == ["allow"] and answers(agents[second]) == ["deny"]


def answers(agent: object) -> list[str]:
    from agy_host.testing.agents import FakeAgent

    assert isinstance(agent, FakeAgent)
    outcomes = []
    for message in agent.received():
        result = message.get("result")
        if isinstance(result, dict) and isinstance(result.get("outcome"), dict):
            outcome = result["outcome"]
            outcomes.append(outcome.get("optionId") or outcome.get("outcome"))
    return outcomes


def test_a_warm_agents_permission_prompt_is_answered_at_the_attached_commands_terminal(
    tmp_path: Path, pane_for: list[Pane]
) -> None:
    """Two ``agy-host run --permissions ask`` commands, one after the other,
    in a tmux pane: the second runs on the agent the first left warm, and
    that agent's permission request is drawn and answered in the pane (the
    attached command's terminal), not in the keeper holding the agent."""
    import shlex

    from warm_kit import stop_keeper

    env = isolated_env(tmp_path / "home", AGY_HOST_ENGINE="acp", AGY_HOST_KEEP_ALIVE_MINUTES="5")
    env.pop("AGY_HOST_TTY", None)  # the command's controlling terminal: the tmux pane
    agent = fake_acp_agent_command("permission", workdir=tmp_path / "agent")
    argv = [sys.executable, "-m", "agy_host.cli.main", "run", "--agent", agent.command_line, "--session", "t"]
    run = shlex.join([*argv, "--permissions", "ask", "go"])
    body = f"{run}\necho FIRST-DONE $?\n{run}\necho SECOND-DONE $?"
    script = shell_script(tmp_path / "two_runs.sh", env, tmp_path, body)
    pane = Pane(["sh", str(script)])
    pane_for.append(pane)
    try:
        pane.wait_for(r"session 't' asks for permission[\s\S]*choose \[1-")
        pane.type("2")  # deny
        pane.wait_for("FIRST-DONE 5")
        shown = pane.wait_for(r"FIRST-DONE 5[\s\S]*session 't' asks for permission[\s\S]*choose \[1-")
        assert "SECOND-DONE" not in shown
        pane.type("1")  # allow
        shown = pane.wait_for("SECOND-DONE 0")
        assert "PERMIS" in shown.split("FIRST-DONE")[1], shown
        assert answers(agent) == ["deny", "allow"]
        methods = [m.get("method") for m in agent.received() if "method" in m]
        assert methods.count("initialize") == 1, f"the second command ran on the warm agent: {methods}"
    finally:
        stop_keeper([sys.executable, "-m", "agy_host.cli.main"], env)
