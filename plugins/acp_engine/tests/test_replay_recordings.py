"""Every ACP recording in the vendored fixtures, replayed through the engine.

The replay agent (``python -m agy_host.testing.replay.agent FILE``) answers
our real requests with the frames the real agent sent. One test per file; the
expected activities come from reading the recording, never from our output.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
import trio

from agy_host.contract.events import (
    Activity,
    CommandsActivity,
    NoticeActivity,
    PermissionActivity,
    ThoughtActivity,
    ToolDoneActivity,
    ToolStartActivity,
    UsageActivity,
)
from agy_host.contract.permissions import PermissionDecision, PermissionRequest
from agy_host.engine.driver import TurnRequest
from agy_host.engine.lifecycle import Lifecycle
from agy_host_acp.connection import AcpConnection

from .test_driver import collect, make_engine, outcome_of, req, text_of

RECORDED = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "recorded"

pytestmark = pytest.mark.skipif(not RECORDED.exists(), reason="vendored recordings (tests/fixtures/recorded) missing")


def replay_command(name: str, *extra: str) -> str:
    return shlex.join([sys.executable, "-m", "agy_host.testing.replay.agent", str(RECORDED / name), *extra])


async def first_option(request: PermissionRequest) -> PermissionDecision:
    """A human who picks the first answer (the recording picked "Red")."""
    return PermissionDecision(option_id=request.options[0].option_id, policy="human")


async def run_one(tmp_path: Path, name: str, request: TurnRequest | None = None, **kw: object) -> list[Activity]:
    engine = make_engine(tmp_path, replay_command(name), **kw)  # type: ignore[arg-type]
    async with engine.open_driver() as drv:
        return await collect(await drv.run(request or req("x")))


async def test_acp_01_handshake_auth_required(tmp_path: Path) -> None:
    acts = await run_one(tmp_path, "anyagent-rs-antigravity/acp-01-handshake.jsonl")
    out = outcome_of(acts)
    assert out.error_kind == "auth"
    assert "No authentication method selected" in out.error  # the server's own words, verbatim
    assert "agy-host acp-auth" in out.error


async def test_acp_02_pong(tmp_path: Path) -> None:
    acts = await run_one(tmp_path, "anyagent-rs-antigravity/acp-02-pong.jsonl")
    out = outcome_of(acts)
    assert (out.status, out.agent_stop_reason, out.response) == ("ok", "end_turn", "pong")
    assert out.conversation_id == "70e2d0b1-ca33-4249-b764-645d6b19ab20"
    [commands] = [a.commands for a in acts if isinstance(a, CommandsActivity)]
    assert [(c.name, c.description) for c in commands] == [
        (
            "plan",
            "Plan carefully before executing a task (generates an implementation plan artifact and awaits user "
            "approval).",
        ),
        ("logout", "Log out and clear stored credentials."),
    ]
    assert text_of(acts) == "pong"
    assert not any(isinstance(a, UsageActivity) for a in acts)  # RC01 reports no usage


async def test_acp_03_authenticate(tmp_path: Path) -> None:
    engine = make_engine(tmp_path, replay_command("anyagent-rs-antigravity/acp-03-authenticate.jsonl"))
    async with trio.open_nursery() as nursery:
        conn = AcpConnection(
            engine.spec,
            cwd=str(tmp_path),
            env=engine.ctx.env,
            generation=1,
            lifecycle=Lifecycle(),
            on_exit=lambda _c: None,
            on_notice=lambda *_a: None,
        )
        info = await conn.start(nursery)
        assert [m.id for m in info.auth_methods] == [
            "oauth-personal",
            "oauth-business",
            "gemini-api-key",
            "agent-platform",
        ]
        assert info.agent_info is not None and info.agent_info.version == "agy_acp_server_20260818_01_RC01"
        await conn.authenticate("oauth-personal", timeout=5)
        await conn.aclose(close_sessions=False)
        nursery.cancel_scope.cancel()


async def test_acp_04_question_as_permission_request(tmp_path: Path) -> None:
    acts = await run_one(tmp_path, "anyagent-rs-antigravity/acp-04-question.jsonl", decide=first_option)
    perm = [a for a in acts if isinstance(a, PermissionActivity)]
    assert len(perm) == 1
    assert perm[0].is_question and perm[0].title == "Do you prefer red or blue?"
    assert [o.name for o in perm[0].options] == ["Red", "Blue"] and perm[0].selected == "1"
    starts = [a for a in acts if isinstance(a, ToolStartActivity)]
    assert [s.call_id for s in starts] == ["interaction_d316f47f"]
    done = [a for a in acts if isinstance(a, ToolDoneActivity)]
    assert done[0].output == "Response received"
    assert outcome_of(acts).response == "Red"


async def test_htui_agy_1_1_1_three_turn_updates(tmp_path: Path) -> None:
    acts = await run_one(
        tmp_path,
        "htui/agy-acp-1.1.1-turn.jsonl",
        request=None,
    )
    starts = [a for a in acts if isinstance(a, ToolStartActivity)]
    # the pending create_file call is sent twice verbatim: one card, not two;
    # its in_progress update retitles the card ("Run ...?" -> "Running ...")
    assert [(s.call_id, s.name, s.kind, s.title) for s in starts] == [
        ("call_688829", "client_view_file", "read", "Running client_view_file"),
        ("6d81335b45094e3ca3a5530d803c03ae", "client_create_file", "edit", "Run client_create_file?"),
        ("6d81335b45094e3ca3a5530d803c03ae", "client_create_file", "edit", "Running client_create_file"),
    ]
    assert starts[1].diff is not None and starts[1].diff.path == "/scratch/htui-agy-probe.txt"
    done = [a for a in acts if isinstance(a, ToolDoneActivity)]
    assert [d.call_id for d in done] == ["call_688829", "6d81335b45094e3ca3a5530d803c03ae"]
    assert done[1].diff is not None and done[1].diff.new_text == "ok\n"
    assert text_of(acts) == "ok# htui agy probe"
    assert not any(isinstance(a, UsageActivity) for a in acts)


async def test_claude_agent_acp_usage_and_cost(tmp_path: Path) -> None:
    acts = await run_one(tmp_path, "htui/claude-agent-acp-0.48.0-turn.jsonl")
    usage = [a.turn for a in acts if isinstance(a, UsageActivity)]
    assert usage[0].context_used == 22913 and usage[0].context_size == 1000000
    assert any(u.cost_amount is not None and u.cost_currency == "USD" for u in usage)
    last = usage[-1]
    assert (last.input_tokens, last.output_tokens, last.cache_read_tokens, last.total_tokens) == (2, 4, 10049, 22913)
    assert text_of(acts) == "ok"
    # Claude's skills as commands, "input": null: names with their descriptions, no input hint
    [commands] = [a.commands for a in acts if isinstance(a, CommandsActivity)]
    assert [c.name for c in commands] == ["find-skills", "deep-research"] and commands[0].input_hint is None
    assert commands[0].name == "find-skills" and commands[0].input_hint is None
    assert commands[0].description.startswith("Helps users discover and install agent skills")


async def test_gemini_cli_pong_with_thought_and_quota_usage(tmp_path: Path) -> None:
    acts = await run_one(tmp_path, "mprasanjith-anyagent/gemini-cli-0.46.0-acp-pong.jsonl")
    assert any(isinstance(a, ThoughtActivity) and "Instruction" in a.delta for a in acts)
    assert text_of(acts) == "pong"
    usage = [a.turn for a in acts if isinstance(a, UsageActivity)]
    assert usage and usage[-1].input_tokens == 10340 and usage[-1].output_tokens == 1
    [commands] = [a.commands for a in acts if isinstance(a, CommandsActivity)]
    memory = next(c for c in commands if c.name == "memory")
    assert memory.description == "Manage memory."
    assert not [a for a in acts if isinstance(a, NoticeActivity) and a.level == "error"]


def test_every_acp_recording_has_a_test() -> None:
    acp = sorted(
        str(p.relative_to(RECORDED))
        for p in RECORDED.rglob("*.jsonl")
        if p.name.startswith("acp-") or "acp" in p.name.split("-")[:4] or p.parent.name == "htui"
    )
    covered = {
        "anyagent-rs-antigravity/acp-01-handshake.jsonl",
        "anyagent-rs-antigravity/acp-02-pong.jsonl",
        "anyagent-rs-antigravity/acp-03-authenticate.jsonl",
        "anyagent-rs-antigravity/acp-04-question.jsonl",
        "htui/agy-acp-1.1.1-turn.jsonl",
        "htui/claude-agent-acp-0.48.0-turn.jsonl",
        "mprasanjith-anyagent/gemini-cli-0.46.0-acp-pong.jsonl",
    }
    assert set(acp) <= covered, set(acp) - covered
