"""Which keeper a command talks to: one per build (keeper/place.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agy_host.keeper import place


def test_installing_or_removing_a_distribution_is_a_new_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A keeper loads its plugins once: a plugin installed after it started
    must not be missed by the next command (the new-user trial's render
    plugin was never called on warm turns), so the build changes and the
    command gets a keeper of its own."""
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setattr(sys, "path", [sys.path[0], str(site), *sys.path[1:]])
    before = place.build_stamp()
    assert place.build_stamp() == before, "stable while nothing changes"
    (site / "my_render_plugin-0.1.0.dist-info").mkdir()
    with_plugin = place.build_stamp()
    assert with_plugin != before
    (site / "my_render_plugin-0.1.0.dist-info").rename(site / "my_render_plugin-0.2.0.dist-info")
    assert place.build_stamp() not in (before, with_plugin), "an upgrade too"
    (site / "my_render_plugin-0.2.0.dist-info").rmdir()
    assert place.build_stamp() == before


def test_the_script_folder_does_not_change_the_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``sys.path[0]`` is the console script's folder in a command and the
    current folder in the keeper it starts: both must compute one build."""
    (tmp_path / "stray-1.0.dist-info").mkdir()
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path[1:]])
    in_command = place.build_stamp()
    monkeypatch.setattr(sys, "path", ["", *sys.path[1:]])
    assert place.build_stamp() == in_command
