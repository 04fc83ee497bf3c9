"""What agy-host and real third-party agents say to each other is valid ACP.

The same two-turn runs as ``test_acp_agents.py`` (``agy-host run --session``
twice: a new conversation, then its continuation), with the agent behind
:mod:`conformance.acp_tee`: every message agy-host sent and every message it
accepted from the agent is validated against the vendored ACP schema, each
response against the request it answers. ``test_agents_direct.py`` checks the
agents with a raw client; this checks the traffic with agy-host itself.

No deviation is listed: against ``@agentclientprotocol/sdk`` 2.4.0's stable
schema everything the ACP Python SDK 0.12.1 examples and fast-agent-mcp
0.10.48 send in these runs validates (including fast-agent's
``session_info_update`` and ``available_commands_update``). A future version
that needs one must add a :class:`conformance.wire.Deviation` with its path
and reason, not a skip.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from conformance.wire import Deviation, read_tee_logs, tee_argv, validate_tee_log
from interop.cli_runs import advertised_commands, shown_commands
from interop.provision import AgentLaunch, FastAgent, SdkAgents
from interop.test_acp_agents import _check_turn, _run_cli

pytestmark = pytest.mark.interop

#: Known, reasoned schema failures per agent (see the module docstring).
DEVIATIONS: dict[str, list[Deviation]] = {}


def _launch(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> AgentLaunch:
    if name == "fast-agent":
        fast: FastAgent = request.getfixturevalue("fast_agent")
        return fast.launch(tmp_path)
    sdk: SdkAgents = request.getfixturevalue("sdk_agents")
    return sdk.launch(name.removeprefix("sdk-"))


@pytest.mark.parametrize("name", ["sdk-echo", "sdk-example", "fast-agent"])
def test_agy_host_and_real_agent_exchange_only_valid_acp(
    name: str,
    request: pytest.FixtureRequest,
    agy_host_cli: Path,
    isolated_env: dict[str, str],
    tmp_path: Path,
) -> None:
    launch = _launch(name, request, tmp_path)
    workdir = tmp_path / "project"
    workdir.mkdir()
    session = f"wire-{uuid.uuid4().hex[:8]}"
    # One log for both runs: agy-host resumes a session only with the same agent command line.
    log = tmp_path / "wire.jsonl"
    tapped = AgentLaunch(launch.name, tee_argv(log, launch.argv), launch.marker, launch.supports_load, launch.home)
    seen: set[tuple[str, str, str | None]] = set()
    for number, turn in enumerate(("first", "second"), 1):
        token = f"{turn}-{uuid.uuid4().hex[:8]}"
        run = _run_cli(agy_host_cli, tapped, session, f"please echo {token}", cwd=workdir, env=isolated_env)
        _check_turn(run, tapped, session, token)
        runs = read_tee_logs(log)
        assert len(runs) == number, f"expected one agent process per run, the tap saw {len(runs)}"
        exchange, used = validate_tee_log(runs[-1], allow=DEVIATIONS.get(name, []), where=f"{name} {turn} run")
        stale = [d for d in DEVIATIONS.get(name, []) if d not in used]
        assert not stale, f"{name}: deviations that no longer occur: {stale}"
        assert exchange.unanswered("client") == {} and exchange.unanswered("agent") == {}, run.describe()
        seen |= {(c.sender, c.kind, c.method) for c in exchange.checked}
        # Commands the agent advertised on the wire reach the events (fast-agent sends them with session/new).
        advertised = advertised_commands(runs[-1])
        if advertised is not None:
            assert shown_commands(run.events) == advertised, run.describe()

    expected = {
        ("client", "request", "initialize"),
        ("agent", "response", "initialize"),
        ("client", "request", "session/new"),
        ("agent", "response", "session/new"),
        ("client", "request", "session/prompt"),
        ("agent", "notification", "session/update"),
        ("agent", "response", "session/prompt"),
    }
    if launch.supports_load:
        # The second run continues the conversation: session/resume when the
        # agent offers it (fast-agent does), session/load otherwise.
        method = "session/resume" if ("client", "request", "session/resume") in seen else "session/load"
        expected |= {("client", "request", method), ("agent", "response", method)}
    assert expected <= seen, f"{name}: not validated: {sorted(expected - seen)}"
