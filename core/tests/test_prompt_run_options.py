"""``run``'s prompt options (``--system-prompt``, ``--file``, ``--image``,
``@path``, ``--digest``) and its notice when ``--session`` starts a new
conversation. Skipped until ``run`` has the options (the lead wires
:mod:`agy_host.runtime.prompt_input` into ``run_cmd``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agy_host.cli.run_cmd import RunOptions
from agy_host.contract.prompt import ResourceBlock, TextBlock, prompt_text

Cli = Callable[..., tuple[int, str, str]]

pytestmark = pytest.mark.skipif(
    "system_prompt" not in RunOptions.__struct_fields__, reason="run has no --system-prompt yet"
)


def test_run_sends_the_system_block_and_attachments(
    cli: Cli, echo_plugin: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "notes.md").write_text("# notes\n")
    (tmp_path / "sys.md").write_text("Review only.")
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("run", "--session", "o", "--system-prompt", "@sys.md", "--file", "notes.md", "read", "@notes.md")
    assert code == 0, err
    [request] = echo_plugin.recorder
    text = prompt_text(request.prompt)
    assert "Review only." in text and text.endswith("\n\n---\n\nread @notes.md")
    [resource] = [b for b in request.prompt if isinstance(b, ResourceBlock)]  # --file and @path: attached once
    assert resource.uri == (tmp_path / "notes.md").resolve().as_uri() and resource.text == "# notes\n"
    code, _, _ = cli("run", "--session", "o", "again")
    assert prompt_text(echo_plugin.recorder[-1].prompt) == "again"
    assert isinstance(echo_plugin.recorder[-1].prompt[0], TextBlock)


def test_run_refuses_what_it_cannot_attach(cli: Cli, tmp_path: Path) -> None:
    code, _, err = cli("run", "--file", str(tmp_path / "missing.txt"), "x")
    assert code == 2 and "no such file" in err


def test_run_says_when_a_known_session_starts_a_new_conversation(cli: Cli, agy_host_home: Any) -> None:
    assert cli("run", "--session", "moved", "x")[0] == 0
    assert cli("sessions", "forget", "moved")[0] == 0
    code, _, err = cli("run", "--session", "moved", "y")
    assert code == 0
    assert "session 'moved' has 1 earlier turn(s) but no agent conversation; starting a new one" in err
