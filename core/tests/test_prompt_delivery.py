"""G10 and G1 reach real agents byte-identically on every engine.

The system block (config ``system_prompt`` plus AGENTS.md) and the context
digest are read back from what the agent processes received: the fake ACP
agent's log of ``session/prompt`` and the fake agy CLI's log of its stdin
lines. The stream-json half is skipped when that engine is not installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from agy_host.builtins.digest import DIGEST_PREAMBLE
from agy_host.builtins.transcripts import TranscriptEntry, append_entries
from agy_host.contract.prompt_parts import SYSTEM_END, SYSTEM_PREAMBLE
from agy_host.testing.isolation import isolated_env

AGY_HOST = Path(sys.executable).with_name("agy-host")
ENGINES = {ep.name for ep in metadata.entry_points(group="agy_host.engines")}
SEP = "\n\n---\n\n"
SYSTEM = "Be terse. Prefer small diffs."
AGENTS = "# Project rules\n\nRun `make test` before you finish."

if not AGY_HOST.exists():
    pytest.skip(f"console script not installed next to {sys.executable}", allow_module_level=True)
needs_acp = pytest.mark.skipif("acp" not in ENGINES, reason="the ACP engine is not installed")
needs_stream_json = pytest.mark.skipif("stream-json" not in ENGINES, reason="the stream-json engine is not installed")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)  # the AGENTS.md walk stops at the repository root
    (root / "AGENTS.md").write_text(AGENTS + "\n")
    (tmp_path / "AGENTS.md").write_text("above the repository: never sent\n")
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    out = isolated_env(home)
    config = home / ".config" / "agy-host" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f"system_prompt = {json.dumps(SYSTEM)}\n")
    return out


def agy_host(env: dict[str, str], cwd: Path, *args: str) -> str:
    """The stdout of a successful ``agy-host`` command."""
    proc = subprocess.run(
        [str(AGY_HOST), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=90, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def ask(env: dict[str, str], cwd: Path, *args: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(agy_host(env, cwd, "ask", "--format", "json", *args))
    assert report["status"] == "ok", report
    return report


def acp_prompts(agent: Any) -> list[list[dict[str, Any]]]:
    return [m["params"]["prompt"] for m in agent.requests("session/prompt")]


def acp_text(prompt: list[dict[str, Any]]) -> str:
    [text] = [b["text"] for b in prompt if b["type"] == "text"]
    return str(text)


def agy_prompts(agy: Any) -> list[str]:
    return [m["message"]["content"] for m in agy.received() if m.get("event") == "user"]


def expected_block() -> str:
    return f"{SYSTEM_PREAMBLE}\n\n{SYSTEM}\n\n## AGENTS.md\n\n{AGENTS}\n\n{SYSTEM_END}"


@needs_acp
def test_acp_new_conversations_get_the_system_block_once(
    env: dict[str, str], project: Path, fake_acp_agent: Callable[..., Any]
) -> None:
    agent = fake_acp_agent("echo")
    acp = ["--engine", "acp", "--agent", agent.command_line]
    ask(env, project, *acp, "--session", "a1", "first")
    ask(env, project, *acp, "--session", "a1", "second")
    ask(env, project, *acp, "--session", "a2", "other")
    first, second, other = (acp_text(p) for p in acp_prompts(agent))
    assert first == expected_block() + SEP + "first"
    assert second == "second", "an existing conversation keeps the block it started with"
    assert other.split(SEP)[0] == first.split(SEP)[0], "every new conversation gets the same bytes"


@needs_acp
@needs_stream_json
def test_the_system_block_is_byte_identical_on_both_engines(
    env: dict[str, str], project: Path, fake_acp_agent: Callable[..., Any], tmp_path: Path
) -> None:
    from agy_host.testing.agy_cli.agent import make_fake_agy

    agent = fake_acp_agent("echo")
    agy = make_fake_agy(tmp_path / "fake-agy", "echo")
    ask(env, project, "--engine", "acp", "--agent", agent.command_line, "--session", "b1", "hello")
    ask(env | agy.env, project, "--engine", "stream-json", "--session", "b2", "hello")
    ask(env | agy.env, project, "--engine", "stream-json", "--session", "b2", "again")
    [acp_prompt] = [acp_text(p) for p in acp_prompts(agent)]
    sj_first, sj_second = agy_prompts(agy)
    assert sj_first.encode() == acp_prompt.encode() == (expected_block() + SEP + "hello").encode()
    assert sj_second == "again"


def _seed(env: dict[str, str], session: str) -> None:
    """A transcript as if the session had run turns on another agent."""
    entries = [
        TranscriptEntry(v=1, ts="2026-12-01T10:00:00Z", role="user", text="what does main do?", engine="other"),
        TranscriptEntry(v=1, ts="2026-12-01T10:00:00Z", role="tool", tool="read", text="(called)", engine="other"),
        TranscriptEntry(
            v=1,
            ts="2026-12-01T10:00:01Z",
            role="assistant",
            text="It prints hi.",
            engine="other",
            conversation_id="o-1",
        ),
    ]
    append_entries(session, entries, env)


@needs_acp
@needs_stream_json
def test_the_digest_is_a_resource_on_acp_and_inline_on_stream_json_with_the_same_text(
    env: dict[str, str], project: Path, fake_acp_agent: Callable[..., Any], tmp_path: Path
) -> None:
    from agy_host.testing.agy_cli.agent import make_fake_agy

    for session in ("d1", "d2"):
        _seed(env, session)
    agent = fake_acp_agent("echo")
    agy = make_fake_agy(tmp_path / "fake-agy", "echo")
    ask(env, project, "--digest", "--engine", "acp", "--agent", agent.command_line, "--session", "d1", "go on")
    ask(env | agy.env, project, "--digest", "--engine", "stream-json", "--session", "d2", "go on")
    [prompt] = acp_prompts(agent)
    [resource] = [b["resource"] for b in prompt if b["type"] == "resource"]
    assert resource["uri"] == "urn:agy-host:context-digest/d1/3"
    digest = resource["text"]
    assert digest.startswith(DIGEST_PREAMBLE + "\n\n")
    assert "[earlier user message]\nwhat does main do?" in digest
    assert "[tool result: read]\n(called)" in digest
    assert "[assistant turn from other]\nIt prints hi." in digest
    assert acp_text(prompt) == expected_block() + SEP + "go on", "the digest is not inlined on ACP"
    [inline] = agy_prompts(agy)
    assert inline.split(SEP) == [expected_block(), digest, "go on"]


@needs_acp
def test_the_digest_leaves_out_what_the_agent_saw(
    env: dict[str, str], project: Path, fake_acp_agent: Callable[..., Any]
) -> None:
    agent = fake_acp_agent("echo")
    acp = ["--engine", "acp", "--agent", agent.command_line, "--session", "w"]
    ask(env, project, *acp, "one")  # digest off: the transcript still records the turn
    _seed(env, "w")  # another engine ran a turn afterwards
    ask(env, project, "--digest", *acp, "two")
    ask(env, project, "--digest", *acp, "three")
    first, second, third = acp_prompts(agent)
    assert not [b for b in first if b["type"] == "resource"]
    [digest] = [b["resource"]["text"] for b in second if b["type"] == "resource"]
    assert "It prints hi." in digest
    assert "[earlier user message]\none" not in digest, "the agent's own turn is in its history"
    assert not [b for b in third if b["type"] == "resource"], "nothing new since its last turn"


# -- slash commands: alone and verbatim; the system block waits for the next plain prompt --


def run_json(env: dict[str, str], cwd: Path, *args: str) -> list[dict[str, Any]]:
    out = agy_host(env, cwd, "run", "--format", "json", *args)
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def held_back_notices(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e.get("type") == "notice" and e.get("code") == "slash-command"]


@needs_acp
def test_acp_a_slash_command_goes_alone_and_the_next_plain_prompt_carries_the_system_block(
    env: dict[str, str], project: Path, fake_acp_agent: Callable[..., Any]
) -> None:
    """The fake runs ``/context`` as a command only when the prompt's first
    block starts with it, as claude-agent-acp does."""
    agent = fake_acp_agent("slash")
    acp = ["--engine", "acp", "--agent", agent.command_line, "--session", "s1"]
    events = run_json(env, project, *acp, "/context")
    [end] = [e for e in events if e["type"] == "turn_end"]
    assert end["response"] == "ran /context: /context", "the agent took the command for text"
    [notice] = held_back_notices(events)
    assert notice.get("level", "info") == "info" and "/context" in notice["message"], notice
    ask(env, project, *acp, "first question")
    events = run_json(env, project, *acp, "/compact keep the tests")
    assert not held_back_notices(events), "said once, when the conversation started"
    assert ask(env, project, *acp, "second question")["text"] == "second question"
    prompts = acp_prompts(agent)
    assert [len(p) for p in prompts] == [1, 1, 1, 1], prompts
    assert [acp_text(p) for p in prompts] == [
        "/context",
        expected_block() + SEP + "first question",
        "/compact keep the tests",
        "second question",
    ]
    assert [e["command"] for e in agent.events("slash-command")] == ["context", "compact"]


@needs_stream_json
def test_stream_json_sends_a_slash_command_as_its_own_line_and_the_system_block_after(
    env: dict[str, str], project: Path, tmp_path: Path
) -> None:
    from agy_host.testing.agy_cli.agent import make_fake_agy

    agy = make_fake_agy(tmp_path / "fake-agy", "echo")
    sj = ["--engine", "stream-json", "--session", "s2"]
    assert ask(env | agy.env, project, *sj, "/review")["text"].strip() == "/review"
    ask(env | agy.env, project, *sj, "then this")
    ask(env | agy.env, project, *sj, "/compact")
    assert agy_prompts(agy) == ["/review", expected_block() + SEP + "then this", "/compact"]


@needs_acp
def test_a_slash_command_carries_no_digest_and_the_next_prompt_gets_all_it_missed(
    env: dict[str, str], project: Path, fake_acp_agent: Callable[..., Any]
) -> None:
    agent = fake_acp_agent("slash")
    acp = ["--digest", "--engine", "acp", "--agent", agent.command_line, "--session", "s3"]
    ask(env, project, *acp, "one")
    _seed(env, "s3")  # another engine ran a turn afterwards
    ask(env, project, *acp, "/compact")
    ask(env, project, *acp, "two")
    _, command, after = acp_prompts(agent)
    assert command == [{"type": "text", "text": "/compact"}], command
    [digest] = [b["resource"]["text"] for b in after if b["type"] == "resource"]
    assert "It prints hi." in digest, "what the command did not carry comes with the next prompt"
    assert "/compact" not in digest, "the agent saw its own command"
    assert acp_text(after) == "two"
