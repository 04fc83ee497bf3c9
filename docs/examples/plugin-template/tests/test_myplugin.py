"""The plugin, loaded through its entry point by a real ``agy-host`` run.

``agy_host_cli`` and ``fake_acp_agent`` come with agy-host (its pytest plugin
is registered under ``pytest11``): no conftest.py needed.
"""

from __future__ import annotations

from agy_host_myplugin.hooks import REMINDER


def test_the_reminder_reaches_the_agent(agy_host_cli, fake_acp_agent):
    agent = fake_acp_agent("echo")  # answers with the text of the prompt it received
    result = agy_host_cli("run", "--engine", "acp", "--agent", agent.command_line, "--format", "json", "hello")
    assert result.returncode == 0, result
    answer = "".join(e["delta"] for e in result.json_lines() if e["type"] == "text")
    assert answer.startswith("hello") and answer.endswith(REMINDER), answer
    [prompt] = agent.requests("session/prompt")
    assert REMINDER in prompt["params"]["prompt"][0]["text"]


def test_agy_host_lists_the_plugin(agy_host_cli):
    doc = agy_host_cli("plugins", "--format", "json").json()
    [me] = [p for p in doc["plugins"] if p["name"] == "myplugin"]
    assert me["distribution"] == "agy-host-myplugin"
    assert me["hooks"] == ["agy_host_prompt_parts"]
    assert not doc["errors"], doc["errors"]
