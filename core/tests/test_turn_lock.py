"""The per-session turn lock (``runtime/turn_lock.py``) on its own: file
names, the holder's note, a stale or unreadable lock file, the notice, the
cancellable wait. Real processes on one session: tests/reliability/test_session_turns.py."""

from __future__ import annotations

import fcntl
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from agy_host.runtime import turn_lock
from agy_host.runtime.turn_lock import Busy, acquire, lock_path, read_holder


def test_lock_file_names_are_safe_short_and_distinct_for_any_session_key(tmp_path: Path) -> None:
    keys = ["work", "work@acp", "work@acp:gemini", "../../etc/passwd", "a/b", "", "é" * 300, "x" * 500, "work@acp:"]
    paths = [lock_path(tmp_path, key) for key in keys]
    assert len(set(paths)) == len(keys)
    for path in paths:
        assert path.parent == tmp_path / "locks", path
        assert len(path.name) < 80 and path.name.endswith(".lock"), path
        assert all(c.isascii() and (c.isalnum() or c in "._-") for c in path.name), path
    assert lock_path(tmp_path, "work@acp").name.startswith("work_acp-")


async def test_the_holder_notes_itself_and_letting_go_leaves_no_file(tmp_path: Path) -> None:
    path = lock_path(tmp_path / "state", "work@acp")
    with await acquire(path):
        holder = read_holder(path)
        assert holder is not None and holder.pid == os.getpid() and holder.started_at > 0, holder
        assert "running a turn for" in holder.describe()
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not path.exists()


async def test_busy_names_the_holder_and_an_unreadable_note_is_not_an_error(tmp_path: Path) -> None:
    path = lock_path(tmp_path, "work")
    with await acquire(path):
        with pytest.raises(Busy) as busy:
            await acquire(path, wait=False)
        assert busy.value.holder.startswith(f"pid {os.getpid()} (")
        path.write_bytes(b"\xff not a note {")  # the flock is the truth; the note is for people
        with pytest.raises(Busy) as busy:
            await acquire(path, wait=False)
        assert busy.value.holder == "another process"


async def test_a_stale_lock_file_of_a_dead_holder_is_simply_taken(tmp_path: Path) -> None:
    path = lock_path(tmp_path, "work")
    path.parent.mkdir(parents=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    path.write_text(json.dumps({"pid": int(dead.stdout), "command": "agy-host run", "started_at": 1.0}))
    with trio.fail_after(2), await acquire(path, wait=False):
        holder = read_holder(path)
        assert holder is not None and holder.pid == os.getpid()


async def test_a_wait_is_told_once_and_ends_when_the_holder_lets_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(turn_lock, "NOTICE_AFTER_S", 0.05)
    path = lock_path(tmp_path, "work")
    told: list[str] = []
    held = await acquire(path)
    async with trio.open_nursery() as nursery:

        async def waiter() -> None:
            with await acquire(path, on_wait=told.append):
                holder = read_holder(path)
                assert holder is not None and holder.pid == os.getpid()

        nursery.start_soon(waiter)
        await trio.sleep(0.5)
        assert len(told) == 1 and told[0].startswith(f"pid {os.getpid()}"), told
        held.release()
    assert len(told) == 1
    assert not path.exists()


async def test_a_cancelled_wait_leaves_nothing_behind(tmp_path: Path) -> None:
    path = lock_path(tmp_path, "work")
    path.parent.mkdir(parents=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another holder, with no note at all
    before = set(os.listdir("/proc/self/fd"))
    try:
        with trio.move_on_after(0.3) as waited:
            await acquire(path)
        assert waited.cancelled_caught
        assert set(os.listdir("/proc/self/fd")) == before, "the wait left a file descriptor open"
    finally:
        os.close(fd)
    with trio.fail_after(2), await acquire(path, wait=False):
        pass
