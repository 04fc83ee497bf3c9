"""``agy-host acp status`` against real installs made by ``acp install``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import trio

from .test_install_support import (
    AGY_HOST,
    BUILD,
    LoopbackServer,
    World,
    fake_server_script,
    make_archive,
    run_cli,
    sha256,
)

pytestmark = pytest.mark.skipif(not AGY_HOST.exists(), reason=f"agy-host console script not installed at {AGY_HOST}")

AGENT_INFO = '{"name": "antigravity-acp", "title": "Google Antigravity", "version": "agy_acp_server_9.9.0"}'


@pytest.fixture
async def world(tmp_path: Path, nursery: trio.Nursery) -> World:
    srv = LoopbackServer()
    await nursery.start(srv.run)
    return World(tmp_path, srv)


async def installed(world: World, data: bytes | None = None) -> bytes:
    _url, data = world.publish(data=data)
    res = await run_cli(world.env(), "acp", "install")
    assert res.returncode == 0, res.stderr
    return data


async def test_status_of_a_working_signed_in_install(world: World) -> None:
    data = await installed(world)
    res = await run_cli(world.env(AGY_FAKE_ACP_AGENT_INFO=AGENT_INFO), "acp", "status")
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"builds         {BUILD} [current]  sha256 {sha256(data)}  matches pin, verified by pin" in res.stdout
    assert f"current        {BUILD}" in res.stdout
    assert "(install dir; this install)" in res.stdout
    assert "start          ok: initialize answered in " in res.stdout
    assert "(agy_acp_server_9.9.0, Google Antigravity)" in res.stdout
    assert "auth           signed in (session/new works)" in res.stdout
    assert res.stdout.rstrip().endswith("ok: installed, starts, signed in")


async def test_status_json_has_the_handshake_time_and_auth_state(world: World) -> None:
    await installed(world)
    res = await run_cli(world.env(), "acp", "status", "--format", "json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["ok"] is True
    assert doc["current"] == BUILD and doc["builds"][0]["pin_state"] == "matches pin"
    assert doc["probe"]["auth"] == "signed-in"
    assert doc["probe"]["handshake_seconds"] > 0
    assert doc["probe_target"].endswith("current/agy_acp_server.par")


async def test_status_says_sign_in_required_and_exits_1(world: World) -> None:
    await installed(world)
    res = await run_cli(world.env(AGY_FAKE_ACP_SCENARIO="auth-required"), "acp", "status")
    assert res.returncode == 1
    assert "auth           sign-in required: No authentication method selected" in res.stdout
    assert "problem: not signed in: run `agy-host acp-auth`" in res.stdout


async def test_status_with_nothing_installed(world: World) -> None:
    world.publish()
    res = await run_cli(world.env(), "acp", "status")
    assert res.returncode == 1
    assert "builds         (none)" in res.stdout
    assert "problem: no Antigravity ACP server is installed here: run `agy-host acp install`" in res.stdout


async def test_status_shows_checksum_drift(world: World) -> None:
    await installed(world)
    record = world.root / BUILD / "zip.sha256"
    record.write_text(f"{'1' * 64}  whatever.zip\n")
    res = await run_cli(world.env(), "acp", "status", "--no-probe")
    assert res.returncode == 1
    assert "differs from pin" in res.stdout
    assert f"the recorded archive SHA-256 {'1' * 64} differs from its pin" in res.stdout
    assert "initialize" not in res.stdout


async def test_status_of_a_binary_that_does_not_start(world: World) -> None:
    broken = make_archive(world.tmp / "broken.zip", script=fake_server_script(exit_code=7))
    await installed(world, broken)
    res = await run_cli(world.env(), "acp", "status")
    assert res.returncode == 1
    assert "start          FAILED: Antigravity ACP server exited before answering initialize" in res.stdout
    assert "agent exited with code 7: fake agy: refusing to start" in res.stdout
    assert "problem: the server did not complete initialize: Antigravity ACP server exited" in res.stdout


async def test_status_without_probe_and_with_a_dangling_current(world: World) -> None:
    await installed(world)
    ok = await run_cli(world.env(), "acp", "status", "--no-probe")
    assert ok.returncode == 0, ok.stdout
    assert "initialize" not in ok.stdout
    os.unlink(world.root / "current")
    os.symlink("0.0.0", world.root / "current")
    res = await run_cli(world.env(), "acp", "status", "--no-probe")
    assert res.returncode == 1
    assert "`current` points at 0.0.0, which is not installed" in res.stdout


async def test_status_warns_about_unverified_builds_and_partial_downloads(world: World) -> None:
    await installed(world)
    newer_url, _ = world.archive("9.9.1")
    world.registry("9.9.1", newer_url)
    assert (await run_cli(world.env(), "acp", "install", "--build", "latest")).returncode == 0
    (world.root / "agy-acp-server-9.9.2-linux-x86_64.zip.part").write_bytes(b"partial")
    res = await run_cli(world.env(), "acp", "status", "--no-probe")
    assert res.returncode == 0, res.stdout
    assert "9.9.1 [current]" in res.stdout and "  no pin, UNVERIFIED" in res.stdout
    assert "warning: build 9.9.1 was installed unverified" in res.stdout
    assert "warning: a download was interrupted; `agy-host acp install` resumes it" in res.stdout


async def test_status_says_when_turns_run_another_binary(world: World) -> None:
    await installed(world)
    other = world.tmp / "elsewhere" / "agy_acp_server.par"
    other.parent.mkdir()
    other.write_text(fake_server_script())
    other.chmod(0o755)
    res = await run_cli(world.env(AGY_ACP_BIN=str(other)), "acp", "status", "--no-probe")
    assert f"engine uses    {other} (AGY_ACP_BIN; not this install)" in res.stdout
    assert f"warning: turns run {other} (AGY_ACP_BIN), not this install's current build" in res.stdout


async def test_status_rejects_an_unknown_format(world: World) -> None:
    res = await run_cli(world.env(), "acp", "status", "--format", "yaml")
    assert res.returncode == 2
    assert "unknown --format 'yaml'" in res.stderr
