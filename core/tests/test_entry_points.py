"""The entry-point scan is shared by every lookup of a command, and follows sys.path."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

import pytest

from agy_host import entry_points
from agy_host.engine.base import ENGINE_GROUP
from agy_host.plugins import PLUGIN_GROUP
from agy_host.testing.isolation import install_plugin


def _pairs(eps: metadata.EntryPoints) -> list[tuple[str, str, str]]:
    return sorted((ep.name, ep.value, ep.dist.name if ep.dist else "") for ep in eps)


@pytest.mark.parametrize("group", [PLUGIN_GROUP, ENGINE_GROUP, "no.such.group"])
def test_a_group_is_what_importlib_metadata_finds(group: str) -> None:
    entry_points.forget()
    assert _pairs(entry_points.group(group)) == _pairs(metadata.entry_points(group=group))


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
    real = metadata.entry_points
    monkeypatch.setattr(metadata, "entry_points", lambda: scans.append(1) or real())
    for group in (PLUGIN_GROUP, ENGINE_GROUP, ENGINE_GROUP):
        entry_points.group(group)
    assert scans == [1]
