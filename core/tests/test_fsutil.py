"""Atomic writes sweep what a killed writer stranded, and only that; a held
lock names its real holder."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
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


_FOREIGN_HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)  # takes the lock and writes no note, as flock(1) or an editor would
print("held", flush=True)
time.sleep(300)
"""


@contextlib.contextmanager
def _foreign_holder(lock: Path) -> Iterator[subprocess.Popen[str]]:
    """Another program holding ``lock`` (its argv[0] names it) for the block."""
    with subprocess.Popen(
        ["the-foreign-holder", "-c", _FOREIGN_HOLDER, str(lock)],
        executable=sys.executable,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            yield holder
        finally:
            holder.kill()


def test_the_holder_named_is_the_real_one_never_this_process_by_its_old_note(tmp_path: Path) -> None:
    """Issue 28 item 13: another program holding the lock was named after
    the note the last agy-host holder left, which could be this very process."""
    target = tmp_path / "sessions.json"
    lock = tmp_path / "sessions.json.lock"
    with fsutil.locked(target):
        assert f"pid {os.getpid()}" in lock.read_text()
    assert lock.read_text() == "", "the note goes with the lock"
    lock.write_text(f"pid {os.getpid()} (an old note)\n")  # as a holder killed mid-hold leaves it
    told: list[str] = []
    with (
        _foreign_holder(lock) as holder,
        pytest.raises(fsutil.LockTimeout) as raised,
        fsutil.locked(target, timeout=0.8, on_wait=told.append),
    ):
        raise AssertionError("the lock was taken while held")
    for said in (str(raised.value), *told):
        assert f"held by pid {holder.pid} (the-foreign-holder -c)" in said, said
        assert "an old note" not in said


def test_without_the_kernels_word_only_a_live_notes_holder_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where ``/proc/locks`` cannot be read (not Linux), the note counts only
    when its pid lives and is not this process; else the holder is unknown."""
    monkeypatch.setattr(fsutil, "_flock_holders", lambda fd: None)
    lock = tmp_path / "x.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    try:
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
        for note in (f"pid {dead.stdout.strip()} (gone)", f"pid {os.getpid()} (me)", "", "garbage"):
            lock.write_text(note)
            assert fsutil._holder(lock, fd).startswith("an unknown process"), note
        with _foreign_holder(tmp_path / "other.lock") as live:
            lock.write_text(f"pid {live.pid} (agy-host run)\n")
            assert fsutil._holder(lock, fd) == f"pid {live.pid} (agy-host run)"
    finally:
        os.close(fd)


def test_read_capped_reads_regular_files_up_to_the_cap_and_refuses_the_rest(tmp_path: Path) -> None:
    """Issue 28 item 9: what ``--answers`` reads (a device or a FIFO used to be read without end)."""
    exact = tmp_path / "exact"
    exact.write_bytes(b"x" * 100)
    assert fsutil.read_capped(exact, 100) == b"x" * 100
    with pytest.raises(fsutil.RefusedFile, match=r"exact is 100 bytes$"):
        fsutil.read_capped(exact, 99)
    os.mkfifo(tmp_path / "fifo")  # nobody writes: opening it must not wait
    for path, kind in ((Path("/dev/zero"), "a character device"), (tmp_path / "fifo", "a pipe"), (tmp_path, "a dir")):
        with pytest.raises(fsutil.RefusedFile, match=f"is {kind}"):
            fsutil.read_capped(path, 1 << 20)
    with pytest.raises(FileNotFoundError):
        fsutil.read_capped(tmp_path / "missing", 10)
