"""The entry-point scan is shared by every lookup of a command, follows
sys.path, and finds what importlib.metadata finds without importing it."""

from __future__ import annotations

import sys
import zipfile
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from processes import python_says

from agy_host import entry_points
from agy_host.engine.base import ENGINE_GROUP
from agy_host.plugins import PLUGIN_GROUP
from agy_host.testing.isolation import install_plugin


def _rows(eps: Iterable[Any]) -> list[tuple[str, str, str, str, str]]:
    """Each entry point as importlib.metadata's order gives it (not sorted: the order matters)."""
    return [
        (ep.group, ep.name, ep.value, ep.dist.name if ep.dist else "", ep.dist.version if ep.dist else "") for ep in eps
    ]


def _importlib_groups() -> set[str]:
    found: Any = metadata.entry_points()
    return {ep.group for eps in dict.values(found) for ep in eps}


def _same_as_importlib(groups: Iterable[str]) -> None:
    entry_points.forget()
    for group in groups:
        assert _rows(entry_points.group(group)) == _rows(metadata.entry_points(group=group)), group


@pytest.mark.parametrize("group", [PLUGIN_GROUP, ENGINE_GROUP, "no.such.group"])
def test_a_group_is_what_importlib_metadata_finds(group: str) -> None:
    _same_as_importlib([group])


def test_every_installed_group_is_what_importlib_metadata_finds() -> None:
    _same_as_importlib(_importlib_groups())


def _dist(root: Path, folder: str, text: str, name: str, version: str, *, meta_file: str = "METADATA") -> None:
    info = root / folder
    info.mkdir(parents=True)
    (info / "entry_points.txt").write_text(text)
    body = "Summary: one line\n  folded on\n\nbody: not a header\n"
    (info / meta_file).write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{body}")


def test_shadowing_names_comments_and_metadata_as_importlib_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    # The same distribution (by normalized name) in two places: the first on sys.path wins.
    _dist(first, "Agyt.Shadow-2.0.dist-info", "[agyt.g]\nshadow = new_mod\n", "agyt-shadow", "2.0")
    _dist(second, "agyt_shadow-1.0.dist-info", "[agyt.g]\nshadow = old_mod\n", "agyt_shadow", "1.0")
    # Comments, blank lines, spaces, extras, '=' in a value, a line before any section.
    text = "stray = ignored\n# comment\n\n[agyt.g]\n  spaced = pkg.mod : obj.attr [extra]  \n[agyt.h]\nodd = a=b\n"
    _dist(second, "agyt_other-0.1.dist-info", text, "agyt-other", "0.1")
    # A legacy egg-info folder (PKG-INFO), and a folder with no entry points at all.
    _dist(second, "agyt_egg.egg-info", "[agyt.g]\negg = egg_mod:f\n", "agyt-egg", "3", meta_file="PKG-INFO")
    (second / "agyt_empty-1.dist-info").mkdir()
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    _same_as_importlib(["agyt.g", "agyt.h"])
    rows = {ep.name: ep for ep in entry_points.group("agyt.g")}
    assert rows["shadow"].value == "new_mod"
    assert rows["spaced"].value == "pkg.mod : obj.attr [extra]"
    assert rows["shadow"].dist.metadata["Summary"] == "one line folded on"
    assert "body" not in rows["shadow"].dist.metadata


def test_an_entry_point_loads_its_object(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(tmp_path, "agyt_ep_load", "class Outer:\n    class Inner:\n        pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    info = tmp_path / "agyt_ep_load-1.0.dist-info" / "entry_points.txt"
    info.write_text("[agyt.load]\nmodule = agyt_ep_load\nnested = agyt_ep_load:Outer.Inner [x]\n")
    try:
        loaded = {ep.name: ep.load() for ep in entry_points.group("agyt.load")}
        assert loaded["module"].__name__ == "agyt_ep_load"
        assert loaded["nested"] is loaded["module"].Outer.Inner
    finally:
        sys.modules.pop("agyt_ep_load", None)


def test_a_zip_on_sys_path_is_left_to_importlib_metadata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("agyt_zipped-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: agyt-zipped\nVersion: 1.0\n")
        zf.writestr("agyt_zipped-1.0.dist-info/entry_points.txt", "[agyt.zip]\nzipped = agyt_zipped\n")
    monkeypatch.syspath_prepend(str(archive))
    _same_as_importlib(["agyt.zip"])
    assert [ep.name for ep in entry_points.group("agyt.zip")] == ["zipped"]


def test_a_new_site_directory_on_sys_path_is_scanned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = {ep.name for ep in entry_points.group(PLUGIN_GROUP)}
    install_plugin(tmp_path, "agy_ep_probe", "X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert {ep.name for ep in entry_points.group(PLUGIN_GROUP)} == before | {"agy_ep_probe"}
    monkeypatch.undo()
    assert sys.path[0] != str(tmp_path)
    assert {ep.name for ep in entry_points.group(PLUGIN_GROUP)} == before


def test_one_scan_serves_every_group(monkeypatch: pytest.MonkeyPatch) -> None:
    entry_points.forget()
    scans: list[int] = []
    real = entry_points._scan
    monkeypatch.setattr(entry_points, "_scan", lambda path: scans.append(1) or real(path))
    for group in (PLUGIN_GROUP, ENGINE_GROUP, ENGINE_GROUP):
        entry_points.group(group)
    assert scans == [1]


def test_the_scan_does_not_import_importlib_metadata() -> None:
    # importlib.metadata brings email, zipfile, csv and inspect: about 20 ms of every command.
    code = (
        "import sys; from agy_host import entry_points;"
        "eps = entry_points.group('agy_host') + entry_points.group('agy_host.engines');"
        "[ep.dist.name for ep in eps];"
        "print(len(eps) > 0, sorted(m for m in ('importlib.metadata', 'email', 'zipfile') if m in sys.modules))"
    )
    assert python_says(code) == "True []"
