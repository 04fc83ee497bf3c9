"""``agy-host acp install`` end to end: a loopback registry and archive server,
real archives made here, a real fake server binary inside them, the real
console script as a subprocess."""

from __future__ import annotations

import os
import resource
import signal
from pathlib import Path

import pytest
import trio

from agy_host_acp import layout

from .test_install_support import (
    AGY_HOST,
    BUILD,
    PLATFORM,
    LoopbackServer,
    World,
    archive_name,
    damage_member,
    make_archive,
    run_cli,
    sha256,
    symlink_archive,
    tree,
)

pytestmark = pytest.mark.skipif(not AGY_HOST.exists(), reason=f"agy-host console script not installed at {AGY_HOST}")


@pytest.fixture
async def server(nursery: trio.Nursery) -> LoopbackServer:
    srv = LoopbackServer()
    await nursery.start(srv.run)
    return srv


@pytest.fixture
def world(tmp_path: Path, server: LoopbackServer) -> World:
    return World(tmp_path, server)


async def test_install_downloads_verifies_unpacks_and_points_current(world: World) -> None:
    url, data = world.publish()
    res = await run_cli(world.env(), "acp", "install")
    assert res.returncode == 0, res.stderr
    build_dir = world.root / BUILD
    binary = build_dir / "agy_acp_server.par"
    assert binary.is_file() and (binary.stat().st_mode & 0o777) == 0o755
    assert (build_dir / "localharness_external").stat().st_size == 600_000
    assert (build_dir / "zip.sha256").read_text() == f"{sha256(data)}  {archive_name(BUILD)}\n"
    assert os.readlink(world.root / "current") == BUILD
    record = layout.read_record(build_dir)
    assert record is not None and (record.verified_by, record.url, record.platform) == ("pin", url, PLATFORM)
    assert tree(world.root) == sorted(
        [
            "current",
            BUILD,
            f"{BUILD}/agy_acp_server.par",
            f"{BUILD}/localharness_external",
            f"{BUILD}/zip.sha256",
            f"{BUILD}/install.json",
        ]
    )
    assert f"Installed Antigravity ACP server {BUILD} ({PLATFORM})" in res.stdout
    assert "verified against the pin table" in res.stdout
    assert "Next: agy-host acp-auth" in res.stdout
    # stderr is not a TTY: one plain line per tenth, ending at 100%.
    percent = [int(line.split()[1].rstrip("%")) for line in res.stderr.splitlines() if line.startswith("download: ")]
    assert percent[-1] == 100 and percent == sorted(set(percent)) and len(percent) <= 10
    assert "\r" not in res.stderr

    again = await run_cli(world.env(), "acp", "install")
    assert again.returncode == 0, again.stderr
    assert "already installed" in again.stdout
    assert len(world.server.requests_for(f"/releases/{archive_name(BUILD)}")) == 1


async def test_a_checksum_mismatch_installs_nothing(world: World) -> None:
    url, data = world.publish()
    world.pin(BUILD, url, data, sha="0" * 64)
    res = await run_cli(world.env(), "acp", "install")
    assert res.returncode == 1
    assert f"checksum mismatch for {archive_name(BUILD)}: expected SHA-256 {'0' * 64}, got {sha256(data)}" in res.stderr
    assert "nothing was installed" in res.stderr
    assert tree(world.root) == []


async def test_a_size_that_differs_from_the_pin_is_refused_before_downloading(world: World) -> None:
    url, data = world.publish()
    world.pin(BUILD, url, data, size=len(data) + 1)
    res = await run_cli(world.env(), "acp", "install")
    assert res.returncode == 1
    assert f"the server offers {len(data)} bytes" in res.stderr and "pinned archive is" in res.stderr
    assert tree(world.root) == []


async def test_a_file_that_is_not_a_zip_installs_nothing(world: World) -> None:
    world.publish(data=b"<html>this is not an archive</html>" * 100)
    res = await run_cli(world.env(), "acp", "install")
    assert res.returncode == 1
    assert "corrupt or truncated" in res.stderr and "nothing was installed" in res.stderr
    assert tree(world.root) == []


async def test_a_damaged_member_fails_its_crc_and_installs_nothing(world: World) -> None:
    good = make_archive(world.tmp / "good.zip")
    world.publish(data=damage_member(good))
    res = await run_cli(world.env(), "acp", "install")
    assert res.returncode == 1
    assert "corrupt" in res.stderr and "CRC" in res.stderr
    assert tree(world.root) == []


async def test_members_that_escape_or_link_out_are_refused(world: World) -> None:
    evil = make_archive(world.tmp / "evil.zip", extra=[("../escaped.txt", b"x")])
    world.publish(data=evil)
    res = await run_cli(world.env(), "acp", "install")
    assert res.returncode == 1
    assert "points outside the install directory" in res.stderr
    assert not (world.root.parent / "escaped.txt").exists()
    assert tree(world.root) == []

    world.publish(data=symlink_archive(world.tmp / "link.zip"))
    res = await run_cli(world.env(), "acp", "install")
    assert res.returncode == 1
    assert "is a symlink" in res.stderr
    assert tree(world.root) == []


async def test_an_archive_without_the_server_binary_is_refused(world: World) -> None:
    world.publish(data=make_archive(world.tmp / "nobin.zip", binary=False))
    res = await run_cli(world.env(), "acp", "install")
    assert res.returncode == 1
    assert "has no agy_acp_server.par at its top level" in res.stderr
    assert tree(world.root) == []


async def test_an_interrupted_download_resumes_within_the_same_run(world: World) -> None:
    world.publish(mode="drop-once")
    res = await run_cli(world.env(), "acp", "install")
    assert res.returncode == 0, res.stderr
    assert "resuming (2 of 3)" in res.stderr
    seen = world.server.requests_for(f"/releases/{archive_name(BUILD)}")
    assert len(seen) == 2
    assert "range" not in seen[0].headers
    assert seen[1].headers["range"].startswith("bytes=") and seen[1].headers["range"] != "bytes=0-"
    assert seen[1].headers["if-range"].startswith('"')
    assert (world.root / BUILD / "agy_acp_server.par").is_file()
    assert not list(world.root.glob("*.part*"))


async def test_a_server_without_range_support_gets_a_clean_restart(world: World) -> None:
    world.publish(mode="no-range")
    res = await run_cli(world.env(), "acp", "install")
    assert res.returncode == 0, res.stderr
    assert "does not support resuming; starting again from the beginning" in res.stderr
    assert os.readlink(world.root / "current") == BUILD


async def test_a_download_cut_every_time_keeps_the_part_and_the_next_run_resumes(world: World) -> None:
    _url, data = world.publish(mode="truncate")
    res = await run_cli(world.env(), "acp", "install")
    assert res.returncode == 1
    assert "interrupted" in res.stderr and "run the same command again to resume" in res.stderr
    part = world.root / f"{archive_name(BUILD)}.part"
    assert part.is_file() and 0 < part.stat().st_size < len(data)
    assert not (world.root / BUILD).exists() and not (world.root / "current").exists()

    world.server.routes[f"/releases/{archive_name(BUILD)}"].mode = "ok"
    kept = part.stat().st_size
    res = await run_cli(world.env(), "acp", "install")
    assert res.returncode == 0, res.stderr
    assert world.server.requests_for(f"/releases/{archive_name(BUILD)}")[-1].headers["range"] == f"bytes={kept}-"
    assert (world.root / BUILD / "zip.sha256").read_text().startswith(sha256(data))
    assert not part.exists()


async def test_a_missing_archive_is_an_http_error(world: World) -> None:
    url, _data = world.publish()
    world.server.routes.pop(f"/releases/{archive_name(BUILD)}")
    res = await run_cli(world.env(), "acp", "install")
    assert res.returncode == 1
    assert f"cannot download {url}: HTTP 404" in res.stderr
    assert tree(world.root) == []


def _limit_file_size() -> None:
    # A real write failure without a full disk: the kernel refuses to grow any
    # file past 64 KiB (EFBIG); SIGXFSZ is ignored so the write fails instead
    # of killing the process.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))


async def test_a_write_failure_while_downloading_leaves_nothing(world: World) -> None:
    world.publish()
    res = await run_cli(world.env(), "acp", "install", preexec=_limit_file_size)
    assert res.returncode == 1
    assert "file size limit was reached" in res.stderr and "free some space" in res.stderr
    assert tree(world.root) == []


async def test_an_unknown_platform_is_refused(world: World) -> None:
    world.publish()
    res = await run_cli(world.env(), "acp", "install", "--platform", "sunos-sparc")
    assert res.returncode == 1
    assert f"build {BUILD} has no archive for sunos-sparc (pinned platforms: {PLATFORM})" in res.stderr
    assert tree(world.root) == []


async def test_the_default_stays_on_the_pin_when_the_registry_moves_on(world: World) -> None:
    url, data = world.archive(BUILD)
    world.pin(BUILD, url, data)
    newer_url, _ = world.archive("9.9.1")
    world.registry("9.9.1", newer_url)
    res = await run_cli(world.env(), "acp", "install")
    assert res.returncode == 0, res.stderr
    assert "the registry now offers build 9.9.1; this install stays on 9.9.0" in res.stderr
    assert os.readlink(world.root / "current") == BUILD
    assert world.server.requests_for(f"/releases/{archive_name('9.9.1')}") == []


async def test_an_unpinned_build_is_refused_unless_a_checksum_is_given(world: World) -> None:
    world.publish()
    newer_url, newer = world.archive("9.9.1")
    world.registry("9.9.1", newer_url)
    refused = await run_cli(world.env(), "acp", "install", "--build", "9.9.1")
    assert refused.returncode == 1
    assert "build 9.9.1 has no pinned checksum" in refused.stderr and "--sha256" in refused.stderr
    assert tree(world.root) == []

    bad = await run_cli(world.env(), "acp", "install", "--build", "9.9.1", "--sha256", "xyz")
    assert bad.returncode == 2 and "--sha256 must be 64 hex digits" in bad.stderr

    ok = await run_cli(world.env(), "acp", "install", "--build", "9.9.1", "--sha256", sha256(newer))
    assert ok.returncode == 0, ok.stderr
    assert "verified against --sha256" in ok.stdout
    assert os.readlink(world.root / "current") == "9.9.1"


async def test_build_latest_installs_unpinned_with_a_loud_warning(world: World) -> None:
    world.publish()
    newer_url, newer = world.archive("9.9.1")
    world.registry("9.9.1", newer_url)
    res = await run_cli(world.env(), "acp", "install", "--build", "latest")
    assert res.returncode == 0, res.stderr
    assert "WARNING: build 9.9.1 has no pinned checksum; this install is UNVERIFIED" in res.stderr
    assert "UNVERIFIED: no pin for this build" in res.stdout
    record = layout.read_record(world.root / "9.9.1")
    assert record is not None and record.verified_by == "none" and record.sha256 == sha256(newer)


async def test_an_unreachable_registry_falls_back_to_the_pinned_url(world: World) -> None:
    world.publish()
    env = world.env(AGY_ACP_REGISTRY_URL="http://127.0.0.1:9/agent.json")
    res = await run_cli(env, "acp", "install")
    assert res.returncode == 0, res.stderr
    assert "the registry could not be read" in res.stderr and "using the pinned URL" in res.stderr
    latest = await run_cli(env, "acp", "install", "--build", "latest", "--force")
    assert latest.returncode == 1 and "--build latest needs the registry" in latest.stderr


async def test_plain_http_to_another_host_is_refused(world: World) -> None:
    world.publish()
    res = await run_cli(world.env(AGY_ACP_REGISTRY_URL="http://example.invalid/agent.json"), "acp", "install")
    assert res.returncode == 0, res.stderr  # the pinned loopback URL still works
    assert "refusing plain http to a non-loopback host" in res.stderr


async def test_another_running_install_is_refused_at_once(world: World) -> None:
    world.publish()
    with layout.install_lock(world.root):
        res = await run_cli(world.env(), "acp", "install")
    assert res.returncode == 1
    assert "another `agy-host acp install` is running" in res.stderr


async def test_force_replaces_a_build_and_a_stale_temp_dir_is_swept(world: World) -> None:
    world.publish()
    assert (await run_cli(world.env(), "acp", "install")).returncode == 0
    (world.root / BUILD / "stray-file").write_text("from the old install")
    (world.root / ".unpack-9.9.0-dead").mkdir()
    res = await run_cli(world.env(), "acp", "install", "--force")
    assert res.returncode == 0, res.stderr
    assert "removed what an interrupted install left: .unpack-9.9.0-dead" in res.stderr
    assert not (world.root / BUILD / "stray-file").exists()
    assert not [p for p in world.root.iterdir() if p.name.startswith((".unpack-", ".old-", ".current-"))]


async def test_installing_an_installed_build_switches_current_without_downloading(world: World) -> None:
    world.publish()
    assert (await run_cli(world.env(), "acp", "install")).returncode == 0
    newer_url, newer = world.archive("9.9.1")
    world.pin("9.9.1", newer_url, newer)
    assert (await run_cli(world.env(), "acp", "install", "--build", "9.9.1")).returncode == 0
    assert os.readlink(world.root / "current") == "9.9.1"
    back = await run_cli(world.env(), "acp", "install", "--build", BUILD)
    assert back.returncode == 0, back.stderr
    assert "already installed" in back.stdout and "switched to it" in back.stdout
    assert os.readlink(world.root / "current") == BUILD
    assert len(world.server.requests_for(f"/releases/{archive_name(BUILD)}")) == 1


async def test_an_install_root_elsewhere_says_how_the_engine_finds_it(world: World) -> None:
    world.publish()
    elsewhere = world.tmp / "opt-agy"
    res = await run_cli(world.env(), "acp", "install", "--root", str(elsewhere))
    assert res.returncode == 0, res.stderr
    assert os.readlink(elsewhere / "current") == BUILD
    assert f"AGY_ACP_BIN={elsewhere / 'current' / 'agy_acp_server.par'}" in res.stdout
    assert tree(world.root) == []
    # with AGY_ACP_HOME the engine itself looks there: no hint needed
    other = world.tmp / "opt-agy-2"
    res = await run_cli(world.env(AGY_ACP_HOME=str(other)), "acp", "install")
    assert res.returncode == 0, res.stderr
    assert "AGY_ACP_BIN=" not in res.stdout


async def test_a_bad_pin_file_is_a_clear_error(world: World) -> None:
    world.publish()
    world.pin_file.write_text('[builds."9.9.0".archives.linux-x86_64]\nsha256 = "abc"\n')
    res = await run_cli(world.env(), "acp", "install")
    assert res.returncode == 1
    assert "sha256 is not 64 hex digits" in res.stderr
