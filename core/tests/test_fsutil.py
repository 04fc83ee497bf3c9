"""Atomic writes sweep what a killed writer stranded, and only that."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from agy_host import fsutil


def stranded(path: Path, tag: str, age_s: float) -> Path:
    temp = path.with_name(f".{path.name}.{tag}.tmp")
    temp.write_bytes(b'{"version": 1, "bind')  # a torn copy of a write that never happened
    then = time.time() - age_s
    os.utime(temp, (then, then))
    return temp


def test_a_write_sweeps_stale_temps_of_its_file_and_keeps_live_ones(tmp_path: Path) -> None:
    path = tmp_path / "sessions.json"
    old = stranded(path, "old", fsutil.STALE_TEMP_S * 2)
    live = stranded(path, "live", 1)  # another writer may be between mkstemp and replace
    other = stranded(tmp_path / "config.toml", "old", fsutil.STALE_TEMP_S * 2)  # another file's
    fsutil.write_atomic(path, b"{}\n")
    assert path.read_bytes() == b"{}\n"
    assert not old.exists()
    assert live.exists() and other.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["sessions.json", live.name, other.name])


def test_a_name_with_glob_characters_sweeps_only_its_own(tmp_path: Path) -> None:
    path = tmp_path / "s[1].json"
    mine = stranded(path, "x", fsutil.STALE_TEMP_S * 2)
    lookalike = stranded(tmp_path / "s1.json", "x", fsutil.STALE_TEMP_S * 2)
    assert fsutil.sweep_stale_temps(path) == [mine]
    assert lookalike.exists()


def test_the_sweep_runs_once_per_file_and_process(tmp_path: Path) -> None:
    # A store is written at every turn end; its directory is listed only the
    # first time (a temp stranded later goes with the next process's first write).
    path = tmp_path / "state.json"
    fsutil.write_atomic(path, b"1")
    later = stranded(path, "later", fsutil.STALE_TEMP_S * 2)
    fsutil.write_atomic(path, b"2")
    assert path.read_bytes() == b"2"
    assert later.exists()
    assert fsutil.sweep_stale_temps(path) == [later]


def test_a_held_lock_is_waited_for_with_a_notice_then_given_up(tmp_path: Path) -> None:
    import fcntl

    from agy_host.fsutil import LockTimeout, locked

    target = tmp_path / "sessions.json"
    with locked(target):  # the holder notes itself in the lock file
        assert f"pid {os.getpid()}" in (tmp_path / "sessions.json.lock").read_text()
    other = os.open(tmp_path / "sessions.json.lock", os.O_RDWR)
    fcntl.flock(other, fcntl.LOCK_EX)  # another open file: it conflicts as another process would
    told: list[str] = []
    try:
        with (
            pytest.raises(LockTimeout, match=r"held by pid \d+ .*gave up after 0.8s"),
            locked(target, timeout=0.8, on_wait=told.append),
        ):
            raise AssertionError("the lock was taken while held")
    finally:
        fcntl.flock(other, fcntl.LOCK_UN)
        os.close(other)
    assert len(told) == 1 and "waiting for" in told[0] and "Ctrl-C" in told[0]
    with locked(target, timeout=0.8):  # free again: taken at once
        pass
