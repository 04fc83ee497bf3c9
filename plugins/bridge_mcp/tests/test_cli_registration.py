"""The bridge's entry in the agy CLI's global MCP config (stream-json)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agy_host.service.roundtrips import delegated_agent
from agy_host_bridge_mcp import cli_registration as reg
from agy_host_bridge_mcp.testing import running_bridge

URL = "http://127.0.0.1:4242/mcp"
FOREIGN = {"github": {"command": "gh-mcp", "args": ["serve"]}, "pi-bridge-12": {"serverUrl": "http://x"}}


def servers(path: Path) -> dict[str, object]:
    data = json.loads(path.read_text())
    assert isinstance(data["mcpServers"], dict)
    return data["mcpServers"]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / ".gemini" / "config" / "mcp_config.json"


def test_exact_entry_shape_and_mode(path: Path) -> None:
    assert reg.register(path, 77, URL, "tok")
    assert json.loads(path.read_text()) == {
        "mcpServers": {
            "agy-host-bridge-77": {"disabled": False, "headers": {"x-bridge-token": "tok"}, "serverUrl": URL}
        }
    }
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not reg.register(path, 77, URL, "tok")  # nothing changed, nothing written


def test_foreign_entries_are_kept_and_ours_refreshed_and_the_mode_tightened(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcpServers": FOREIGN, "theme": "dark"}))
    os.chmod(path, 0o644)
    reg.register(path, 77, URL, "old")
    reg.register(path, 77, URL, "new")
    data = json.loads(path.read_text())
    assert data["theme"] == "dark"
    assert {k: v for k, v in data["mcpServers"].items() if k != "agy-host-bridge-77"} == FOREIGN
    assert data["mcpServers"]["agy-host-bridge-77"]["headers"] == {"x-bridge-token": "new"}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '"text"'])
def test_a_corrupt_file_is_refused_and_never_clobbered(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with pytest.raises(reg.RegistrationRefused, match="refusing to touch it"):
        reg.register(path, 77, URL, "tok")
    with pytest.raises(reg.RegistrationRefused):
        reg.set_disabled(path, True)
    assert path.read_text() == content


def test_a_symlink_is_refused(path: Path, tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text("{}")
    path.parent.mkdir(parents=True)
    path.symlink_to(real)
    with pytest.raises(reg.RegistrationRefused, match="symlink"):
        reg.register(path, 77, URL, "tok")
    assert path.is_symlink() and real.read_text() == "{}"


def test_a_missing_servers_table_is_replaced(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcpServers": ["bad"], "x": 1}))
    reg.register(path, 5, URL, "t")
    assert json.loads(path.read_text())["x"] == 1 and list(servers(path)) == ["agy-host-bridge-5"]


def test_unregister_removes_only_ours(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcpServers": FOREIGN}))
    reg.register(path, 77, URL, "t")
    reg.register(path, 78, URL, "t")
    assert reg.unregister(path, 77)
    assert not reg.unregister(path, 77)  # already gone: reported, not written
    assert sorted(servers(path)) == sorted([*FOREIGN, "agy-host-bridge-78"])
    assert not reg.unregister(path.with_name("absent.json"), 77)
    assert not path.with_name("absent.json").exists()


def test_sweep_removes_dead_pids_only(path: Path) -> None:
    path.parent.mkdir(parents=True)
    live = {"agy-host-bridge-1": {}, "agy-host-bridge-2": {}, "agy-host-bridge-x": {}, "agy-host-bridge-": {}}
    path.write_text(json.dumps({"mcpServers": {**FOREIGN, **live}}))
    removed = reg.sweep_stale(path, is_alive=lambda pid: pid == 1, is_writer=lambda pid, value: True)
    assert removed == ["agy-host-bridge-2"]
    assert sorted(servers(path)) == sorted([*FOREIGN, "agy-host-bridge-1", "agy-host-bridge-x", "agy-host-bridge-"])
    assert reg.pid_alive(os.getpid()) and not reg.pid_alive(0)


def test_sweep_removes_entries_whose_pid_now_runs_another_process(path: Path) -> None:
    """A pid reused after its agy-host died is alive but not the writer: the
    entry's start time (or, for an entry from before it was recorded, the
    process's command line) tells them apart."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        pid = sleeper.pid
        started = reg.process_started(pid)
        assert started is not None and started.isdigit()
        path.parent.mkdir(parents=True)
        reused = reg.entry(URL, "t", started=str(int(started) + 1))  # the dead writer's start time
        path.write_text(json.dumps({"mcpServers": {**FOREIGN, reg.entry_name(pid): reused}}))
        assert reg.sweep_stale(path) == [reg.entry_name(pid)]
        path.write_text(json.dumps({"mcpServers": {reg.entry_name(pid): reg.entry(URL, "t")}}))
        assert reg.sweep_stale(path) == [reg.entry_name(pid)], "a legacy entry of a pid that is not agy-host"
        same = reg.entry(URL, "t", started=started)
        path.write_text(json.dumps({"mcpServers": {reg.entry_name(pid): same}}))
        assert reg.sweep_stale(path) == [] and servers(path) == {reg.entry_name(pid): same}
    finally:
        sleeper.kill()
        sleeper.wait()


def test_our_entry_records_our_start_time(path: Path) -> None:
    reg.register(path, os.getpid(), URL, "t")
    headers = servers(path)[reg.entry_name(os.getpid())]["headers"]  # type: ignore[index]
    assert headers == {"x-bridge-token": "t", "x-agy-host-started": reg.process_started(os.getpid())}
    assert reg.sweep_stale(path) == []  # we are alive and ourselves


def test_set_disabled_flips_ours_only_and_is_idempotent(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcpServers": {**FOREIGN, "other": {"disabled": False}}}))
    reg.register(path, 77, URL, "t")
    before = path.stat().st_mtime_ns
    assert reg.set_disabled(path, True) == ["agy-host-bridge-77"]
    assert reg.set_disabled(path, True) == []
    assert servers(path)["agy-host-bridge-77"] == {
        "disabled": True,
        "headers": {"x-bridge-token": "t"},
        "serverUrl": URL,
    }
    assert servers(path)["other"] == {"disabled": False}
    assert reg.set_disabled(path, False) == ["agy-host-bridge-77"]
    assert path.stat().st_mtime_ns >= before
    assert reg.set_disabled(path.with_name("absent.json"), True) == []


def test_suppression_is_reference_counted(path: Path) -> None:
    cli = reg.CliRegistration(path, pid=77)
    assert cli.start(URL, "t")

    def disabled() -> object:
        return servers(path)["agy-host-bridge-77"]["disabled"]  # type: ignore[index]

    with cli.suppressed():
        assert disabled() is True
        with cli.suppressed():
            assert disabled() is True
        assert disabled() is True  # the inner release does not restore
    assert disabled() is False
    cli.stop()
    assert "agy-host-bridge-77" not in servers(path)
    cli.stop()  # a second stop is a no-op


def test_a_refused_file_fails_open(path: Path) -> None:
    warnings: list[str] = []
    cli = reg.CliRegistration(path, pid=77, warn=warnings.append)
    path.parent.mkdir(parents=True)
    path.write_text("{broken")
    assert not cli.start(URL, "t")
    with cli.suppressed():
        pass
    assert path.read_text() == "{broken"
    assert any("refusing to touch it" in w for w in warnings)


async def test_a_stream_json_run_registers_its_bridge_and_removes_it(tmp_path: Path) -> None:
    path = reg.config_file({"HOME": str(tmp_path / "home")})
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcpServers": {**FOREIGN, "agy-host-bridge-999999999": {"disabled": True}}}))
    async with running_bridge(tmp_path, engine="stream-json") as bridge:
        entry = servers(path)[f"agy-host-bridge-{os.getpid()}"]
        assert entry == {
            "disabled": False,
            "headers": {"x-bridge-token": bridge.service.token, "x-agy-host-started": reg.process_started(os.getpid())},
            "serverUrl": bridge.url,
        }
        assert "agy-host-bridge-999999999" not in servers(path)  # a dead host's entry was swept
        with delegated_agent():  # a one-shot agy -p runs: it must not see our bridge
            assert servers(path)[f"agy-host-bridge-{os.getpid()}"]["disabled"] is True  # type: ignore[index]
        assert servers(path)[f"agy-host-bridge-{os.getpid()}"]["disabled"] is False  # type: ignore[index]
    assert servers(path) == FOREIGN
    with delegated_agent():  # the guard went with the bridge
        assert servers(path) == FOREIGN


async def test_acp_runs_leave_the_cli_config_alone(tmp_path: Path) -> None:
    path = reg.config_file({"HOME": str(tmp_path / "home")})
    async with running_bridge(tmp_path, engine="acp"):
        assert not path.exists()
