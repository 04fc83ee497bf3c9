"""The stable 2026 ACP v1 surface beyond questions (``@agentclientprotocol/sdk``
2.4.0): session notices and context compaction are advertised, shown and
never dropped. Through the real CLI against the kit's fake ACP agent; what
agy-host sends is checked against the schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp_cli import agy_host, run_turn
from conformance.schema import validate_agent_message, validate_client_message

from agy_host.testing.agents import fake_acp_agent_command
from agy_host.testing.isolation import isolated_env

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")


def update(body: dict[str, Any]) -> dict[str, Any]:
    return {"update": body}


STEPS = [
    update({"sessionUpdate": "notice", "severity": "warning", "title": "Rate limit near", "description": "80% used"}),
    update({"sessionUpdate": "notice", "severity": "_custom", "title": "Custom severity"}),
    update({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress"}),
    update(
        {
            "sessionUpdate": "compaction_summary_chunk",
            "compactionId": "c1",
            "content": {"type": "text", "text": "Kept: the failing test "},
        }
    ),
    update(
        {
            "sessionUpdate": "compaction_summary_chunk",
            "compactionId": "c1",
            "content": {"type": "text", "text": "and the fix plan."},
        }
    ),
    update({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "completed"}),
    update({"sessionUpdate": "compaction_update", "compactionId": "c2", "status": "failed", "error": "too big"}),
    {"chunk": "DONE"},
]


def test_notices_and_compaction_are_advertised_and_shown(tmp_path: Path) -> None:
    for step in STEPS:  # what the fake sends is valid ACP, so what we show is what an agent may send
        if "update" in step:
            msg = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": step["update"]}}
            validate_agent_message(msg)
    agent = fake_acp_agent_command({"prompt": STEPS}, workdir=tmp_path / "agents")
    proc = run_turn(tmp_path, agent, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    [init] = agent.requests("initialize")
    validate_client_message(init)
    assert init["params"]["clientCapabilities"]["session"] == {"notices": {}, "compaction": {}}
    notices = [
        (e.get("level", "info"), e["message"])
        for e in map(json.loads, proc.stdout.splitlines())
        if e["type"] == "notice"
    ]
    assert notices == [
        ("warning", "Rate limit near: 80% used"),
        ("info", "Custom severity"),
        ("info", "the agent is compacting its context"),
        ("info", "the agent compacted its context: Kept: the failing test and the fix plan."),
        ("warning", "the agent's context compaction failed: too big"),
    ]
    assert "unknown-update" not in proc.stderr and "does not know" not in proc.stdout


def test_resume_is_preferred_over_load_when_the_agent_offers_it(tmp_path: Path) -> None:
    caps = {"sessionCapabilities": {"resume": {}}}
    agent = fake_acp_agent_command("echo", workdir=tmp_path / "agents", agent_capabilities=caps)
    first = agy_host(tmp_path, "run", "--agent", agent.command_line, "--session", "r", "one")
    assert first.returncode == 0, first.stderr
    second = agy_host(tmp_path, "run", "--agent", agent.command_line, "--session", "r", "--resume", "two")
    assert second.returncode == 0, second.stderr
    [resume] = agent.requests("session/resume")
    validate_client_message(resume)
    [new] = agent.requests("session/new")
    assert resume["params"]["sessionId"] and not agent.requests("session/load")
    names = [[srv["name"] for srv in m["params"]["mcpServers"]] for m in (resume, new)]
    assert names[0] == names[1] and names[0], "the resumed session gets this process's MCP servers too"


def test_the_agents_own_sessions_can_be_listed_and_deleted(tmp_path: Path) -> None:
    listed = [
        {"sessionId": "old-1", "cwd": "/work/a", "title": "Refactor", "updatedAt": "2026-11-30T10:00:00Z"},
        {"sessionId": "old-2", "cwd": "/work/b"},
    ]
    caps = {"sessionCapabilities": {"list": {}, "delete": {}}}
    agent = fake_acp_agent_command("echo", workdir=tmp_path / "agents", agent_capabilities=caps, listed_sessions=listed)
    proc = agy_host(tmp_path, "sessions", "agent-list", "--agent", agent.command_line, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    sessions = json.loads(proc.stdout)["sessions"]
    assert [(x["id"], x.get("title", "")) for x in sessions] == [("old-1", "Refactor"), ("old-2", "")]
    filtered = agy_host(tmp_path, "sessions", "agent-list", "--agent", agent.command_line, "--cwd", "/work/b")
    assert filtered.returncode == 0 and "old-2" in filtered.stdout and "old-1" not in filtered.stdout
    for message in agent.requests("session/list"):
        validate_client_message(message)
    gone = agy_host(tmp_path, "sessions", "agent-rm", "--agent", agent.command_line, "old-1")
    assert gone.returncode == 0 and "deleted old-1" in gone.stdout, gone.stderr
    [deleted] = agent.requests("session/delete")
    validate_client_message(deleted)
    assert deleted["params"] == {"sessionId": "old-1"}


def test_deleting_an_agent_session_drops_the_binding_to_it(tmp_path: Path) -> None:
    """A host session bound to the deleted conversation would fail its next resume."""
    caps = {"sessionCapabilities": {"list": {}, "delete": {}}}
    listed = [{"sessionId": "conv-9", "cwd": str(tmp_path)}]  # what the agent remembers across its processes
    agent = fake_acp_agent_command(
        "echo", workdir=tmp_path / "agents", agent_capabilities=caps, session_id="conv-9", listed_sessions=listed
    )
    first = run_turn(tmp_path, agent, "--session", "keep")
    assert first.returncode == 0, first.stderr
    shown = agy_host(tmp_path, "sessions", "agent-list", "--agent", agent.command_line, "--format", "json")
    assert [(x["id"], x["host_session"]) for x in json.loads(shown.stdout)["sessions"]] == [("conv-9", "keep")]
    gone = agy_host(tmp_path, "sessions", "agent-rm", "--agent", agent.command_line, "conv-9")
    assert gone.returncode == 0 and "and its binding" in gone.stdout, gone.stderr
    bindings = json.loads(agy_host(tmp_path, "sessions", "list", "--format", "json").stdout)["bindings"]
    assert not [k for k in bindings if k.startswith("keep@")]


def test_an_agent_without_session_list_says_so(tmp_path: Path) -> None:
    agent = fake_acp_agent_command("echo", workdir=tmp_path / "agents")
    proc = agy_host(tmp_path, "sessions", "agent-list", "--agent", agent.command_line)
    assert proc.returncode == 1
    assert "does not offer session/list" in proc.stderr


def test_a_request_given_up_on_is_cancelled_with_cancel_request(tmp_path: Path) -> None:
    """``initialize`` past its deadline: agy-host stops waiting and says so
    on the wire (``$/cancel_request`` with the request's id), then ends the agent."""
    # it ignores SIGTERM: it lives long enough after the deadline to log what it got
    agent = fake_acp_agent_command("hang-initialize", workdir=tmp_path / "agents", sigterm="ignore")
    config = tmp_path / "home" / ".config" / "agy-host" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[acp]\ninitialize_timeout_seconds = 1.0\n")
    proc = agy_host(tmp_path, "run", "--agent", agent.command_line, "hi")
    assert proc.returncode == 1 and "did not answer initialize" in proc.stderr, proc.stderr
    [init] = agent.requests("initialize")
    [cancel] = agent.requests("$/cancel_request")
    validate_client_message(cancel)
    assert cancel["params"] == {"requestId": init["id"]} and "id" not in cancel


def test_add_dir_goes_to_agents_that_take_more_roots_and_others_say_so(tmp_path: Path) -> None:
    extra = tmp_path / "shared-lib"
    extra.mkdir()
    caps = {"sessionCapabilities": {"additionalDirectories": {}}}
    taking = fake_acp_agent_command("echo", workdir=tmp_path / "a1", agent_capabilities=caps)
    proc = agy_host(tmp_path, "run", "--agent", taking.command_line, "--add-dir", str(extra), "hi")
    assert proc.returncode == 0, proc.stderr
    [new] = taking.requests("session/new")
    validate_client_message(new)
    assert new["params"]["additionalDirectories"] == [str(extra.resolve())]
    plain = fake_acp_agent_command("echo", workdir=tmp_path / "a2")
    proc = agy_host(tmp_path, "run", "--agent", plain.command_line, "--add-dir", str(extra), "hi")
    assert proc.returncode == 0, proc.stderr
    assert "--add-dir is not passed" in proc.stderr
    assert "additionalDirectories" not in plain.requests("session/new")[0]["params"]
    missing = agy_host(tmp_path, "run", "--agent", plain.command_line, "--add-dir", str(tmp_path / "nope"), "hi")
    assert missing.returncode == 2 and "is not a directory" in missing.stderr


async def test_config_option_and_session_info_updates_are_applied(tmp_path: Path) -> None:
    """The agent switches its own model mid-turn (a quota fallback, say) and
    titles the session: the next turn knows the model changed and sets the
    one asked for again, instead of trusting what it set before."""
    import agy_host

    options = [{"id": "model", "name": "Model", "type": "select", "currentValue": "fake-model-high", "options": []}]
    steps = [
        {"update": {"sessionUpdate": "config_option_update", "configOptions": options}},
        {"update": {"sessionUpdate": "session_info_update", "title": "Fix the flaky test"}},
        {"chunk": "ok"},
    ]
    agent = fake_acp_agent_command({"prompt": steps}, workdir=tmp_path / "agents")
    env = isolated_env(tmp_path / "home", AGY_HOST_ENGINE="acp", AGY_HOST_TTY="none")
    notices: list[str] = []
    async with agy_host.open_session(agent=agent.command_line, env=env, cwd=tmp_path, model="fake-model-low") as s:
        for _ in range(2):
            async for event in s.prompt("go"):
                if isinstance(event, agy_host.Notice):
                    notices.append(event.message)
            assert s.result is not None and s.result.exit_code == 0
    sets = [
        m["params"]["value"] for m in agent.requests("session/set_config_option") if m["params"]["configId"] == "model"
    ]
    assert sets == ["fake-model-low", "fake-model-low"], "the agent's own switch was not noticed"
    assert "session title: Fix the flaky test" in notices
