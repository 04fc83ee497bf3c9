"""Baselines against real git repositories and plain directories: what an
edit card's diff is compared with, and that git is only ever read."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from agy_host.contract.events import FileDiff, ToolCard
from agy_host_diff_render.baseline import Baseline
from agy_host_diff_render.hooks import DiffRenderer
from agy_host_diff_render.unified import NO_NEWLINE

pytestmark = pytest.mark.skipif(
    subprocess.run(["git", "--version"], capture_output=True, check=False).returncode != 0, reason="git not installed"
)


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    git(root, "init", "-q")
    (root / "a.txt").write_text("one\ntwo\n")
    (root / "dirty.txt").write_text("base\n")
    (root / "src" / "b.py").write_text("x = 1\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    (root / "dirty.txt").write_text("base\nthe user's own change\n")  # uncommitted, before the turn
    (root / "untracked.txt").write_text("scratch\n")
    return root


def edit(path: Path | str, call_id: str = "e1", diff: FileDiff | None = None) -> ToolCard:
    return ToolCard(
        call_id=call_id,
        name="replace_file_content",
        status="done",
        kind="edit",
        args={"TargetFile": str(path)},
        diff=diff,
    )


def start(r: DiffRenderer, cwd: Path) -> None:
    """A turn starts. Its snapshot is taken in a worker thread; in a real turn
    the agent's first edit comes after the model answered, so the tests wait
    for the snapshot the way that time would."""
    r.turn_started(str(cwd))
    assert r.baseline is not None and r.baseline.wait(30)


def body(diff: str | None) -> list[str]:
    assert diff is not None
    return [line for line in diff.split("\n") if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_a_tracked_file_is_diffed_against_the_commit(repo: Path) -> None:
    r = DiffRenderer()
    start(r, repo)
    (repo / "a.txt").write_text("one\n2\n")
    diff = r.render(edit(repo / "a.txt"), str(repo))
    assert diff is not None and diff.startswith("--- a/a.txt\n+++ b/a.txt\n")
    assert body(diff) == ["-2   │ two", "+  2 │ 2"]


def test_the_users_uncommitted_work_is_not_the_agents(repo: Path) -> None:
    r = DiffRenderer()
    start(r, repo)
    (repo / "dirty.txt").write_text("base\nthe user's own change\nthe agent's line\n")
    assert body(r.render(edit(repo / "dirty.txt"), str(repo))) == ["+  3 │ the agent's line"]


def test_untracked_files_are_snapshotted_at_turn_start(repo: Path) -> None:
    r = DiffRenderer()
    start(r, repo)
    (repo / "untracked.txt").write_text("scratch\nmore\n")
    assert body(r.render(edit(repo / "untracked.txt"), str(repo))) == ["+  2 │ more"]


def test_a_new_file_and_a_relative_path(repo: Path) -> None:
    r = DiffRenderer()
    start(r, repo)
    (repo / "src" / "new.py").write_text("print('hi')\n")
    diff = r.render(edit("src/new.py"), str(repo))
    assert diff is not None and diff.split("\n")[:2] == ["--- /dev/null", "+++ b/src/new.py"]


def test_a_second_edit_in_the_turn_shows_only_its_change(repo: Path) -> None:
    r = DiffRenderer()
    start(r, repo)
    (repo / "a.txt").write_text("one\ntwo\nthree\n")
    r.render(edit(repo / "a.txt"), str(repo))
    (repo / "a.txt").write_text("one\ntwo\nthree\nfour\n")
    assert body(r.render(edit(repo / "a.txt", "e2"), str(repo))) == ["+  4 │ four"]


def test_a_commit_during_the_turn_does_not_move_the_baseline(repo: Path) -> None:
    r = DiffRenderer()
    start(r, repo)
    (repo / "src" / "b.py").write_text("x = 2\n")
    git(repo, "commit", "-q", "-am", "the agent commits")
    assert body(r.render(edit(repo / "src" / "b.py"), str(repo))) == ["-1   │ x = 1", "+  1 │ x = 2"]


def test_write_to_file_content_is_the_new_side(repo: Path) -> None:
    """stream-json's write_to_file carries the content (old_text unknown)."""
    r = DiffRenderer()
    start(r, repo)
    card = edit(repo / "a.txt", diff=FileDiff(path=str(repo / "a.txt"), new_text="one\ntwo\nthree\n"))
    assert body(r.render(card, str(repo))) == ["+  3 │ three"]


def test_an_acp_diff_is_used_as_the_agent_sent_it(repo: Path) -> None:
    r = DiffRenderer()
    start(r, repo)
    card = edit("/elsewhere/f.txt", diff=FileDiff(path="/elsewhere/f.txt", old_text="a\n", new_text="b\n"))
    assert body(r.render(card, str(repo))) == ["-1   │ a", "+  1 │ b"]


def test_an_acp_fragment_is_diffed_in_its_file(repo: Path) -> None:
    """claude-agent-acp sends the edited text only, without a final newline:
    the diff shows it in the file (which ends in a newline), with the
    file's line numbers and no "No newline at end of file"."""
    r = DiffRenderer()
    start(r, repo)
    (repo / "a.txt").write_text("one\nTWO\n")  # the agent's edit
    card = edit(repo / "a.txt", diff=FileDiff(path=str(repo / "a.txt"), old_text="two", new_text="TWO"))
    diff = r.render(card, str(repo))
    assert diff is not None and NO_NEWLINE not in diff
    assert body(diff) == ["-2   │ two", "+  2 │ TWO"]


def test_git_is_only_read(repo: Path) -> None:
    index = repo / ".git" / "index"
    os.utime(
        repo / "a.txt", (time.time() + 5, time.time() + 5)
    )  # stale stat info: a plain `git status` rewrites the index
    before = (index.stat().st_mtime_ns, index.read_bytes())
    r = DiffRenderer()
    start(r, repo)
    r.render(edit(repo / "a.txt"), str(repo))
    assert (index.stat().st_mtime_ns, index.read_bytes()) == before
    assert not (repo / ".git" / "index.lock").exists()


def test_without_git_a_snapshot_of_the_directory(tmp_path: Path) -> None:
    work = tmp_path / "plain"
    work.mkdir()
    (work / "notes.md").write_text("# notes\n")
    base = Baseline(work)
    assert base.repo is None and base.complete
    r = DiffRenderer()
    r.baseline = base
    (work / "notes.md").write_text("# notes\n- item\n")
    assert body(r.render(edit(work / "notes.md"), str(work))) == ["+  2 │ - item"]
    (work / "fresh.md").write_text("new\n")
    assert r.render(edit(work / "fresh.md"), str(work)).startswith("--- /dev/null")  # type: ignore[union-attr]


def test_first_sight_covers_files_no_snapshot_had(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("before\n")
    r = DiffRenderer()
    start(r, tmp_path / "nonexistent-cwd")
    r.first_sight(ToolCard(call_id="s", name="write", status="started", kind="edit", args={"path": str(outside)}))
    outside.write_text("after\n")
    assert body(r.render(edit(outside), str(tmp_path))) == ["-1   │ before", "+  1 │ after"]


def test_a_card_without_a_path_is_left_to_the_label() -> None:
    r = DiffRenderer()
    assert r.render(ToolCard(call_id="x", name="edit", status="done", kind="edit"), "/") is None
