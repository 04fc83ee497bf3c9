"""The provisioned third-party agents, spoken to directly over stdio with raw
JSON-RPC (no agy-host code involved): they install, start, answer
``initialize`` and ``session/new``, stream a reply, and exit cleanly.

Every message both ways is validated against the vendored ACP schema.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from interop.provision import (
    FAST_AGENT_MIN,
    SDK_VERSION,
    AgentLaunch,
    FastAgent,
    SdkAgents,
    Unavailable,
    find_python,
    provision_fast_agent,
    provision_sdk,
)
from interop.rawacp import RawAgent, agent_text, kill_all, processes_with, wait_gone

pytestmark = pytest.mark.interop


def _launch(name: str, sdk_agents: SdkAgents | None, fast_agent: FastAgent | None, tmp_path: Path) -> AgentLaunch:
    if name == "fast-agent":
        assert fast_agent is not None
        return fast_agent.launch(tmp_path)
    assert sdk_agents is not None
    return sdk_agents.launch(name.removeprefix("sdk-"))


@pytest.fixture(params=["sdk-echo", "sdk-example", "fast-agent"])
def agent(request: pytest.FixtureRequest, tmp_path: Path) -> AgentLaunch:
    if request.param == "fast-agent":
        return _launch(request.param, None, request.getfixturevalue("fast_agent"), tmp_path)
    return _launch(request.param, request.getfixturevalue("sdk_agents"), None, tmp_path)


def _start(launch: AgentLaunch, workdir: Path, env: dict[str, str], tmp_path: Path, tag: str = "") -> RawAgent:
    return RawAgent(launch.argv, cwd=workdir, env=env, stderr_path=tmp_path / f"{launch.name}{tag}.stderr")


def _close_cleanly(raw: RawAgent, launch: AgentLaunch) -> None:
    rc = raw.close()
    left = wait_gone(launch.marker)
    if left:
        kill_all(launch.marker)
    assert not left, f"{launch.name} left processes behind after stdin EOF: {left}"
    assert rc == 0, f"{launch.name} exited {rc} on stdin EOF; stderr:\n{raw.stderr_tail()}"


def test_agent_answers_initialize_new_session_and_prompt(
    agent: AgentLaunch, workdir: Path, isolated_env: dict[str, str], tmp_path: Path
) -> None:
    raw = _start(agent, workdir, isolated_env, tmp_path)
    try:
        init = raw.initialize()
        assert init["protocolVersion"] == 1, init
        caps = init.get("agentCapabilities") or {}
        assert bool(caps.get("loadSession", False)) is agent.supports_load, caps

        sid = raw.new_session(workdir)
        token = f"interop-{uuid.uuid4().hex[:12]}"
        stop, text = raw.prompt(sid, f"say {token}")
        assert stop == "end_turn"
        assert token in text, f"{agent.name} streamed {text!r}"
        if agent.name == "sdk-example":
            assert text.startswith("Client sent:"), text
    except BaseException:
        raw.close(timeout=5)
        kill_all(agent.marker)
        raise
    _close_cleanly(raw, agent)


def test_fast_agent_loads_a_session_in_a_new_process(
    fast_agent: FastAgent, workdir: Path, isolated_env: dict[str, str], tmp_path: Path
) -> None:
    """What the host relies on for multi-turn continuity after a restart:
    session/load in a fresh process resumes the conversation (and replays it)."""
    launch = fast_agent.launch(tmp_path)
    token = f"first-{uuid.uuid4().hex[:12]}"
    raw = _start(launch, workdir, isolated_env, tmp_path, "-1")
    try:
        raw.initialize()
        sid = raw.new_session(workdir)
        stop, text = raw.prompt(sid, f"***FIXED_RESPONSE reply {token}")
        assert (stop, text) == ("end_turn", f"reply {token}")
    finally:
        raw.close()

    raw = _start(launch, workdir, isolated_env, tmp_path, "-2")
    try:
        raw.initialize()
        before = len(raw.notifications)
        raw.load_session(workdir, sid)
        replay = raw.notifications[before:]
        assert token in agent_text(replay, sid, "user_message_chunk"), replay
        assert agent_text(replay, sid) == f"reply {token}", replay
        token2 = f"second-{uuid.uuid4().hex[:12]}"
        stop, text = raw.prompt(sid, token2)
        assert stop == "end_turn" and token2 in text
    except BaseException:
        raw.close(timeout=5)
        kill_all(launch.marker)
        raise
    _close_cleanly(raw, launch)
    assert launch.home is not None
    sessions = [p.name for p in (launch.home / "sessions").iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert sessions == [sid], sessions


# ---------------------------------------------------------------------------
# Provisioning itself
# ---------------------------------------------------------------------------


def test_sdk_provisioning_is_cached_and_recorded(sdk_agents: SdkAgents) -> None:
    again = provision_sdk()
    assert again == sdk_agents
    marker = json.loads((sdk_agents.root / "provisioned.json").read_text())
    assert marker["versions"]["agent-client-protocol"] == SDK_VERSION
    for script in (sdk_agents.echo_agent, sdk_agents.example_agent):
        assert "run_agent" in script.read_text(), script
    assert sdk_agents.command("echo") == [str(sdk_agents.python), str(sdk_agents.echo_agent)]


def test_fast_agent_provisioning_is_cached_and_new_enough(fast_agent: FastAgent) -> None:
    again = provision_fast_agent()
    assert again == fast_agent
    version = tuple(int(p) for p in fast_agent.versions["fast-agent-mcp"].split(".")[:2])
    assert version >= FAST_AGENT_MIN, fast_agent.versions
    marker = json.loads((fast_agent.root / "provisioned.json").read_text())
    assert tuple(int(p) for p in marker["key"]["python"].split(".")) >= (3, 13)


def test_missing_interpreter_is_reported_by_name() -> None:
    with pytest.raises(Unavailable, match=r"no Python >= 3\.99 interpreter found"):
        find_python((3, 99))


def test_unreachable_registry_is_reported_as_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A registry that cannot be reached means "skip, saying so", not a failure
    and not a silent pass. Port 9 on loopback refuses connections."""
    dead = "http://127.0.0.1:9/simple"
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")
    monkeypatch.setenv("UV_DEFAULT_INDEX", dead)
    monkeypatch.setenv("PIP_INDEX_URL", dead)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")  # no extra indexes or find-links from pip.conf
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    with pytest.raises(Unavailable, match=r"package registry is unreachable \(http://127\.0\.0\.1:9/simple/"):
        provision_sdk(cache=tmp_path)
    assert not (tmp_path / f"acp-sdk-{SDK_VERSION}" / "provisioned.json").exists()


def test_leak_detector_sees_a_marked_process(tmp_path: Path) -> None:
    """The /proc scan behind every "no agent left behind" check finds a live
    marked process, and stops finding it once it is gone."""
    import subprocess
    import sys

    marker = f"--agy-leak-probe={uuid.uuid4().hex}"
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    try:
        # Until the child has exec'd, its command line is still ours: wait for it.
        found = processes_with(marker)
        for _ in range(300):
            if found or proc.poll() is not None:
                break
            time.sleep(0.1)
            found = processes_with(marker)
        assert [pid for pid, _ in found] == [proc.pid], found
        assert marker in found[0][1]
    finally:
        kill_all(marker)
        proc.wait(timeout=30)
    assert wait_gone(marker) == []
