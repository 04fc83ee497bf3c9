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


def test_the_keeper_lock_is_taken_only_on_the_file_its_path_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A keeper that ends removes its lock file (and its folder when empty);
    a starting one that locked the file just removed would hold a lock no
    one else sees, so it takes the new file instead."""
    import fcntl
    import os

    from agy_host.keeper import __main__ as keeper_main

    path = tmp_path / "run" / "keeper-b.lock"
    first = keeper_main.take_lock(path)
    assert first is not None and keeper_main.take_lock(path) is None, "one keeper per build"
    keeper_main.release_lock(first, path)
    assert not path.parent.exists(), "an empty runtime folder goes with the last keeper"

    real_flock = fcntl.flock
    locked: list[int] = []

    def flock_while_the_old_keeper_ends(fd: int, op: int) -> None:
        real_flock(fd, op)
        locked.append(fd)
        if len(locked) == 1:  # the file this keeper locked is removed right then
            path.unlink()

    monkeypatch.setattr(keeper_main.fcntl, "flock", flock_while_the_old_keeper_ends)
    second = keeper_main.take_lock(path)
    assert second is not None and len(locked) == 2, "it took the new file, not the one removed"
    assert os.fstat(second).st_ino == os.stat(path).st_ino
    keeper_main.release_lock(second, path)
