"""The turn-start snapshot never blocks: not on a FIFO, not on a big tree,
not on the host's loop. Real files, FIFOs and an ``agy-host run`` process."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agy_host.config import Config
from agy_host.contract.events import ToolCard, TurnEnded
from agy_host.contract.run_context import TurnContext
from agy_host_diff_render import baseline as baseline_module
from agy_host_diff_render.baseline import Baseline, read_text
from agy_host_diff_render.hooks import DiffPlugin


def _tree_with_a_fifo(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "a.txt").write_text("a\n")
    os.mkfifo(root / "pipe")  # no writer: opening it for reading the usual way blocks forever
    (root / "z.txt").write_text("z\n")
    (root / "link-to-pipe").symlink_to(root / "pipe")
    return root


def test_a_fifo_in_the_tree_is_skipped_not_waited_on(tmp_path: Path) -> None:
    work = _tree_with_a_fifo(tmp_path / "plain")
    base = Baseline.start(work)
    assert base.wait(30), "the snapshot hung (on the FIFO)"
    assert base.complete and base.capped is None
    assert base.files == {work / "a.txt": "a\n", work / "z.txt": "z\n"}  # regular files only
    assert read_text(work / "pipe") is None and read_text(work / "link-to-pipe") is None


def test_starting_a_snapshot_returns_before_the_disk_work(tmp_path: Path) -> None:
    """The hook runs on the host's loop; the work must not (proved without a
    clock: git is held until the hook returned)."""
    release = threading.Event()
    calls: list[list[str]] = []

    def held_git(args: list[str], cwd: Path) -> bytes | None:
        calls.append(args)
        release.wait(30)
        return None

    base = Baseline.start(tmp_path, git=held_git)
    assert not base.wait(0)  # start returned while git was still held
    release.set()
    assert base.wait(30) and calls and calls[0][0] == "rev-parse"


def test_the_walk_stops_at_its_bound_and_says_so_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(baseline_module, "MAX_ENTRIES", 50)
    work = tmp_path / "big"
    work.mkdir()
    for i in range(120):
        (work / f"f{i:03}.txt").write_text(f"{i}\n")
    warnings: list[str] = []
    plugin = DiffPlugin()
    turn = TurnContext(
        session="s",
        engine="e",
        cwd=str(work),
        user_text="hi",
        new_conversation=True,
        config=Config(),
        env={},
        diffs_wanted=True,
        warn=warnings.append,
    )
    for _ in range(2):  # two turns, one notice
        plugin.agy_host_turn_started(turn)
        base = plugin.renderer.baseline
        assert base is not None and base.wait(30)
        assert not base.complete and len(base.files) == 50
        plugin.agy_host_render_event(TurnEnded(stop_reason="end_turn", duration_s=0.1))
    assert len(warnings) == 1, warnings
    assert "stopped at 50 entries" in warnings[0] and str(work) in warnings[0]


def test_the_first_edit_card_stops_the_snapshot_and_first_sight_takes_over(tmp_path: Path) -> None:
    """What the snapshot had not read when the agent's first edit began may
    already be the agent's: it is read at first sight instead."""
    release = threading.Event()
    repo_root = tmp_path / "r"
    repo_root.mkdir()
    (repo_root / "f.txt").write_text("before\n")

    def slow_git(args: list[str], cwd: Path) -> bytes | None:
        release.wait(30)
        return None  # not a repository

    plugin = DiffPlugin()
    plugin.renderer.baseline = Baseline(repo_root, git=slow_git, background=True)
    card = ToolCard(call_id="c", name="write", status="started", kind="edit", args={"path": str(repo_root / "f.txt")})
    plugin.agy_host_render_event(card)  # stops the snapshot (it waits at most briefly)
    release.set()
    base = plugin.renderer.baseline
    assert base.wait(30) and base.files == {} and not base.complete
    (repo_root / "f.txt").write_text("after\n")
    assert base.before(repo_root / "f.txt") == "before\n"


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs")
def test_run_in_a_directory_holding_a_fifo_finishes(tmp_path: Path) -> None:
    """``agy-host run`` with diffs drawn (text output) in a non-git directory
    holding a FIFO used to hang for good, deaf to Ctrl-C."""
    from agy_host.testing.isolation import isolated_env

    work = _tree_with_a_fifo(tmp_path / "work")
    agent = f"{sys.executable} -m agy_host.testing.acp.agent --scenario happy"
    proc = subprocess.run(
        [sys.executable, "-m", "agy_host.cli.main", "run", "--format", "text", "--agent", agent, "hi"],
        env=isolated_env(tmp_path / "home", AGY_HOST_TTY="none", GIT_CEILING_DIRECTORIES=str(tmp_path)),
        cwd=work,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert b"HELLO" in proc.stdout
