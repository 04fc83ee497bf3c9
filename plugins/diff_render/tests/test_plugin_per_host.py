"""One diff baseline per host: two hosts in one process (a program with two
sessions) never share "before" snapshots."""

from __future__ import annotations

from pathlib import Path

from agy_host.config import Config
from agy_host.contract.run_context import TurnContext
from agy_host.plugins import Plugins


def _turn(cwd: Path, *, diffs: bool) -> TurnContext:
    return TurnContext(
        session="s",
        engine="e",
        cwd=str(cwd),
        user_text="",
        new_conversation=True,
        config=Config(),
        env={},
        diffs_wanted=diffs,
    )


def test_each_plugin_manager_has_its_own_baseline(tmp_path: Path) -> None:
    drawing, silent = Plugins({}), Plugins({})
    mine, theirs = drawing.pm.get_plugin("diff_render"), silent.pm.get_plugin("diff_render")
    assert mine is not None and theirs is not None and mine is not theirs
    drawing.turn_started(_turn(tmp_path, diffs=True))
    silent.turn_started(_turn(tmp_path, diffs=False))
    assert mine.renderer.baseline is not None
    assert theirs.renderer.baseline is None, "a command that draws no diffs takes no snapshot"
