"""End to end on both engines with real subprocesses: ``agy-host run`` drives
a scripted fake agent, which calls bridge tools over real HTTP; the turn
parks, the host runs the tool, the agent gets the result and finishes its
turn.

Each scenario is written once and played on every installed engine: the
fake ACP agent finds the bridge in the ``mcpServers`` it was given, the fake
``agy`` in the host's entry in ``~/.gemini/config/mcp_config.json``. What is
particular to one engine (ACP's ``session/load``, the stream-json CLI
registration, ``ask_user`` on a pseudo-terminal) is in ``test_e2e_acp.py``
and ``test_e2e_stream_json.py``."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from ._e2e import AGY_HOST, Run, e2e_env, run_cli, write_config

if not AGY_HOST.exists():
    pytest.skip(f"console script not installed next to {sys.executable}", allow_module_level=True)

INSTALLED = {ep.name for ep in metadata.entry_points(group="agy_host.engines")}
Step = dict[str, Any]


class Rig:
    """One engine's fake agent, scripted with the same three kinds of step."""

    engine: str

    def __init__(self, tmp_path: Path, make: Callable[..., Any]) -> None:
        self.env = e2e_env(tmp_path, self.engine)
        self.make = make
        self.agent: Any = None

    def say(self, text: str) -> Step:
        raise NotImplementedError

    def echo(self) -> Step:
        """Say the prompt back."""
        raise NotImplementedError

    def script(self, turns: list[list[Step]]) -> None:
        raise NotImplementedError

    def run(self, *args: str) -> Run:
        raise NotImplementedError

    def turns_sent(self) -> int:
        """How many turns reached the agent, checked to be one conversation."""
        raise NotImplementedError

    def events(self, name: str) -> list[dict[str, Any]]:
        return list(self.agent.events(name))


class AcpRig(Rig):
    engine = "acp"

    def say(self, text: str) -> Step:
        return {"chunk": text}

    def echo(self) -> Step:
        return {"echo": True}

    def script(self, turns: list[list[Step]]) -> None:
        self.agent = self.make({"prompts": turns})

    def run(self, *args: str) -> Run:
        return run_cli(self.env, "--agent", self.agent.command_line, *args)

    def turns_sent(self) -> int:
        prompts = self.agent.requests("session/prompt")
        assert len({p["params"]["sessionId"] for p in prompts}) == 1, prompts
        return len(prompts)


class StreamJsonRig(Rig):
    engine = "stream-json"

    def say(self, text: str) -> Step:
        return {"say": text}

    def echo(self) -> Step:
        return {"echo": True}

    def script(self, turns: list[list[Step]]) -> None:
        self.agent = self.make({"turns": turns})

    def run(self, *args: str) -> Run:
        return run_cli({**self.env, **self.agent.env}, *args)

    def turns_sent(self) -> int:
        assert len(self.agent.argvs()) == 1, self.agent.argvs()  # one CLI process: one conversation
        return len(self.agent.received())


RIGS: dict[str, type[Rig]] = {"acp": AcpRig, "stream-json": StreamJsonRig}


@pytest.fixture(params=sorted(RIGS))
def rig(request: pytest.FixtureRequest, tmp_path: Path) -> Rig:
    engine = str(request.param)
    if engine not in INSTALLED:
        pytest.skip(f"the {engine} engine is not installed")
    fixture = "fake_acp_agent" if engine == "acp" else "fake_agy"
    return RIGS[engine](tmp_path, request.getfixturevalue(fixture))


def calling(rig: Rig, **call: Any) -> list[Step]:
    return [rig.say("calling. "), {"mcp_call": call}, rig.say(" done.")]


def test_a_bridge_tool_round_trip_completes_the_turn(rig: Rig) -> None:
    rig.script([calling(rig, tool="host_echo", arguments={"x": 1})])
    result = rig.run("go")
    ctx = result.context()
    assert result.proc.returncode == 0, ctx
    [tool_use] = result.of("tool_use")
    assert (tool_use["name"], tool_use["args"]) == ("host_echo", {"x": 1}), ctx
    assert result.text == 'calling. tool result: echo {"x": 1} done.', ctx
    assert [e["stop_reason"] for e in result.of("turn_end")] == ["stop"], ctx
    assert len(result.of("turn_start")) == 1, ctx  # one agent turn, re-entered after the tool
    assert rig.turns_sent() == 1, ctx
    [listed] = rig.events("mcp-tools")
    assert {"host_echo", "slow_tool", "guarded", "ask_user", "bridge_poll_result"} <= set(listed["names"])


def test_a_refusing_host_tool_answers_the_agent_with_an_error(rig: Rig) -> None:
    rig.script([calling(rig, tool="guarded")])
    result = rig.run("go")
    assert result.proc.returncode == 0, result.context()
    assert "tool error: refused by host policy" in result.text


def test_a_slow_tool_is_escalated_and_polled(rig: Rig) -> None:
    write_config(rig.env, "[bridge]\nescalate_after_seconds = 0.3\npark_ttl_seconds = 30\n")
    rig.script([calling(rig, tool="slow_tool", arguments={"seconds": 1.5}, poll_interval=0.2)])
    result = rig.run("go")
    ctx = result.context()
    assert result.proc.returncode == 0, ctx
    assert "tool result: slow done after 1.5 done." in result.text, ctx
    [call] = rig.events("mcp-call")
    assert call["polls"] >= 1 and not call["is_error"], ctx
    assert any("still running" in n["message"] for n in result.of("notice")), ctx


def test_a_result_after_the_park_ttl_goes_out_in_a_follow_up_turn(rig: Rig) -> None:
    write_config(rig.env, "[bridge]\nescalate_after_seconds = 0\npark_ttl_seconds = 0.5\n")
    rig.script(
        [
            [{"mcp_call": {"tool": "slow_tool", "arguments": {"seconds": 1.5}}}, rig.say(" first turn over.")],
            [rig.say("second turn got: "), rig.echo()],
        ]
    )
    result = rig.run("go")
    ctx = result.context()
    assert result.proc.returncode == 0, ctx
    assert "tool error: Error: host tool round-trip timed out after 0.5s first turn over." in result.text, ctx
    assert len(result.of("turn_start")) == 2, ctx  # the follow-up turn carried the late result
    assert "second turn got: [Late tool delivery]" in result.text, ctx
    assert "slow done after 1.5" in result.text.split("second turn got:")[1], ctx
    assert rig.turns_sent() == 2, ctx  # the same agent conversation


#: A plain park with a 0.5 s TTL, and an escalated call (acknowledged at
#: 0.3 s, polled) whose escalated TTL is 1 s.
TTLS = {
    "plain": "[bridge]\nescalate_after_seconds = 0\npark_ttl_seconds = 0.5\n",
    "escalated": "[bridge]\nescalate_after_seconds = 0.3\nescalated_ttl_seconds = 1.0\npark_ttl_seconds = 30\n",
}


@pytest.mark.parametrize("park", sorted(TTLS))
def test_a_tool_that_outlives_its_park_ttl_does_not_hold_the_turn(rig: Rig, park: str) -> None:
    """Issue 28 item 2: at the (escalated) TTL the agent gets its error
    result, and the turn reads the agent's reply and ends while the tool runs
    on; its result, when it comes, is a late result the follow-up turn
    carries. The turn used to wait for the tool (for ever, for a tool that
    never ends)."""
    write_config(rig.env, TTLS[park])
    call = {"tool": "slow_tool", "arguments": {"seconds": 4}, "poll_interval": 0.2}
    rig.script([[{"mcp_call": call}, rig.say(" first turn over.")], [rig.say("second turn got: "), rig.echo()]])
    result = rig.run("go")
    ctx = result.context()
    assert result.proc.returncode == 0, ctx
    first = result.of("turn_end")[0]
    assert "timed out after" in first["response"] and first["response"].endswith(" first turn over."), ctx
    order = [e["type"] if e["type"] != "notice" else e["message"] for e in result.events]
    late = next(i for i, what in enumerate(order) if "arrived after its call ended" in what)
    assert order.index("turn_end") < late, order  # the turn ended before the tool did
    assert any("waiting for host tool 'slow_tool'" in what for what in order[:late]), order
    assert "second turn got: [Late tool delivery]" in result.text, ctx
    assert "slow done after 4" in result.text.split("second turn got:")[1], ctx
    assert rig.turns_sent() == 2, ctx


#: The turn's deadline: 12 s (the bridge's first connection, its SDK import, takes seconds on a busy
#: machine, on the deadline's clock), or none (``--timeout 0``).
DEADLINES = {"12s": "timeout_minutes = 0.2", "none": "timeout_minutes = 0"}


@pytest.mark.parametrize("deadline", sorted(DEADLINES))
def test_the_clocks_run_again_after_a_park_ttl(rig: Rig, deadline: str) -> None:
    """Issue 28 item 2: after the TTL the agent says a little and goes
    silent; the inactivity clock fires (the turn used to wait for the tool,
    here 20 s). The turn failed, so no follow-up turn will carry the tool's
    result: the tool, still running, is cancelled at once, with a notice
    saying why, and the command ends with the turn's exit 3. It used to be
    waited for until the turn's deadline (8.8 s more; with no deadline until
    the tool ended, after which a follow-up turn was sent and its exit 0 hid
    the timeout)."""
    config = "[bridge]\nescalate_after_seconds = 0\npark_ttl_seconds = 0.5\n"
    write_config(rig.env, config + f"[turn]\n{DEADLINES[deadline]}\ninactivity_minutes = 0.025\n")
    call = {"tool": "slow_tool", "arguments": {"seconds": 20}}
    rig.script([[{"mcp_call": call}, rig.say(" then silence."), {"hang": True}], [rig.say("a follow-up turn")]])
    started = time.monotonic()
    result = rig.run("go")
    elapsed = time.monotonic() - started
    ctx = result.context()
    assert result.proc.returncode == 3, ctx
    [end] = result.of("turn_end")
    assert end["error_kind"] == "inactivity" and end["response"].endswith("then silence."), ctx
    notices = [n["message"] for n in result.of("notice")]
    said = "host tool 'slow_tool' was cancelled at once: its turn ended with exit 3, and no follow-up turn is sent"
    assert any(n.startswith(said) and n.endswith("its result will not reach the agent") for n in notices), ctx
    assert not any("waiting for host tool" in n for n in notices), ctx
    assert rig.turns_sent() == 1, ctx
    assert elapsed < 18, f"{elapsed:.1f}s: the command waited for the tool (20 s)"


def test_the_agent_hanging_up_aborts_the_park(rig: Rig) -> None:
    write_config(rig.env, "[bridge]\nescalate_after_seconds = 0\npark_ttl_seconds = 30\n")
    # generous enough that a busy machine still delivers the call before the agent hangs up
    hang_up = {"mcp_call": {"tool": "slow_tool", "arguments": {"seconds": 4}, "timeout": 2.0}}
    rig.script([[hang_up, rig.say(" first over.")], [rig.say("second: "), rig.echo()]])
    result = rig.run("go")
    ctx = result.context()
    assert result.proc.returncode == 0, ctx
    assert "tool error: MCP request timed out after 2s" in result.text, ctx
    notices = [n["message"] for n in result.of("notice")]
    # The park ends at the hang-up, or (on a loaded machine, where the agent's
    # turn end is read before the bridge sees the closed request) at the turn's
    # end: either way it is aborted, said, and the turn does not wait for the tool.
    ended = (
        "the agent disconnected before the tool result arrived",
        "the agent turn ended with an unresolved host tool call",
    )
    assert any(why in n for n in notices for why in ended), ctx
    # the tool kept running; its result reaches the agent in the follow-up turn
    assert "second: [Late tool delivery]" in result.text and "slow done after 4" in result.text, ctx
    assert rig.turns_sent() == 2, ctx


def test_ask_user_without_a_terminal_tells_the_agent(rig: Rig) -> None:
    """Nobody to answer: the agent is told so and goes on, and the run fails
    closed (exit 5) like every unanswered question."""
    rig.script([calling(rig, tool="ask_user", arguments={"question": "Anyone?"})])
    result = rig.run("go")
    assert result.proc.returncode == 5, result.context()
    assert "tool error: ask_user: there is no terminal attached to agy-host" in result.text
    assert "the agent asked 'Anyone?' and nobody answered" in result.proc.stdout


def test_ask_user_is_answered_by_an_answer_rule(rig: Rig, tmp_path: Path) -> None:
    """Unattended, ``--answers`` answers the agent's ``ask_user`` through the host's broker."""
    rules = tmp_path / "answers.toml"
    rules.write_text('[[answer]]\ntool = "ask_user"\ntitle = "Which branch*"\nvalue = "dev"\n')
    rig.script([calling(rig, tool="ask_user", arguments={"question": "Which branch?", "choices": ["main", "dev"]})])
    result = rig.run("--answers", str(rules), "go")
    assert result.proc.returncode == 0, result.context()
    assert "The user chose: dev" in result.text
