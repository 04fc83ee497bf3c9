"""Every agent message the test suites feed agy-host's ACP engine is valid ACP.

Two sources, each checked against the vendored ACP v1 schema with every
response paired to the request it answers (:class:`conformance.schema.Exchange`):

* the vendored recordings of real agents (``tests/fixtures/recorded``), the
  same files ``plugins/acp_engine/tests/test_replay_recordings.py`` replays:
  every frame the agent side sent;
* the fake ACP agent (``python -m agy_host.testing.acp.agent``), in every
  built-in scenario, driven by the real engine: the fake logs only what it
  receives, so it runs behind :mod:`conformance.acp_tee`, which logs both
  directions. Both directions are validated (the engine's side is already
  checked by ``test_acp_engine_messages.py``; here its answers are also
  paired with the agent's requests by id).

A fake that sends invalid ACP would teach the engine to accept what no real
agent sends; a recording that does not validate is either schema drift, an
unstable method, or an agent bug, and each such case must be listed in
:data:`RECORDING_DEVIATIONS` with its exact path and reason (none is needed
for the seven recordings against the schema of ``@agentclientprotocol/sdk``
2.4.0: every one of their 39 agent frames validates against the stable schema).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio
from conformance.schema import Checked, Exchange, Sender
from conformance.wire import Deviation, read_tee_log, tee_argv, validate_frames, validate_tee_log

pytest.importorskip("agy_host_acp", reason="the ACP engine plugin is not installed")

from agy_host.config import Config
from agy_host.contract.events import TextActivity
from agy_host.contract.permissions import PermissionDecision, PermissionRequest
from agy_host.contract.prompt import TextBlock
from agy_host.engine.base import EngineContext
from agy_host.engine.driver import TurnRequest
from agy_host.testing.acp.scenarios import BUILTIN
from agy_host.testing.replay.recordings import AgentFrame, ClientFrame, is_request, read_recording
from agy_host_acp.engine import AcpEngine

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"


# ---------------------------------------------------------------------------
# Recordings of real agents
# ---------------------------------------------------------------------------


def acp_recordings() -> list[str]:
    """The ACP recordings, chosen by the same rule as the replay test (which
    also checks that each has a replay test of its own)."""
    return sorted(
        str(p.relative_to(RECORDED))
        for p in RECORDED.rglob("*.jsonl")
        if p.name.startswith("acp-") or "acp" in p.name.split("-")[:4] or p.parent.name == "htui"
    )


#: Known schema failures of recorded agent frames, by recording. Empty: all
#: validate. An entry needs the exact sender, method and JSON path and says why
#: it is tolerated (schema version drift, unstable method, agent bug); an entry
#: that no longer matches anything fails the test.
RECORDING_DEVIATIONS: dict[str, list[Deviation]] = {}

#: What each recording's agent side must contain, so a parser regression that
#: drops frames cannot pass as "nothing invalid": (kind, method) -> count.
RECORDING_CONTENT: dict[str, dict[tuple[str, str], int]] = {
    "anyagent-rs-antigravity/acp-01-handshake.jsonl": {("response", "initialize"): 1, ("response", "session/new"): 1},
    "anyagent-rs-antigravity/acp-02-pong.jsonl": {
        ("response", "initialize"): 1,
        ("response", "session/new"): 1,
        ("response", "session/prompt"): 1,
        ("notification", "session/update"): 2,
    },
    "anyagent-rs-antigravity/acp-03-authenticate.jsonl": {
        ("response", "initialize"): 1,
        ("response", "authenticate"): 1,
    },
    "anyagent-rs-antigravity/acp-04-question.jsonl": {
        ("request", "session/request_permission"): 1,
        ("response", "session/prompt"): 1,
    },
    "htui/agy-acp-1.1.1-turn.jsonl": {("notification", "session/update"): 9},
    "htui/claude-agent-acp-0.48.0-turn.jsonl": {("response", "session/prompt"): 1},
    "mprasanjith-anyagent/gemini-cli-0.46.0-acp-pong.jsonl": {
        ("response", "initialize"): 1,
        ("response", "session/new"): 1,
        ("response", "session/prompt"): 1,
    },
}


def test_every_acp_recording_is_checked() -> None:
    """A new recording must say what it contains here (and so be validated)."""
    assert acp_recordings() == sorted(RECORDING_CONTENT)
    assert set(RECORDING_DEVIATIONS) <= set(RECORDING_CONTENT)


@pytest.mark.parametrize("name", acp_recordings())
def test_every_recorded_agent_message_is_valid_acp(name: str) -> None:
    """Each frame the real agent sent, with responses checked as answers to
    the recorded request (by id from the client's frames, or by the method
    the htui recorder kept when it dropped the id)."""
    asked: dict[Any, str] = {}
    items: list[tuple[Sender, dict[str, Any], str | None, str]] = []
    for event in read_recording(RECORDED / name):
        if isinstance(event, ClientFrame) and is_request(event.frame):
            asked[event.frame["id"]] = event.frame["method"]
        elif isinstance(event, AgentFrame):
            frame = event.frame
            answers = event.answers
            if answers is None and "method" not in frame:
                answers = asked.pop(frame.get("id"), None)
                assert answers is not None, f"{name}:{event.line}: a response to no recorded request: {frame}"
            items.append(("agent", frame, answers, f"{name}:{event.line}"))
    exchange, used = validate_frames(items, allow=RECORDING_DEVIATIONS.get(name, []))
    stale = [d for d in RECORDING_DEVIATIONS.get(name, []) if d not in used]
    assert not stale, f"deviations that no longer occur (remove them): {stale}"
    got: Counter[tuple[str, str | None]] = Counter((c.kind, c.method) for c in exchange.checked)
    for key, count in RECORDING_CONTENT[name].items():
        assert got[key] >= count, f"{name}: expected at least {count} x {key}, validated {got[key]}: {dict(got)}"


# ---------------------------------------------------------------------------
# The fake ACP agent, every scenario, behind the tap
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """How to drive one scenario, and what its agent side must have sent."""

    agent_sends: frozenset[tuple[str, str]]
    turns: int = 2
    #: Abort each turn once it is under way (the scenario would not end alone):
    #: ``"text"`` at its first text, ``"prompt"`` once the prompt is on the wire
    #: (an event, not a delay: an abort during a slow start-up would send no prompt).
    abort_on: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    acp: dict[str, float] = field(default_factory=dict)


_HANDSHAKE = {("response", "initialize"), ("response", "session/new")}
_TURN = _HANDSHAKE | {("response", "session/prompt"), ("notification", "session/update")}


def _plan(sends: set[tuple[str, str]], **kw: Any) -> Plan:
    return Plan(agent_sends=frozenset(sends), **kw)


PLANS: dict[str, Plan] = {
    "happy": _plan(_TURN | {("response", "session/load")}),
    "echo": _plan(_TURN),
    "permission": _plan(_TURN | {("request", "session/request_permission")}),
    "question": _plan(_TURN | {("request", "session/request_permission")}),
    "cancel-unsupported": _plan(_HANDSHAKE | {("notification", "session/update")}, turns=1, abort_on="text"),
    "cancel-graceful": _plan(_TURN, abort_on="text"),
    "slow": _plan(_HANDSHAKE | {("response", "session/prompt")}, turns=1, abort_on="prompt"),
    "load-replay": _plan(_TURN | {("response", "session/load")}),
    # session/new answers an error until authenticate; the engine does not log in by itself.
    "auth-required": _plan({("response", "initialize"), ("response", "session/new")}, turns=1),
    "load-fails": _plan(_TURN | {("response", "session/load")}),
    "park": _plan(_TURN, settings={"sleep_scale": 0.05}),
    "tool-diff": _plan(_TURN),
    "claude-edit": _plan(_TURN | {("request", "session/request_permission")}),
    "gemini-tools": _plan(_TURN | {("request", "session/request_permission")}),
    "crash-mid-turn": _plan(_HANDSHAKE | {("notification", "session/update")}, turns=1),
    "hang-initialize": _plan(set(), turns=1, acp={"initialize_timeout_seconds": 1.0}),
    "exit-before-initialize": _plan(set(), turns=1),
    "usage": _plan(_TURN),
    # Its commands come with the session/new and session/load answers; its plan three times a turn.
    "plan": _plan(_TURN | {("response", "session/load")}),
    "flood": _plan(_TURN, settings={"flood_count": 200}),
    "prompt-error": _plan(_TURN),
    # plain prompts only here: its commands run from a prompt's first block (core/tests/test_prompt_delivery.py)
    "slash": _plan(_TURN),
}


def test_every_fake_scenario_is_checked() -> None:
    """A new built-in scenario must get a plan here (and so be validated)."""
    assert sorted(PLANS) == sorted(BUILTIN)


async def _decide(request: PermissionRequest) -> PermissionDecision:
    return PermissionDecision(option_id=request.options[0].option_id, policy="test")


def _prompt_sent(log: Path) -> bool:
    """Whether the tap has logged the client's ``session/prompt`` (the last
    line may be half written while we look)."""
    try:
        lines = log.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return False
    for text in lines:
        try:
            rec = json.loads(text)
        except ValueError:
            continue
        frame = rec.get("frame")
        if rec.get("dir") == "to_agent" and isinstance(frame, dict) and frame.get("method") == "session/prompt":
            return True
    return False


async def _drive(tmp_path: Path, scenario: str, plan: Plan) -> list[Path]:
    """Run ``plan.turns`` turns, each with a fresh driver (a new agent process),
    so the second turn resumes the conversation with ``session/load``. One tap
    log per process: each is a conversation of its own (ids restart at 0)."""
    fake = [sys.executable, "-m", "agy_host.testing.acp.agent", "--scenario", scenario]
    for key, value in plan.settings.items():
        fake += ["--set", f"{key}={json.dumps(value)}"]
    cfg = Config()
    cfg.acp.cancel_grace_seconds = 1.0
    cfg.acp.initialize_timeout_seconds = plan.acp.get("initialize_timeout_seconds", 10.0)
    cfg.acp.session_timeout_seconds = 10.0
    cfg.acp.kill_grace_seconds = 0.3
    logs: list[Path] = []
    conv = None
    for turn in range(plan.turns):
        log = tmp_path / f"{scenario}-{turn}.wire.jsonl"
        logs.append(log)
        ctx = EngineContext(
            config=cfg,
            state_dir=tmp_path,
            decide_permission=_decide,
            mcp_servers=list,
            agent=shlex.join(tee_argv(log, fake)),
            env={k: v for k, v in os.environ.items() if not k.startswith("AGY_")},
        )
        async with AcpEngine(ctx).open_driver() as drv:
            handle = await drv.run(
                TurnRequest(session="c", prompt=[TextBlock(text="hello")], cwd=str(tmp_path), conversation_id=conv)
            )
            with trio.fail_after(20):
                async with trio.open_nursery() as nursery:
                    if plan.abort_on == "prompt":

                        async def abort_once_prompted(log: Path = log, turn: Any = handle) -> None:
                            while not _prompt_sent(log):
                                await trio.sleep(0.02)
                            turn.abort("test")

                        nursery.start_soon(abort_once_prompted)
                    aborted = False
                    async for act in handle:
                        if plan.abort_on == "text" and not aborted and isinstance(act, TextActivity):
                            aborted = True
                            handle.abort("test")
                    nursery.cancel_scope.cancel()
            assert handle.outcome is not None
            conv = handle.outcome.conversation_id or conv
            await drv.aclose()
    return logs


def _summary(checked: Sequence[Checked]) -> dict[tuple[str, str, str | None], int]:
    return dict(Counter((c.sender, c.kind, c.method) for c in checked))


@pytest.mark.parametrize("scenario", sorted(PLANS))
async def test_fake_acp_agent_messages_are_valid_acp(tmp_path: Path, scenario: str) -> None:
    plan = PLANS[scenario]
    checked: list[Checked] = []
    for log in await _drive(tmp_path, scenario, plan):
        exchange, _ = validate_tee_log(read_tee_log(log), where=f"fake agent, scenario {scenario}, {log.name}")
        checked += exchange.checked
        # The engine answers every request the fake makes (a turn never leaves one hanging).
        assert exchange.unanswered("agent") == {}, f"{scenario}: unanswered agent requests in {log.name}"
    sent = {(c.kind, c.method or "") for c in checked if c.sender == "agent"}
    missing = plan.agent_sends - sent
    assert not missing, f"{scenario}: the fake never sent {sorted(missing)}; validated: {_summary(checked)}"


# ---------------------------------------------------------------------------
# The validators themselves (pure unit tests: they must be able to fail)
# ---------------------------------------------------------------------------


def _req(id_: Any, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def test_exchange_pairs_responses_by_id_per_side() -> None:
    """The client's id 0 and the agent's id 0 are different requests."""
    ex = Exchange()
    ex.feed("client", _req(0, "session/prompt", {"sessionId": "s", "prompt": []}))
    perm = {
        "sessionId": "s",
        "toolCall": {"toolCallId": "t"},
        "options": [{"optionId": "a", "name": "A", "kind": "allow_once"}],
    }
    ex.feed("agent", _req(0, "session/request_permission", perm))
    answer = {"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "a"}}}
    assert ex.feed("client", answer) == "RequestPermissionResponse"
    assert ex.feed("agent", {"jsonrpc": "2.0", "id": 0, "result": {"stopReason": "end_turn"}}) == "PromptResponse"
    assert ex.unanswered("client") == {} and ex.unanswered("agent") == {}
    # A second answer to the same request, or one to an id never asked, is an error.
    with pytest.raises(Exception, match="never asked"):
        ex.feed("agent", {"jsonrpc": "2.0", "id": 0, "result": {"stopReason": "end_turn"}})
    # A permission answer shaped like a prompt answer fails against the right definition.
    ex.feed("agent", _req(1, "session/request_permission", perm))
    with pytest.raises(Exception, match="RequestPermissionResponse"):
        ex.feed("client", {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}})


def test_deviation_tolerates_only_the_listed_path() -> None:
    bad = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "x"}}}
    items: list[tuple[Sender, dict[str, Any], str | None, str]] = [("agent", bad, None, "unit")]
    with pytest.raises(AssertionError, match="unknown sessionUpdate"):
        validate_frames(items)
    listed = Deviation("agent", "session/update", "$.params.update", "unit test: a made-up update kind")
    _, used = validate_frames(items, allow=[listed])
    assert used == [listed]
    elsewhere = Deviation("agent", "session/update", "$.params", "a different path does not cover it")
    with pytest.raises(AssertionError):
        validate_frames(items, allow=[elsewhere])
