"""Permission requests and cancellation with a real third-party ACP agent.

Which real agent can do this offline, and why fast-agent-mcp:

* The ACP Python SDK 0.12.1 examples never ask for permission and never stay
  busy: ``examples/agent.py`` and ``examples/echo_agent.py`` answer a prompt
  by echoing its blocks and returning ``end_turn`` at once (no
  ``request_permission`` call anywhere in the agent examples; only the
  *client* examples ``client.py``, ``gemini.py``, ``http_client.py`` and
  ``ws_client.py`` implement it).
* fast-agent-mcp 0.10.48 asks ``session/request_permission`` before every MCP
  tool call (``fast_agent/acp/tool_permissions.py``, on by default; off only
  with ``--no-permissions``), and its ``passthrough`` model makes a tool
  call on ``***CALL_TOOL <server>__<tool> {json}``: the tool here is a host
  tool of agy-host's MCP bridge, which the agent reaches through the
  ``mcpServers`` agy-host hands it. Its ``slow`` model is passthrough after
  ``asyncio.sleep(3)`` (``fast_agent/llm/internal/slow.py``), which it
  cancels on ``session/cancel`` (``AgentACPServer.cancel``: ``task.cancel()``).

Every run goes through :mod:`conformance.acp_tee`, so the tests see the wire:
that the agent's request reached agy-host, what agy-host answered, that the
agent received the answer (its reply depends on it), and every message both
ways validates against the vendored ACP schema.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from conformance.wire import read_tee_log, validate_tee_log
from interop.cli_runs import RUN_TIMEOUT
from interop.cli_runs import argv_for as _argv
from interop.cli_runs import finish as _finish
from interop.cli_runs import no_leftovers as _no_leftovers
from interop.provision import FastAgent
from interop.rawacp import start_cli

pytestmark = pytest.mark.interop

#: fast-agent's ``slow`` model sleeps this long before it answers.
SLOW_MODEL_SLEEP = 3.0


@dataclass(frozen=True)
class Policy:
    """How the policy is selected, and what it must answer."""

    flags: tuple[str, ...]
    config: str | None
    answer: str  # the optionId agy-host must send back (fast-agent offers allow_once/.../reject_always)
    policy: str  # the policy name in the JSON ``permission`` event
    exit_code: int
    reason: str | None = None  # a substring of the event's reason


POLICIES = {
    # --permissions auto: allow once, by option kind.
    "flag-auto": Policy(("--permissions", "auto"), None, "allow_once", "auto", 0),
    # No flag, no config, nobody to ask (no terminal here): the default refuses
    # and says how to allow; every request denied -> exit 5 (issue 26 item 1).
    "default-refuses": Policy((), None, "reject_once", "ask", 5, reason="nobody could be asked"),
    # --permissions deny: reject once; every request of the turn denied -> exit 5.
    "flag-deny": Policy(("--permissions", "deny"), None, "reject_once", "deny", 5),
    # The rules policy from the config file: a deny rule on the title wins
    # over rules_default = "allow" (so it is the rule, not the default, that denied).
    "config-rules": Policy(
        (),
        '[permissions]\npolicy = "rules"\nrules_default = "allow"\n\n'
        '[[permissions.rules]]\ntitle = "*host_echo*"\naction = "deny"\n',
        "reject_once",
        "rules",
        5,
        reason="rule 1",
    ),
}


@pytest.mark.parametrize("case", sorted(POLICIES))
def test_fast_agent_permission_request_is_answered_by_the_policy(
    case: str, agy_host_cli: Path, fast_agent: FastAgent, tools_env: dict[str, str], tmp_path: Path
) -> None:
    """fast-agent asks before it calls a tool; agy-host's policy answers with
    one of the agent's own option ids; the agent acts on that answer (runs the
    tool, or reports the refusal) and the exit code says whether everything
    was denied."""
    want = POLICIES[case]
    workdir = tmp_path / "project"
    workdir.mkdir()
    if want.config is not None:
        config = Path(tools_env["XDG_CONFIG_HOME"]) / "agy-host" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(want.config, encoding="utf-8")
    launch = fast_agent.launch(tmp_path)
    log = tmp_path / "wire.jsonl"
    token = f"perm-{uuid.uuid4().hex[:8]}"
    prompt = f'***CALL_TOOL agy-host-bridge__host_echo {{"token": "{token}"}}'
    argv = _argv(agy_host_cli, launch, log, prompt, list(want.flags))
    run = _finish(start_cli(argv, tools_env, workdir), argv, launch, log)
    ctx = run.context

    # On the wire: one request from the agent, about this tool call...
    asks = [
        w
        for w in run.wire.lines
        if w.sender == "agent" and (w.frame or {}).get("method") == "session/request_permission"
    ]
    assert len(asks) == 1, ctx
    ask = asks[0].frame
    assert ask is not None
    assert ask["params"]["toolCall"]["rawInput"] == {"token": token}, ctx
    offered = {o["optionId"]: o["kind"] for o in ask["params"]["options"]}
    assert offered.get(want.answer) == want.answer, f"fast-agent no longer offers {want.answer}: {offered}\n{ctx}"
    # ...answered by agy-host with the policy's pick, by the agent's own id.
    answer = run.wire.response_to("client", asks[0])
    assert answer is not None and answer.frame is not None, f"agy-host never answered the request\n{ctx}"
    assert answer.frame.get("result") == {"outcome": {"outcome": "selected", "optionId": want.answer}}, ctx

    # The host reported the decision it sent.
    perms = run.of_type("permission")
    assert [(p.get("selected"), p.get("policy")) for p in perms] == [(want.answer, want.policy)], ctx
    if want.reason is not None:
        assert want.reason in str(perms[0].get("reason")), ctx

    # The agent received the answer: what it did next depends on it.
    uses = run.of_type("tool_use")
    if want.answer.startswith("allow"):
        assert [(u["name"], u["args"]) for u in uses] == [("host_echo", {"token": token})], ctx
        assert f'host echo: {{"token": "{token}"}}' in run.text, ctx
    else:
        assert uses == [], f"the tool ran although the policy said {want.answer}\n{ctx}"
        assert "declined permission" in run.text and "host echo" not in run.text, ctx

    assert [e.get("stop_reason") for e in run.of_type("turn_end")] == ["stop"], ctx
    assert run.events[-1]["type"] == "done" and run.events[-1]["exit_code"] == want.exit_code, ctx
    assert run.returncode == want.exit_code, ctx

    exchange, _ = validate_tee_log(run.wire, where=f"{case} wire")
    assert {
        ("agent", "request", "session/request_permission"),
        ("client", "response", "session/request_permission"),
    } <= {(c.sender, c.kind, c.method) for c in exchange.checked}, ctx
    _no_leftovers(launch, ctx)


def test_fast_agent_turn_is_cancelled_mid_prompt(
    agy_host_cli: Path, fast_agent: FastAgent, isolated_env: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    """Ctrl-C (SIGINT) while the agent works: agy-host sends ``session/cancel``,
    the agent stops its 3 s of work early and answers ``cancelled``, the turn
    ends ``aborted`` with exit 130, and no agent process is left."""
    launch = fast_agent.launch(tmp_path, model="slow")
    log = tmp_path / "wire.jsonl"
    token = f"cancel-{uuid.uuid4().hex[:8]}"
    env = {**isolated_env, "AGY_HOST_ENGINE": "acp", "AGY_HOST_TTY": "none"}
    argv = _argv(agy_host_cli, launch, log, f"please echo {token}", [])
    proc = start_cli(argv, env, workdir)

    deadline = time.monotonic() + RUN_TIMEOUT
    while not (log.exists() and read_tee_log(log).first("client", "session/prompt")):
        if proc.poll() is not None or time.monotonic() > deadline:
            run = _finish(proc, argv, launch, log)
            pytest.fail(f"the prompt never reached the agent\n{run.context}")
        time.sleep(0.05)
    # Let the agent get into its sleep (it starts the prompt task on receipt).
    time.sleep(0.5)
    assert proc.poll() is None, "the turn ended before it could be interrupted"
    os.kill(proc.pid, signal.SIGINT)
    run = _finish(proc, argv, launch, log)
    ctx = run.context

    prompt = run.wire.first("client", "session/prompt")
    cancel = run.wire.first("client", "session/cancel")
    assert prompt is not None and prompt.frame is not None, ctx
    assert cancel is not None and cancel.frame is not None, f"agy-host never sent session/cancel\n{ctx}"
    assert "id" not in cancel.frame, "session/cancel is a notification"
    assert cancel.frame["params"]["sessionId"] == prompt.frame["params"]["sessionId"], ctx
    reply = run.wire.response_to("agent", prompt)
    assert reply is not None and reply.frame is not None, f"the agent never answered the prompt\n{ctx}"
    assert reply.frame.get("result", {}).get("stopReason") == "cancelled", ctx
    # The cancel interrupted real work: the answer came before the sleep was over.
    assert reply.t - prompt.t < SLOW_MODEL_SLEEP, f"answered after {reply.t - prompt.t:.2f}s\n{ctx}"
    assert token not in run.text, f"the agent's echo arrived: it was not cancelled\n{ctx}"

    ends = run.of_type("turn_end")
    assert [(e.get("stop_reason"), e.get("agent_stop_reason")) for e in ends] == [("aborted", "cancelled")], ctx
    done = run.events[-1]
    assert (done["type"], done["stop_reason"], done["exit_code"]) == ("done", "aborted", 130), ctx
    assert run.returncode == 130, ctx

    validate_tee_log(run.wire, where="cancel wire")
    _no_leftovers(launch, ctx)
