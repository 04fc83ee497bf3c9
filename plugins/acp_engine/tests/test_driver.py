"""The ACP driver against the fake ACP agent: real subprocesses, real pipes.

Each test builds an engine the way the host does (an EngineContext with a
config), points it at ``python -m agy_host.testing.acp.agent`` and runs
turns. Timeouts are injected small through config and the turn request.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from agy_host.config import Config
from agy_host.contract.events import (
    Activity,
    NoticeActivity,
    OutcomeActivity,
    PermissionActivity,
    TextActivity,
    ToolDoneActivity,
    ToolStartActivity,
    UsageActivity,
)
from agy_host.contract.permissions import PermissionDecision, PermissionRequest, choose_allow
from agy_host.contract.prompt import ImageBlock, TextBlock
from agy_host.engine.base import EngineContext, McpServerSpec
from agy_host.engine.driver import TurnRequest
from agy_host.testing.contract import collect, outcome_of, text_of
from agy_host_acp.driver import AcpDriver
from agy_host_acp.engine import AcpEngine


class Fake:
    """A fake agent command plus its message log."""

    def __init__(self, tmp: Path, scenario: str, **settings: Any) -> None:
        self.log = tmp / f"fake-{scenario}.log"
        self.argv = [
            sys.executable,
            "-m",
            "agy_host.testing.acp.agent",
            "--scenario",
            scenario,
            "--log",
            str(self.log),
        ]
        for key, value in settings.items():
            self.argv += ["--set", f"{key}={json.dumps(value)}"]

    @property
    def command_line(self) -> str:
        return shlex.join(self.argv)

    def received(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def methods(self) -> list[str]:
        return [m["method"] for m in self.received() if "method" in m]

    def of(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.received() if m.get("method") == method]

    def as_agy(self, tmp: Path) -> dict[str, str]:
        """Pretend to be Antigravity's binary (so the agy profile applies)."""
        wrapper = tmp / "bin" / "agy_acp_server.par"
        wrapper.parent.mkdir(exist_ok=True)
        wrapper.write_text("#!/bin/sh\nexec " + shlex.join(self.argv) + "\n")
        wrapper.chmod(0o755)
        return {"AGY_ACP_BIN": str(wrapper)}


async def allow_policy(request: PermissionRequest) -> PermissionDecision:
    opt = choose_allow(request.options)
    if request.is_question or opt is None:
        return PermissionDecision(option_id=None, policy="test", reason="question")
    return PermissionDecision(option_id=opt.option_id, policy="test")


def make_engine(
    tmp: Path,
    agent: str | None,
    *,
    env: dict[str, str] | None = None,
    decide: Callable[[PermissionRequest], Any] = allow_policy,
    mcp: list[McpServerSpec] | None = None,
    **acp: Any,
) -> AcpEngine:
    cfg = Config()
    cfg.acp.cancel_grace_seconds = acp.pop("cancel_grace_seconds", 1.0)
    cfg.acp.initialize_timeout_seconds = acp.pop("initialize_timeout_seconds", 10.0)
    cfg.acp.session_timeout_seconds = acp.pop("session_timeout_seconds", 10.0)
    cfg.acp.kill_grace_seconds = acp.pop("kill_grace_seconds", 0.3)
    cfg.turn.permission_timeout_seconds = acp.pop("permission_timeout_seconds", 5.0)
    assert not acp, acp
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("AGY_")}
    full_env.update(env or {})
    state = tmp / "state"
    state.mkdir(exist_ok=True)
    ctx = EngineContext(
        config=cfg,
        state_dir=state,
        decide_permission=decide,
        mcp_servers=lambda: list(mcp or []),
        agent=agent,
        env=full_env,
    )
    return AcpEngine(ctx)


@asynccontextmanager
async def driver_for(engine: AcpEngine) -> AsyncIterator[AcpDriver]:
    async with engine.open_driver() as drv:
        yield drv


def req(text: str = "hi", **kw: Any) -> TurnRequest:
    base: dict[str, Any] = {
        "session": "s1",
        "prompt": [TextBlock(text=text)],
        "cwd": os.getcwd(),
        "timeout_s": 20.0,
        "inactivity_s": 10.0,
    }
    base.update(kw)
    return TurnRequest(**base)


async def test_happy_path_with_agy_profile_sets_model_and_mode(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "happy")
    engine = make_engine(tmp_path, None, env=fake.as_agy(tmp_path))
    assert engine.spec.kind == "agy"
    async with driver_for(engine) as drv:
        acts = await collect(await drv.run(req(model="gemini-3.8-flash", effort="low", skip_permissions=True)))
    out = outcome_of(acts)
    assert (out.status, out.stop_reason, out.response) == ("ok", "stop", "HELLO")
    assert text_of(acts) == "HELLO"
    assert out.conversation_id == "fake-session-0001"
    sets = [(m["params"]["configId"], m["params"]["value"]) for m in fake.of("session/set_config_option")]
    assert sets == [("model", "gemini-3.8-flash-low"), ("mode", "yolo")]
    prompt = fake.of("session/prompt")[0]["params"]["prompt"]
    assert prompt == [{"type": "text", "text": "hi"}]
    assert fake.of("initialize")[0]["params"]["clientCapabilities"] == {
        "fs": {"readTextFile": False, "writeTextFile": False},
        "terminal": False,
        "elicitation": {"form": {}, "url": {}},
        "session": {"notices": {}, "compaction": {}},
    }
    assert "session/close" in fake.methods()


async def test_mcp_servers_on_new_and_load_and_no_new_when_load_works(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "happy")
    bridge = McpServerSpec(name="agy-host-bridge", url="http://127.0.0.1:9/mcp", headers={"x-bridge-token": "t"})
    engine = make_engine(tmp_path, fake.command_line, mcp=[bridge])
    async with driver_for(engine) as drv:
        first = outcome_of(await collect(await drv.run(req())))
    async with driver_for(engine) as drv:  # a new process: the conversation must be loaded
        second = outcome_of(await collect(await drv.run(req(conversation_id=first.conversation_id))))
    assert second.conversation_id == first.conversation_id
    assert fake.methods().count("session/new") == 1
    load = fake.of("session/load")
    assert len(load) == 1
    expected = [
        {
            "type": "http",
            "name": "agy-host-bridge",
            "url": "http://127.0.0.1:9/mcp",
            "headers": [{"name": "x-bridge-token", "value": "t"}],
        }
    ]
    assert fake.of("session/new")[0]["params"]["mcpServers"] == expected
    assert load[0]["params"]["mcpServers"] == expected


async def test_load_replay_never_leaks_into_live_text(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "load-replay")
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        acts = await collect(await drv.run(req(conversation_id="fake-session-0001")))
    assert text_of(acts) == "LIVE-1LIVE-2"
    assert outcome_of(acts).response == "LIVE-1LIVE-2"


async def test_load_failure_falls_back_to_new_session_visibly(tmp_path: Path) -> None:
    """Without --resume: a new conversation, said in agy-host's words (the
    agent's own reason is written for its CLI and stays in the log)."""
    fake = Fake(tmp_path, "load-fails")
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        acts = await collect(await drv.run(req(conversation_id="gone-123")))
        log = [e.event for e in drv.lifecycle.entries()]
    [notice] = [a for a in acts if isinstance(a, NoticeActivity) and a.code == "conversation-replaced"]
    assert "could not continue conversation gone-123 (it refused session/load)" in notice.message
    assert "pass --resume to fail instead" in notice.message and "unknown session" not in notice.message
    assert "session-load-failed" in log
    assert outcome_of(acts).status == "ok"
    assert fake.methods().count("session/new") == 1


async def test_resume_fails_the_turn_with_the_agents_reason_when_the_load_fails(tmp_path: Path) -> None:
    """--resume: no new conversation; error kind ``no_session`` (exit 4)."""
    fake = Fake(tmp_path, "load-fails")
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        acts = await collect(await drv.run(req(conversation_id="gone-123", resume=True)))
    out = outcome_of(acts)
    assert (out.status, out.error_kind) == ("error", "no_session"), out
    assert "could not continue conversation gone-123" in out.error and "unknown session" in out.error
    assert "session/new" not in fake.methods() and "session/prompt" not in fake.methods()


async def test_resume_fails_on_an_agent_that_cannot_load(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "happy", load_session=False)
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        failed = outcome_of(await collect(await drv.run(req(conversation_id="old-1", resume=True))))
        fresh = await collect(await drv.run(req(conversation_id="old-1")))
    assert failed.error_kind == "no_session" and "neither session/load nor session/resume" in failed.error
    assert outcome_of(fresh).status == "ok"
    assert any(a.code == "conversation-replaced" for a in fresh if isinstance(a, NoticeActivity))


@pytest.mark.parametrize("delay_ms", [0, 120])
async def test_a_replay_that_trails_the_load_answer_never_reaches_the_turn(tmp_path: Path, delay_ms: int) -> None:
    """The Gemini CLI answers session/load first and replays afterwards."""
    fake = Fake(tmp_path, "load-replay", load="replay-after", replay_delay_ms=delay_ms)
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        acts = await collect(await drv.run(req(conversation_id="fake-session-0001")))
        [load] = [e for e in drv.lifecycle.entries() if e.event == "session-load"]
    assert text_of(acts) == "LIVE-1LIVE-2"
    assert outcome_of(acts).response == "LIVE-1LIVE-2"
    # in the load's own read (no delay) or after its answer: dropped either way
    assert load.data["replayed"] + load.data["replayed_after_answer"] == 2, load
    if delay_ms:
        assert load.data["replayed_after_answer"] == 2, load


def _said(role: str, text: str) -> dict[str, Any]:
    return {"update": {"sessionUpdate": f"{role}_message_chunk", "content": {"type": "text", "text": text}}}


async def test_a_replay_inside_the_turn_is_history_not_the_answer(tmp_path: Path) -> None:
    """Later still, inside the prompt: a user chunk starts the history, the
    burst after it is history too, the live answer comes after a pause."""
    steps = [_said("user", "OLD USER"), _said("agent", "OLD ANSWER"), {"sleep": 0.6}, {"chunk": "LIVE"}]
    fake = Fake(tmp_path, "happy", prompt=steps)
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        acts = await collect(await drv.run(req()))
    assert text_of(acts) == "LIVE" and outcome_of(acts).response == "LIVE"
    assert [a.code for a in acts if isinstance(a, NoticeActivity)] == ["replay"]


async def test_an_agent_echoing_the_prompt_keeps_its_live_answer(tmp_path: Path) -> None:
    steps = [_said("user", "hi there"), {"chunk": "LIVE"}]
    fake = Fake(tmp_path, "happy", prompt=steps)
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        acts = await collect(await drv.run(req("hi there")))
    assert text_of(acts) == "LIVE"
    assert not [a for a in acts if isinstance(a, NoticeActivity) and a.code == "replay"]


async def test_permission_is_answered_by_the_policy_with_the_exact_option_id(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "permission")
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        acts = await collect(await drv.run(req()))
    perm = [a for a in acts if isinstance(a, PermissionActivity)]
    assert len(perm) == 1 and perm[0].selected == "allow"
    assert text_of(acts) == "PERMIS"
    answers = [m for m in fake.received() if m.get("id") == 0 and "result" in m]
    assert answers[0]["result"] == {"outcome": {"outcome": "selected", "optionId": "allow"}}


async def test_question_is_never_auto_answered(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "question")
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        acts = await collect(await drv.run(req()))
    perm = [a for a in acts if isinstance(a, PermissionActivity)]
    assert perm[0].is_question and perm[0].selected is None
    answers = [m for m in fake.received() if m.get("id") == 0 and "result" in m]
    assert answers[0]["result"] == {"outcome": {"outcome": "cancelled"}}


async def test_a_hanging_policy_is_bounded_and_the_request_cancelled(tmp_path: Path) -> None:
    async def never(_request: PermissionRequest) -> PermissionDecision:
        await trio.sleep_forever()
        raise AssertionError

    fake = Fake(tmp_path, "permission")
    engine = make_engine(tmp_path, fake.command_line, decide=never, permission_timeout_seconds=0.3)
    async with driver_for(engine) as drv:
        acts = await collect(await drv.run(req()))
    perm = [a for a in acts if isinstance(a, PermissionActivity)]
    assert perm[0].selected is None and "no answer within 0.3s" in perm[0].reason
    assert text_of(acts) == "NO ANSWER"


async def abort_after_first_text(drv: AcpDriver, request: TurnRequest) -> list[Activity]:
    handle = await drv.run(request)

    def on(act: Activity) -> None:
        if isinstance(act, TextActivity):
            handle.abort("test")

    return await collect(handle, on=on)


async def test_gate_d_graceful_cancel_keeps_the_agent(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "cancel-graceful")
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        acts = await abort_after_first_text(drv, req())
        out = outcome_of(acts)
        assert out.aborted and out.stop_reason == "aborted"
        assert drv.snapshot().extra["cancel"] == "graceful"
        assert drv.stats["kills"] == 0
        cancel = fake.of("session/cancel")
        assert cancel and "id" not in cancel[0]  # a notification, as the spec defines it
    mem = json.loads((tmp_path / "state" / "acp-agents.json").read_text())
    assert [v["cancel"] for v in mem.values()] == ["graceful"]


async def test_gate_d_kill_and_reload_when_cancel_is_ignored(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "cancel-unsupported")
    engine = make_engine(tmp_path, fake.command_line, cancel_grace_seconds=0.5)
    async with driver_for(engine) as drv:
        with trio.fail_after(15):
            out = outcome_of(await abort_after_first_text(drv, req()))
        assert out.aborted
        snap = drv.snapshot()
        assert snap.extra["cancel"] == "kill+reload"
        assert drv.stats["kills"] == 1
        # the next turn works and reloads the conversation on a fresh agent
        fake2 = Fake(tmp_path, "happy")
        engine.spec.command = fake2.argv
        nxt = outcome_of(await collect(await drv.run(req(conversation_id=out.conversation_id))))
    assert nxt.status == "ok" and nxt.conversation_id == out.conversation_id
    assert fake2.methods()[:2] == ["initialize", "session/load"]
    # remembered: a second abort on the same agent kills without waiting
    assert AcpDriver(engine, None).memory.cancel_mode(engine.spec.memory_key, "fake-1") in {"kill+reload", "unprobed"}


async def test_overall_deadline_fails_the_turn_visibly(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "cancel-unsupported")  # ticks forever: never idle
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        out = outcome_of(await collect(await drv.run(req(timeout_s=0.8, inactivity_s=5))))
        assert drv.state == "dead"
    assert (out.status, out.error_kind) == ("error", "timeout")
    assert "deadline" in out.error


async def test_inactivity_fails_the_turn(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "slow")
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        out = outcome_of(await collect(await drv.run(req(timeout_s=20, inactivity_s=0.5))))
    assert (out.status, out.error_kind) == ("error", "inactivity")
    assert "no output" in out.error


async def test_without_a_park_the_same_turn_times_out(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "park", sleep_scale=0.4)  # P1, a 1.0 s pause, P2
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        out = outcome_of(await collect(await drv.run(req(timeout_s=0.7, inactivity_s=5))))
    assert out.error_kind == "timeout"


async def test_parked_time_does_not_count_against_the_deadline(tmp_path: Path) -> None:
    from agy_host.contract.events import BridgeCallActivity

    fake = Fake(tmp_path, "park", sleep_scale=0.4)
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        handle = await drv.run(req(timeout_s=0.7, inactivity_s=5))
        seen: list[Activity] = []
        with trio.fail_after(10):
            async for act in handle:
                seen.append(act)
                if isinstance(act, TextActivity) and act.delta == "P1":
                    handle.push_external(BridgeCallActivity(call_id="c1", name="host_tool"))
                if isinstance(act, BridgeCallActivity):
                    assert drv.reentry() is handle
                    await trio.sleep(0.9)  # the host tool runs while the agent waits
                    drv.kick_idle()
                    assert drv.reentry() is None
        out = outcome_of(seen)
    assert out.status == "ok" and out.response == "P1P2", out


async def test_park_keeps_a_turn_alive_past_its_deadline(tmp_path: Path) -> None:
    from agy_host.contract.events import BridgeCallActivity

    fake = Fake(tmp_path, "park", sleep_scale=0.4)
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        handle = await drv.run(req(timeout_s=0.7, inactivity_s=5))
        seen: list[Activity] = []
        with trio.fail_after(10):
            async for act in handle:
                seen.append(act)
                if isinstance(act, TextActivity) and act.delta == "P1":
                    handle.push_external(BridgeCallActivity(call_id="c1", name="host_tool"))
                    # stays parked while the agent sleeps and finishes
        out = outcome_of(seen)
    assert out.status == "ok" and out.response == "P1P2"


async def test_auth_required_surfaces_the_agents_own_words(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "auth-required")
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        out = outcome_of(await collect(await drv.run(req())))
    assert out.error_kind == "auth"
    assert "agy-host acp-auth" in out.error
    assert "needs a sign-in (session/new)" in out.error
    assert len(out.error.split(": ", 1)[1]) > 20  # the agent's remediation text, verbatim


async def test_crash_mid_turn_reports_stderr_and_next_turn_recovers(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "crash-mid-turn")
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        with trio.fail_after(5):
            first = outcome_of(await collect(await drv.run(req())))
        assert first.error_kind == "exited"
        assert "fake: crashing mid-turn" in first.error
        assert first.response == "PARTIAL"
        fake2 = Fake(tmp_path, "happy")
        engine.spec.command = fake2.argv
        second = outcome_of(await collect(await drv.run(req(conversation_id=first.conversation_id))))
    assert second.status == "ok"
    assert "session/load" in fake2.methods()


async def test_initialize_deadline_names_the_command(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "hang-initialize")
    engine = make_engine(tmp_path, fake.command_line, initialize_timeout_seconds=0.5)
    async with driver_for(engine) as drv:
        out = outcome_of(await collect(await drv.run(req())))
    assert out.error_kind == "spawn"
    assert "did not answer initialize within 0.5s" in out.error
    assert "agy_host.testing.acp.agent" in out.error


async def test_exit_before_initialize_and_missing_command(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "exit-before-initialize")
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        out = outcome_of(await collect(await drv.run(req())))
    assert out.error_kind == "spawn" and "exited before initialize" in out.error
    engine = make_engine(tmp_path, "/nonexistent/agent-binary --acp")
    async with driver_for(engine) as drv:
        out = outcome_of(await collect(await drv.run(req())))
    assert out.error_kind == "spawn" and "agent command not found" in out.error


async def test_turns_on_one_session_are_serialized(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "happy")
    engine = make_engine(tmp_path, fake.command_line)
    order: list[str] = []
    async with driver_for(engine) as drv:

        async def one(tag: str) -> None:
            handle = await drv.run(req(text=tag))
            async for act in handle:
                if isinstance(act, (TextActivity, OutcomeActivity)):
                    order.append(f"{tag}:{type(act).__name__}")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, "a")
            await trio.sleep(0.01)
            nursery.start_soon(one, "b")
    assert order.index("a:OutcomeActivity") < order.index("b:TextActivity"), order


async def test_tool_diff_and_supersede_quirk_end_to_end(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "tool-diff")
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        acts = await collect(await drv.run(req()))
    start = next(a for a in acts if isinstance(a, ToolStartActivity))
    done = next(a for a in acts if isinstance(a, ToolDoneActivity))
    assert start.name == "create_file" and start.diff is not None
    assert done.name == "create_file" and done.diff is not None and done.diff.new_text == "hello\n"
    assert text_of(acts) == "DONE"


async def test_usage_from_usage_update_and_prompt_response(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "usage")
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        acts = await collect(await drv.run(req()))
    usages = [a.turn for a in acts if isinstance(a, UsageActivity)]
    assert usages[0].context_used == 1234 and usages[0].cost_amount == pytest.approx(0.0123)
    assert usages[-1].input_tokens == 1000 and usages[-1].total_tokens == 1834


async def test_images_are_refused_when_the_agent_does_not_accept_them(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "happy", prompt_capabilities={"image": False, "embeddedContext": True})
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        out = outcome_of(
            await collect(
                await drv.run(req(prompt=[ImageBlock(data="AAAA", mime_type="image/png"), TextBlock(text="x")]))
            )
        )
    assert out.error_kind == "usage" and "does not accept images" in out.error
    assert "session/prompt" not in fake.methods()


async def test_sign_in_url_line_on_stdout_becomes_a_notice(tmp_path: Path) -> None:
    url = "https://accounts.google.com/o/oauth2/v2/auth?x=1"
    fake = Fake(
        tmp_path,
        "happy",
        prompt=[
            {"raw_stdout": f"Open the following link to authenticate the ACP server: {url}"},
            {"chunk": "ok"},
            {"stop": "end_turn"},
        ],
    )
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        acts = await collect(await drv.run(req()))
    notices = [a for a in acts if isinstance(a, NoticeActivity)]
    assert any(url in n.message and n.code == "sign-in-url" for n in notices)
    assert outcome_of(acts).status == "ok"


async def test_abort_before_the_prompt_starts_settles_aborted(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "happy")
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        handle = await drv.run(req())
        handle.abort("early")
        out = outcome_of(await collect(handle))
    assert out.aborted
    assert "session/cancel" not in fake.methods()


async def test_json_nested_too_deep_is_a_skipped_line_not_a_dead_connection(tmp_path: Path) -> None:
    """A 6 KB line of brackets makes the JSON decoder recurse past the limit:
    the line is garbage, skipped with a warning; the turn and the answer go on."""
    nested = "[" * 3000 + "]" * 3000
    deep = '{"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "x", "update": ' + nested + "}}"
    fake = Fake(tmp_path, "happy", prompt=[{"raw_stdout": deep}, {"chunk": "after"}, {"stop": "end_turn"}])
    engine = make_engine(tmp_path, fake.command_line)
    async with driver_for(engine) as drv:
        acts = await collect(await drv.run(req()))
    assert outcome_of(acts).status == "ok" and text_of(acts) == "after"
    notices = [a for a in acts if isinstance(a, NoticeActivity)]
    assert any(n.code == "parse-error" and "not ACP" in n.message for n in notices), notices
