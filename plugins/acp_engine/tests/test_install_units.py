"""The install building blocks one at a time: pins, registry names, URL
policy, progress output, archive checks, and the resumable download (against
the loopback server, in process)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import trio

from agy_host_acp import layout, netio, pins, registry
from agy_host_acp.download import DownloadError, download, meta_path
from agy_host_acp.progress import Progress, human
from agy_host_acp.unpack import UnpackError, extract, inspect

from .test_install_support import LoopbackServer, make_archive, sha256, symlink_archive

SPEC_1_3_0_LINUX = "9fb60956af0a9d76220a4db91ca9ac88e2a2372ad68f985ab5fceace6b825b96"


# -- pins ------------------------------------------------------------------------------


def test_the_shipped_pins_hold_the_spec_value_and_say_where_each_came_from() -> None:
    table = pins.shipped()
    assert table.default == "1.3.0"
    pin = table.lookup("1.3.0", "linux-x86_64")
    assert pin is not None and pin.sha256 == SPEC_1_3_0_LINUX and pin.bytes == 333_727_150
    assert pin.url.endswith("/agy-acp-server-1.3.0-linux-x86_64.zip")
    count = 0
    for build, entry in table.builds.items():
        for platform, p in entry.archives.items():
            count += 1
            assert p.source, f"{build} {platform} has no source"
            assert pins.valid_sha256(p.sha256)
            assert registry.build_from_archive(registry.archive_name(p.url)) == build
    assert count >= 20


def test_builds_resolve_by_registry_or_agent_version() -> None:
    table = pins.shipped()
    assert table.canonical("1.1.1") == "agy_acp_server_1.1.1"
    assert table.canonical("agy_acp_server_1.3.0") == "1.3.0"
    assert table.canonical("1.0.0") == "agy_acp_server_20260818_01_RC01"
    assert table.canonical("7.7.7") is None


def test_a_user_pin_file_is_merged_over_the_shipped_table(tmp_path: Path) -> None:
    path = tmp_path / "pins.toml"
    path.write_text(
        'default = "1.4.0"\n'
        '[builds."1.4.0".archives.linux-x86_64]\nsha256 = "' + "a" * 64 + '"\n'
        '[builds."1.3.0".archives.linux-x86_64]\nsha256 = "' + "B" * 64 + '"\n'
    )
    table = pins.load(str(path), {})
    assert table.default == "1.4.0"
    assert table.lookup("1.4.0", "linux-x86_64").sha256 == "a" * 64  # type: ignore[union-attr]
    assert table.lookup("1.3.0", "linux-x86_64").sha256 == "b" * 64  # type: ignore[union-attr]
    assert table.lookup("1.3.0", "darwin-aarch64") == pins.shipped().lookup("1.3.0", "darwin-aarch64")
    assert pins.load(None, {"AGY_ACP_PINS": str(path)}).default == "1.4.0"
    assert pins.shipped().lookup("1.3.0", "linux-x86_64").sha256 == SPEC_1_3_0_LINUX  # type: ignore[union-attr]


def test_bad_pin_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(pins.PinError, match="does not exist"):
        pins.load(str(tmp_path / "missing.toml"), {})
    bad = tmp_path / "bad.toml"
    bad.write_text("this is = = not toml")
    with pytest.raises(pins.PinError, match="cannot be read"):
        pins.load(str(bad), {})


# -- registry --------------------------------------------------------------------------


def test_build_ids_come_from_archive_names() -> None:
    assert registry.build_from_archive("agy-acp-server-1.3.0-linux-x86_64.zip") == "1.3.0"
    rc01 = "agy-acp-server-agy_acp_server_20260818_01_RC01-darwin-arm64.zip"
    assert registry.build_from_archive(rc01) == "agy_acp_server_20260818_01_RC01"
    assert (
        registry.build_from_archive("agy-acp-server-agy_acp_server_1.1.1-windows-arm64.zip") == "agy_acp_server_1.1.1"
    )
    with pytest.raises(registry.RegistryError, match="unexpected archive name"):
        registry.build_from_archive("agy-acp-server-1.3.0.tar.gz")


def test_platform_keys_as_the_registry_names_them() -> None:
    assert registry.platform_key("Linux", "x86_64") == "linux-x86_64"
    assert registry.platform_key("Linux", "aarch64") == "linux-aarch64"
    assert registry.platform_key("Darwin", "arm64") == "darwin-aarch64"
    assert registry.platform_key("Windows", "AMD64") == "windows-x86_64"
    with pytest.raises(registry.RegistryError, match=r"unknown platform sunos-sparc"):
        registry.platform_key("SunOS", "sparc")
    with pytest.raises(registry.RegistryError, match=r"unknown platform linux-riscv64"):
        registry.platform_key("Linux", "riscv64")


def test_the_registry_entry_is_checked() -> None:
    good = json.dumps({"id": "antigravity-acp", "distribution": {"binary": {"linux-x86_64": {"archive": "x"}}}})
    assert registry.parse_entry(good.encode(), "u").distribution.binary["linux-x86_64"].archive == "x"
    with pytest.raises(registry.RegistryError, match="is for 'gemini'"):
        registry.parse_entry(b'{"id": "gemini"}', "u")
    with pytest.raises(registry.RegistryError, match="not valid"):
        registry.parse_entry(b"<html>", "u")


def test_url_policy() -> None:
    for ok in ("https://dl.google.com/x.zip", "http://127.0.0.1:8080/x", "http://localhost/x", "file:///tmp/x"):
        netio.check_url(ok)
    with pytest.raises(netio.UrlRefused, match="plain http to a non-loopback host"):
        netio.check_url("http://dl.google.com/x.zip")
    with pytest.raises(netio.UrlRefused, match="unsupported URL scheme"):
        netio.check_url("ftp://example.com/x")


# -- progress --------------------------------------------------------------------------


def test_progress_on_a_terminal_redraws_one_bar() -> None:
    out = io.StringIO()
    bar = Progress(out, tty=True)
    bar.start(0, 1000)
    bar.update(1000)
    bar.finish()
    text = out.getvalue()
    assert text.startswith("\rdownload [") and "100% (1.0 KB of 1.0 KB)" in text and text.endswith("\n")
    assert "#" * 28 in text


def test_progress_elsewhere_is_a_line_per_tenth() -> None:
    out = io.StringIO()
    bar = Progress(out, tty=False)
    bar.start(0, 1000)
    for done in range(0, 1001, 25):
        bar.update(done)
    bar.finish()
    lines = out.getvalue().splitlines()
    assert lines == [f"download: {p}% ({human(p * 10)} of 1.0 KB)" for p in range(10, 101, 10)]
    assert "\r" not in out.getvalue()
    quiet = io.StringIO()
    off = Progress(quiet, tty=False, enabled=False)
    off.start(0, 10)
    off.update(10)
    assert quiet.getvalue() == ""


# -- archives --------------------------------------------------------------------------


def test_archive_checks(tmp_path: Path) -> None:
    good = tmp_path / "good.zip"
    make_archive(good, harness_bytes=1000)
    assert {i.filename for i in inspect(good, "agy_acp_server.par")} == {"agy_acp_server.par", "localharness_external"}
    with pytest.raises(UnpackError, match=r"has no agy_acp_server\.exe"):
        inspect(good, "agy_acp_server.exe")
    absolute = tmp_path / "abs.zip"
    make_archive(absolute, harness_bytes=10, extra=[("/etc/cron.d/x", b"x")])
    with pytest.raises(UnpackError, match="absolute path"):
        inspect(absolute, "agy_acp_server.par")
    link = tmp_path / "link.zip"
    symlink_archive(link)
    with pytest.raises(UnpackError, match="is a symlink"):
        inspect(link, "agy_acp_server.par")
    dest = tmp_path / "dest"
    dest.mkdir()
    extract(good, dest, "agy_acp_server.par")
    assert (dest / "agy_acp_server.par").stat().st_mode & 0o777 == 0o755
    assert (dest / "localharness_external").stat().st_mode & 0o777 == 0o755


def test_current_is_switched_by_rename(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    layout.point_current(tmp_path, "a")
    layout.point_current(tmp_path, "b")
    assert layout.current_build(tmp_path) == "b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "current"]
    (tmp_path / "current").unlink()
    (tmp_path / "current").mkdir()
    with pytest.raises(OSError, match="is not a symlink"):
        layout.point_current(tmp_path, "a")


# -- download, in process --------------------------------------------------------------


@pytest.fixture
async def server(nursery: trio.Nursery) -> LoopbackServer:
    srv = LoopbackServer()
    await nursery.start(srv.run)
    return srv


async def test_a_complete_part_file_is_not_downloaded_again(tmp_path: Path, server: LoopbackServer) -> None:
    data = make_archive(tmp_path / "a.zip", harness_bytes=5000)
    url = server.add("/a.zip", data)
    part = tmp_path / "a.zip.part"
    part.write_bytes(data)
    meta_path(part).write_text(json.dumps({"url": url, "etag": "", "last_modified": ""}))
    got = await download(url, part, expected_size=len(data), progress=Progress(io.StringIO(), enabled=False))
    assert got.sha256 == sha256(data) and got.resumed
    assert server.requests_for("/a.zip")[0].headers["range"] == f"bytes={len(data)}-"


async def test_a_part_file_of_another_url_is_thrown_away(tmp_path: Path, server: LoopbackServer) -> None:
    data = make_archive(tmp_path / "a.zip", harness_bytes=5000)
    url = server.add("/a.zip", data)
    part = tmp_path / "a.zip.part"
    part.write_bytes(b"garbage from another download")
    meta_path(part).write_text(json.dumps({"url": "http://127.0.0.1:1/other.zip"}))
    got = await download(url, part, progress=Progress(io.StringIO(), enabled=False))
    assert got.sha256 == sha256(data) and not got.resumed
    assert "range" not in server.requests_for("/a.zip")[0].headers


async def test_an_http_error_is_not_retried(tmp_path: Path, server: LoopbackServer) -> None:
    url = server.add("/gone.zip", b"", status=500)
    with pytest.raises(DownloadError, match="HTTP 500"):
        await download(url, tmp_path / "g.part", progress=Progress(io.StringIO(), enabled=False))
    assert len(server.requests_for("/gone.zip")) == 1
