"""End to end: real ``agy-host`` processes (the ``agy_host_cli`` fixture)
drive the ACP engine against the fake ACP agent (``fake_acp_agent``); the
plugin is loaded through its entry point, as it is for users."""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from typing import Any

import pytest

from agy_host.testing.pytest_plugin import AgyHostHome, CliResult

Cli = Callable[..., CliResult]
Agent = Any  # agy_host.testing.agents.FakeAgent

if not any(ep.name == "usage_ledger" for ep in metadata.entry_points(group="agy_host")):
    pytest.skip(
        "agy-host-usage-ledger is not installed (pip install -e ./plugins/usage_ledger)", allow_module_level=True
    )
if not any(ep.name == "acp" for ep in metadata.entry_points(group="agy_host.engines")):
    pytest.skip("the ACP engine (agy-host-acp) is not installed", allow_module_level=True)

HOOKS = ["agy_host_diagnostics", "agy_host_register_commands", "agy_host_register_tools", "agy_host_render_event"]


def run(cli: Cli, agent: Agent, *args: str, env: dict[str, str] | None = None) -> CliResult:
    return cli("run", "--engine", "acp", "--agent", agent.command_line, "--format", "json", *args, env=env)


def test_each_turn_is_recorded_and_shown(agy_host_cli: Cli, fake_acp_agent: Callable[..., Agent]) -> None:
    ok = run(agy_host_cli, fake_acp_agent("usage"), "--session", "alpha", "count")
    assert ok.returncode == 0, ok
    crashed = run(agy_host_cli, fake_acp_agent("crash-mid-turn"), "--session", "beta", "crash")
    assert crashed.returncode != 0, crashed
    plain = run(agy_host_cli, fake_acp_agent("happy"), "--session", "alpha", "again")
    assert plain.returncode == 0, plain

    shown = agy_host_cli("ledger", "show", "--format", "json")
    assert shown.returncode == 0, shown
    doc = shown.json()
    assert doc["version"] == 1 and doc["skipped"] == []
    first, second, third = doc["entries"]
    assert (first["session"], first["engine"], first["stop_reason"]) == ("alpha", "acp", "stop")
    assert first["conversation_id"] == "fake-session-0001" and first["agent_stop_reason"] == "end_turn"
    # tokens from the prompt response, cost from the earlier usage_update: both kept
    assert first["usage"]["input_tokens"] == 1000 and first["usage"]["total_tokens"] == 1834
    assert first["usage"]["cost_amount"] == 0.0123 and first["usage"]["cost_currency"] == "USD"
    assert first["duration_s"] > 0
    assert (second["session"], second["stop_reason"], second["error_kind"]) == ("beta", "error", "exited")
    assert "usage" not in third  # the happy agent reports none: "not reported", never zero
    totals = doc["totals"]
    assert (totals["turns"], totals["turns_with_usage"], totals["by_stop_reason"]) == (3, 1, {"stop": 2, "error": 1})

    only = agy_host_cli("ledger", "show", "--session", "alpha", "--last", "1", "--format", "json").json()
    assert [e["session"] for e in only["entries"]] == ["alpha"] and "usage" not in only["entries"][0]

    text = agy_host_cli("ledger", "show")
    lines = text.stdout.splitlines()
    assert text.returncode == 0 and lines[0].split()[:4] == ["ended", "session", "engine", "stop"], text
    assert "error (exited)" in lines[2]
    assert lines[-1].startswith("3 turns (error 1, stop 2) in ")
    assert lines[-1].endswith("usage reported for 1: in 1000, out 234, total 1834; cost 0.0123 USD")


def test_ledger_show_with_nothing_recorded_and_a_bad_format(agy_host_cli: Cli, agy_host_home: AgyHostHome) -> None:
    empty = agy_host_cli("ledger", "show")
    assert empty.returncode == 0 and empty.stdout.startswith("no turns recorded ("), empty
    assert agy_host_cli("ledger", "path").stdout.strip() == str(agy_host_home.state_dir / "usage-ledger.jsonl")
    bad = agy_host_cli("ledger", "show", "--format", "yaml")
    assert bad.returncode == 2 and "unknown --format 'yaml'" in bad.stderr, bad


def test_agy_host_plugins_lists_the_plugin_and_its_hooks(agy_host_cli: Cli) -> None:
    doc = agy_host_cli("plugins", "--format", "json").json()
    [info] = [p for p in doc["plugins"] if p["name"] == "usage_ledger"]
    assert info["distribution"] == "agy-host-usage-ledger"
    assert info["version"] == metadata.version("agy-host-usage-ledger")
    assert info["hooks"] == HOOKS
    assert not [e for e in doc["errors"] if e["name"] == "usage_ledger"]
    text = agy_host_cli("plugins").stdout
    assert f"usage_ledger  [agy-host-usage-ledger {info['version']}]" in text
    assert f"hooks: {', '.join(HOOKS)}" in text


def test_doctor_shows_the_ledger_section(agy_host_cli: Cli, fake_acp_agent: Callable[..., Agent]) -> None:
    agent = fake_acp_agent("happy")
    assert run(agy_host_cli, agent, "--session", "d", "hi").returncode == 0
    doctor = agy_host_cli("doctor", "--engine", "acp", "--agent", agent.command_line, "--format", "json")
    [section] = [s for s in doctor.json()["sections"] if s["title"] == "usage ledger"]
    rows = {r["label"]: r for r in section["rows"]}
    assert rows["turns"]["value"] == "1" and rows["turns"]["status"] == "ok", doctor
    assert rows["last turn"]["value"].endswith(" d (stop)")


def test_trace_hooks_shows_the_plugin_being_called(agy_host_cli: Cli, fake_acp_agent: Callable[..., Agent]) -> None:
    result = run(agy_host_cli, fake_acp_agent("happy"), "hi", env={"AGY_HOST_TRACE_HOOKS": "1"})
    assert result.returncode == 0, result
    traced = [line for line in result.stderr.splitlines() if line.startswith("[hook] agy_host_render_event(")]
    assert traced and all("'usage_ledger'" in line for line in traced), result.stderr[-2000:]
    assert any(line.startswith("[hook] agy_host_register_commands(app) -> [") for line in result.stderr.splitlines())


def test_disabling_the_plugin_removes_it_entirely(agy_host_cli: Cli, fake_acp_agent: Callable[..., Agent]) -> None:
    off = {"AGY_HOST_DISABLE_PLUGINS": "agy-host-usage-ledger"}
    assert run(agy_host_cli, fake_acp_agent("happy"), "hi", env=off).returncode == 0
    assert agy_host_cli("ledger", "show", env=off).returncode != 0  # no such command
    plugins = agy_host_cli("plugins", "--format", "json", env=off).json()
    assert "usage_ledger" in plugins["disabled"]
    assert agy_host_cli("ledger", "show").stdout.startswith("no turns recorded")


def test_the_agent_can_call_usage_summary_through_the_bridge(
    agy_host_cli: Cli, fake_acp_agent: Callable[..., Agent]
) -> None:
    if not any(ep.name == "bridge_mcp" for ep in metadata.entry_points(group="agy_host")):
        pytest.skip("the MCP bridge (agy-host-bridge-mcp) is not installed")
    assert run(agy_host_cli, fake_acp_agent("usage"), "--session", "u", "first").returncode == 0
    agent = fake_acp_agent(
        {"prompt": [{"mcp_call": {"tool": "usage_summary", "arguments": {"session": "u"}}}, {"stop": "end_turn"}]}
    )
    result = run(agy_host_cli, agent, "--session", "u", "how much?")
    assert result.returncode == 0, result
    events = result.json_lines()
    assert [(e["name"], e["args"]) for e in events if e["type"] == "tool_use"] == [("usage_summary", {"session": "u"})]
    text = "".join(e["delta"] for e in events if e["type"] == "text")
    assert "agy-host usage (session 'u'): 1 turn (stop 1)" in text, result
    assert "usage reported for 1: in 1000, out 234, total 1834; cost 0.0123 USD" in text
    entries = agy_host_cli("ledger", "show", "--format", "json").json()["entries"]
    assert [e["host_tool_calls"] for e in entries if e.get("host_tool_calls")] == [1]
