"""Warm agents on the stream-json and harness engines: real ``agy-host``
commands, a real keeper, the kit's fake ``agy`` CLI and the real
``localharness`` against the kit's scripted model API (docs/sessions.md).

stream-json keeps one ``agy`` process per session (it holds one
conversation); the harness runs every warm session with equal settings in
one process, each session its own conversation, and a harness that dies
takes only its own sessions down.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from warm_kit import Warm, alive, of, wait_gone

from agy_host.testing.agy_cli.agent import make_fake_agy


def ok(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [end] = of(proc, "turn_end")
    return end


# -- stream-json ---------------------------------------------------------------------------


@pytest.fixture
def sj(tmp_path: Path) -> Iterator[tuple[Warm, Any]]:
    pytest.importorskip("agy_host_stream_json.engine", reason="the stream-json engine is not installed")
    fake = make_fake_agy(tmp_path / "agy", "happy")
    home = Warm(tmp_path, engine="stream-json", AGY_BIN=str(fake.bin))
    yield home, fake
    home.close()


def test_stream_json_runs_every_command_warm_on_one_agy_per_session(sj: tuple[Warm, Any]) -> None:
    """``run``, ``chat`` and ``ask`` on one session: one ``agy`` process, one
    conversation; another session gets an ``agy`` of its own (an ``agy``
    holds one conversation)."""
    warm, fake = sj
    first = ok(warm.cli("run", "--session", "w", "--format", "json", "one"))
    talk = warm.cli("chat", "--session", "w", stdin="two\n")
    assert talk.returncode == 0, talk.stderr
    asked = warm.cli("ask", "--session", "w", "--format", "json", "three")
    assert asked.returncode == 0 and json.loads(asked.stdout)["conversation_id"] == first["conversation_id"]
    assert len(fake.argvs()) == 1, f"one agy served the session's three commands: {fake.argvs()}"
    ok(warm.cli("run", "--session", "other", "--format", "json", "four"))
    assert len(fake.argvs()) == 2, "another session, another agy"
    sessions = warm.sessions()
    assert sessions["w"]["turns"] == 3 and sessions["other"]["turns"] == 1, sessions
    assert sessions["w"]["agent_pid"] != sessions["other"]["agent_pid"], sessions
    assert sessions["w"]["shared_with"] == [] and sessions["other"]["shared_with"] == [], sessions


@pytest.mark.parametrize("thin", ["1", "0"], ids=["thin-client", "full-cli"])
def test_a_warm_edit_is_diffed_against_the_snapshot_the_keepers_turn_took(tmp_path: Path, thin: str) -> None:
    """The "before" side of a warm turn's diff is the keeper's (it took the
    snapshot when the turn started): an untracked file's diff shows the one
    changed line, as on the cold path, not the whole file as new."""
    pytest.importorskip("agy_host_stream_json.engine", reason="the stream-json engine is not installed")
    pytest.importorskip("agy_host_diff_render", reason="the diff renderer is not installed")
    target = tmp_path / "project" / "notes.txt"
    new = "one\nTWO\nthree\n"
    write = {"tool": {"name": "write_to_file", "params": {"TargetFile": str(target), "CodeContent": new}}}
    scenario = {"turns": [[{"say": "ready"}], [{**write}, {"say": "edited"}]]}
    scenario["turns"][1][0]["tool"]["needs_permission"] = False
    fake = make_fake_agy(tmp_path / "agy", scenario)
    warm = Warm(tmp_path, engine="stream-json", AGY_BIN=str(fake.bin), AGY_HOST_THIN=thin)
    try:
        target.write_text("one\ntwo\nthree\n")  # untracked: no git at all here
        assert warm.cli("run", "--session", "d", "--format", "json", "first").returncode == 0
        second = warm.cli("run", "--session", "d", "--format", "plain", "edit it")
        assert second.returncode == 0, second.stderr
        assert warm.sessions()["d"]["turns"] == 2, "the second turn ran on the warm agent"
        changed = [line for line in second.stderr.splitlines() if line.startswith(("  -", "  +")) and "│" in line]
        assert changed == ["  -2   │ two", "  +  2 │ TWO"], second.stderr
    finally:
        warm.close()


# -- harness -------------------------------------------------------------------------------


#: A host tool that waits for the test: it says when it started (``<tag>-started``
#: in ``dir``) and returns ``gated <tag>`` once the test lets it (``<tag>-go``).
GATE_TOOL = """
from pathlib import Path
import trio
from agy_host import hookimpl
from agy_host.contract.tools import HostTool, ToolResult


async def gate(args):
    folder = Path(args["dir"])
    (folder / (args["tag"] + "-started")).touch()
    while not (folder / (args["tag"] + "-go")).exists():
        await trio.sleep(0.05)
    return ToolResult(text="gated " + args["tag"])


@hookimpl
def agy_host_register_tools(register):
    schema = {"type": "object", "properties": {"tag": {"type": "string"}, "dir": {"type": "string"}}}
    register(HostTool(name="gate", description="wait for the test", input_schema=schema, call=gate))
"""


class HarnessWarm(Warm):
    """A warm home on the real localharness, its model the scripted API."""

    def __init__(self, tmp_path: Path, binary: str, script: dict[str, Any]) -> None:
        from agy_host.testing.isolation import install_plugin
        from agy_host.testing.models.api import ModelApiProcess

        self.model = ModelApiProcess(tmp_path / "model", script)
        site = tmp_path / "site"
        install_plugin(site, "warm_gate_tools", GATE_TOOL)
        pythonpath = os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
        keys = {"ANTIGRAVITY_HARNESS_PATH": binary, "GEMINI_API_KEY": "test-key", "PYTHONPATH": pythonpath}
        super().__init__(tmp_path, engine="harness", **keys)
        self.env.pop("GOOGLE_GEMINI_BASE_URL", None)
        config = Path(self.env["XDG_CONFIG_HOME"]) / "agy-host" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(
            f'[harness]\nbase_url = "{self.model.url}"\n[turn]\ntimeout_minutes = 1.0\ninactivity_minutes = 0.5\n'
        )

    def turn(self, session: str, prompt: str, *args: str) -> subprocess.CompletedProcess[str]:
        return self.cli("run", "--session", session, "--format", "json", *args, prompt)

    def start_turn(self, session: str, prompt: str) -> subprocess.Popen[str]:
        return self.start("run", "--session", session, "--format", "json", prompt)

    def harnesses(self) -> list[int]:
        """The keeper's localharness children."""
        keeper = self.keeper_pid()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat[1]) == keeper and stat[0] != "Z" and b"localharness" in cmdline:
                found.append(int(entry.name))
        return found

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.model.close()


def gated(tag: str, folder: Path) -> list[list[dict[str, Any]]]:
    """A user request's model replies: call the gate tool, then say its result."""
    return [[{"call": {"name": "gate", "args": {"tag": tag, "dir": str(folder)}}}], [{"tool_result": True}]]


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[HarnessWarm]:
    pytest.importorskip("agy_host_harness.engine", reason="the harness engine is not installed")
    from parity.rigs import harness_binary

    gates = tmp_path / "gates"
    gates.mkdir()
    script = {
        # "gate-a ..." and "gate-b ...": a host tool call each, held until the test opens its gate;
        # any other request: a second's pause, then the user's text back
        "rules": [{"match": f"gate-{t}", "replies": gated(t, gates)} for t in ("a", "b")],
        "turns": [[[{"sleep": 1.0}, {"echo": True}]]],
    }
    home = HarnessWarm(tmp_path, harness_binary(), script)
    home.gates = gates
    yield home
    home.close()


def test_warm_harness_sessions_share_one_process_each_its_own_conversation(harness: HarnessWarm) -> None:
    first = ok(harness.turn("a", "alpha one"))
    second = ok(harness.turn("a", "alpha two"))
    assert second["conversation_id"] == first["conversation_id"] and second["response"].endswith("alpha two")
    # two sessions' turns at once on the one harness: neither sees the other's answer
    procs = {name: harness.start_turn(name, f"{name} at once") for name in ("a", "b")}
    outs = {name: proc.communicate(timeout=90) for name, proc in procs.items()}
    for name, proc in procs.items():
        assert proc.returncode == 0, outs[name]
        ends = [json.loads(line) for line in outs[name][0].splitlines() if '"turn_end"' in line]
        assert [e["response"] for e in ends] == [f"{name} at once"], outs[name]
    sessions = harness.sessions()
    assert sessions["a"]["agent_pid"] == sessions["b"]["agent_pid"], sessions
    assert sessions["a"]["shared_with"] == ["b"] and sessions["b"]["shared_with"] == ["a"], sessions
    assert harness.harnesses() == [sessions["a"]["agent_pid"]], "one harness process serves both sessions"
    asked = [r for r in harness.model.requests() if "alpha two" in json.dumps(r)]
    assert asked and all("alpha one" in json.dumps(r) for r in asked), "session a's conversation went on"
    # one session leaving (stopped) leaves the harness to the other
    assert harness.cli("sessions", "stop", "a").returncode == 0
    assert set(harness.sessions()) == {"b"} and alive(sessions["b"]["agent_pid"])
    ok(harness.turn("b", "beta again"))
    assert harness.sessions()["b"]["agent_pid"] == sessions["b"]["agent_pid"]


def test_host_tools_of_two_sessions_on_one_harness_each_resume_their_own_turn(harness: HarnessWarm) -> None:
    """a's and b's turns park on a host tool at once on their shared harness;
    a's tool ends first, while b's turn is still parked: a's turn goes on
    reading a's answer, not b's (the harness's driver re-enters its newest
    parked turn, which is b's)."""
    from warm_kit import until

    ok(harness.turn("a", "warm up a"))
    ok(harness.turn("b", "warm up b"))
    first = harness.start_turn("a", "gate-a please")
    until((harness.gates / "a-started").exists, "a's tool to start", 60)
    second = harness.start_turn("b", "gate-b please")
    until((harness.gates / "b-started").exists, "b's tool to start", 60)
    (harness.gates / "a-go").touch()
    out_a, err_a = first.communicate(timeout=90)
    (harness.gates / "b-go").touch()
    out_b, err_b = second.communicate(timeout=90)
    for tag, out, err, proc in (("a", out_a, err_a, first), ("b", out_b, err_b, second)):
        assert proc.returncode == 0, out[-3000:] + err[-3000:]
        ends = [json.loads(line) for line in out.splitlines() if '"turn_end"' in line]
        assert ends and ends[-1]["response"] == f"tool result: gated {tag}", out[-3000:]
    sessions = harness.sessions()
    assert sessions["a"]["agent_pid"] == sessions["b"]["agent_pid"], sessions


def test_a_dead_shared_harness_takes_only_its_sessions_down(harness: HarnessWarm) -> None:
    """a and b share a harness, c (other settings) has its own; killing a and
    b's harness leaves c warm, and a's next command starts a new harness,
    continuing a's conversation, without an error; b then joins it."""
    first = ok(harness.turn("a", "alpha one"))
    ok(harness.turn("b", "beta one"))
    ok(harness.turn("c", "gamma one", "--permissions", "deny"))
    before = harness.sessions()
    shared, own = before["a"]["agent_pid"], before["c"]["agent_pid"]
    assert before["b"]["agent_pid"] == shared and own != shared, before
    os.kill(shared, signal.SIGKILL)
    assert wait_gone(shared, 10)
    after = harness.sessions()
    assert not after["a"]["warm"] and not after["b"]["warm"], after
    assert after["c"]["warm"] and after["c"]["agent_pid"] == own and alive(own), after
    again = harness.turn("a", "alpha two")
    end = ok(again)
    assert end["conversation_id"] == first["conversation_id"] and "error" not in again.stderr.lower(), again.stderr
    ok(harness.turn("b", "beta two"))
    now = harness.sessions()
    assert now["a"]["agent_pid"] == now["b"]["agent_pid"] not in (shared, own), now
    assert now["c"]["agent_pid"] == own, "c's harness was never touched"
    assert sorted(harness.harnesses()) == sorted([now["a"]["agent_pid"], own])
