"""``--max-tokens`` and ``--max-cost``: a headless run stops when the usage the
agent reports crosses them (exit 6), mid-turn when the agent reports as it
goes, at the end otherwise; an agent that reports nothing to check gets a
notice, never a silent pass. Real CLI and Python API, the kit's fake ACP agent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp_cli import run_turn

from agy_host.testing.agents import FakeAgent, fake_acp_agent_command
from agy_host.testing.isolation import isolated_env

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")

COSTLY = {
    "prompt": [
        {"chunk": "working"},
        {"usage": {"used": 900, "size": 200000, "cost": {"amount": 0.5, "currency": "USD"}}},
        {"hang": True},  # it would go on spending: only the budget stops it
    ]
}
WORDY = {
    "prompt": [
        {"chunk": "done"},
        {"prompt_usage": {"inputTokens": 900, "outputTokens": 200, "totalTokens": 1100}},
    ]
}


def run(tmp_path: Path, agent: FakeAgent, *args: str) -> tuple[int, list[dict[str, Any]], str]:
    proc = run_turn(tmp_path, agent, "--format", "json", *args)
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


def test_a_cost_crossing_mid_turn_stops_the_turn_with_exit_6(tmp_path: Path) -> None:
    agent = fake_acp_agent_command(COSTLY, workdir=tmp_path / "agents")
    code, events, err = run(tmp_path, agent, "--max-cost", "0.25")
    assert code == 6, err
    done = events[-1]
    assert done["exit_code"] == 6 and done["stop_reason"] == "error"
    assert "cost of 0.5 USD, over --max-cost 0.25" in done["error"]
    [end] = [e for e in events if e["type"] == "turn_end"]
    assert end["error_kind"] == "budget"
    assert any(e["type"] == "notice" and e["message"].startswith("stopping the turn:") for e in events)
    assert agent.events("cancel"), "the agent was told to stop"


def test_tokens_known_only_at_the_end_still_fail_the_run(tmp_path: Path) -> None:
    agent = fake_acp_agent_command(WORDY, workdir=tmp_path / "agents")
    code, events, err = run(tmp_path, agent, "--max-tokens", "1000")
    assert code == 6, err
    assert "used 1,100 tokens, over --max-tokens 1,000" in events[-1]["error"]
    code, _, err = run(tmp_path, fake_acp_agent_command(WORDY, workdir=tmp_path / "a2"), "--max-tokens", "5000")
    assert code == 0, err


def test_a_limit_the_agent_gives_nothing_to_check_says_so(tmp_path: Path) -> None:
    agent = fake_acp_agent_command("happy", workdir=tmp_path / "agents")
    code, events, err = run(tmp_path, agent, "--max-tokens", "10", "--max-cost", "1")
    assert code == 0, err
    [notice] = [e for e in events if e["type"] == "notice" and e.get("code") == "budget"]
    assert "not enforced" in notice["message"] and "--max-tokens" in notice["message"]


async def test_the_python_api_takes_the_same_budgets(tmp_path: Path) -> None:
    import agy_host

    env = isolated_env(tmp_path / "home", AGY_HOST_ENGINE="acp", AGY_HOST_TTY="none")
    agent = fake_acp_agent_command(COSTLY, workdir=tmp_path / "agents")
    async with agy_host.open_session(agent=agent.command_line, env=env, cwd=tmp_path, max_cost=0.1) as s:
        result = await s.prompt("go").wait()
    assert result.exit_code == 6 and result.error_kind == "budget"
    with pytest.raises(agy_host.UsageError, match="max_tokens must be >= 0"):
        agy_host.open_session(agent=agent.command_line, env=env, max_tokens=-1)


def costs(*totals: float) -> dict[str, Any]:
    """An agent whose prompts end with the session's cost at ``totals``
    (ACP's ``usage_update.cost`` is the session's cumulative cost)."""
    return {
        "prompts": [
            [
                {"chunk": f"turn {i}"},
                {"usage": {"used": 100 * i, "size": 1000, "cost": {"amount": t, "currency": "USD"}}},
            ]
            for i, t in enumerate(totals, 1)
        ]
    }


async def test_a_sessions_cumulative_cost_is_not_charged_to_each_turn(tmp_path: Path) -> None:
    """Turn 2 spent 0.15 of the session's 0.30: under a 0.2 budget it
    passes, and its usage says 0.15 with 0.30 as the running total."""
    import agy_host

    env = isolated_env(tmp_path / "home", AGY_HOST_ENGINE="acp", AGY_HOST_TTY="none")
    agent = fake_acp_agent_command(costs(0.15, 0.30, 0.70), workdir=tmp_path / "agents")
    async with agy_host.open_session(agent=agent.command_line, env=env, cwd=tmp_path, max_cost=0.2) as s:
        first = await s.prompt("one").wait()
        second = await s.prompt("two").wait()
        third = await s.prompt("three").wait()
    assert first.exit_code == 0 and second.exit_code == 0, (first, second)
    assert first.usage is not None and first.usage.cost_amount == pytest.approx(0.15)
    assert second.usage is not None and second.usage.cost_amount == pytest.approx(0.15)
    assert second.usage.context_used == 200
    assert third.exit_code == 6 and third.error and "cost of 0.4 USD, over --max-cost 0.2" in third.error


def test_a_session_loaded_after_a_restart_never_charges_its_total_to_one_turn(tmp_path: Path) -> None:
    """A second ``run`` loads the session the first made: the agent's first
    cost report (the session's 0.30) cannot be split without the total at the
    turn's start, so the turn's cost is unknown and the limit says it was not
    enforced, rather than stopping the turn for the session's whole spend."""
    scenario = {**costs(0.15, 0.30), "prompt_counter": str(tmp_path / "prompts.count")}
    agent = fake_acp_agent_command(scenario, workdir=tmp_path / "agents")
    code, events, err = run(tmp_path, agent, "--session", "kept", "--max-cost", "0.2")
    assert code == 0 and events[-1]["usage"]["cost_amount"] == pytest.approx(0.15), err
    code, events, err = run(tmp_path, agent, "--session", "kept", "--max-cost", "0.2")
    assert code == 0, err
    assert agent.requests("session/load") or agent.requests("session/resume"), "the second run made a new session"
    done = events[-1]
    assert "cost_amount" not in (done["usage"] or {}) and done["cumulative_usage"]["cost_amount"] == 0.3
    [notice] = [e for e in events if e["type"] == "notice" and e.get("code") == "budget"]
    assert "--max-cost (no cost)" in notice["message"]


def test_stream_json_steps_report_usage_as_they_come_so_the_budget_stops_the_turn(tmp_path: Path) -> None:
    """agy's step usage is reported as each step ends: a turn that crossed
    ``--max-tokens`` and would go on for ever is stopped there (exit 6),
    not left to its timeout (10 minutes: the run would hang this test)."""
    pytest.importorskip("agy_host_stream_json.engine", reason="the stream-json engine is not installed")
    from agy_host.testing.agy_cli.agent import make_fake_agy

    agy = make_fake_agy(tmp_path / "fake-agy", {"turns": [[{"say": ["working"]}, {"hang": True}]]})
    argv = [sys.executable, "-m", "agy_host.cli.main", "run", "--engine", "stream-json", "--format", "json"]
    proc = subprocess.run(
        [*argv, "--max-tokens", "500", "--timeout", "10", "go"],  # a hung turn would outlive this test
        env=isolated_env(tmp_path / "home", AGY_HOST_TTY="none") | agy.env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
    )
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 6, proc.stderr
    assert "over --max-tokens 500" in events[-1]["error"]
    assert any(e["type"] == "notice" and e["message"].startswith("stopping the turn:") for e in events)
