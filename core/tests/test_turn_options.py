"""``run``, ``chat`` and ``ask`` share one set of turn options: the same
flags, the same help, the same checks."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from agy_host.cli.app import build_app
from agy_host.cli.state import CliState

SHARED = [
    "--session",
    "--resume",
    "--engine",
    "--agent",
    "--model",
    "--effort",
    "--cwd",
    "--timeout",
    "--permissions",
    "--skip-permissions",
    "--system-prompt",
    "--digest",
]


def _helps(command: str) -> dict[str, str | None]:
    group = typer.main.get_command(build_app(CliState(env={})))
    cmd = group.commands[command]  # type: ignore[attr-defined]
    return {opt: param.help for param in cmd.params for opt in param.opts}


@pytest.mark.parametrize("flag", SHARED)
def test_a_shared_flag_reads_the_same_in_every_command(flag: str) -> None:
    helps = {command: _helps(command).get(flag) for command in ("run", "chat", "ask")}
    assert len(set(helps.values())) == 1 and None not in helps.values(), helps


@pytest.mark.parametrize("command", ["run", "chat", "ask"])
def test_resume_without_a_session_is_refused_alike(command: str) -> None:
    args = [command, "--resume"] + (["hi"] if command != "chat" else [])
    result = CliRunner().invoke(build_app(CliState(env={})), args)
    assert result.exit_code == 2 and "--resume needs --session NAME" in result.output


@pytest.mark.parametrize("command", ["run", "chat", "ask"])
def test_a_bad_session_name_is_refused_alike(command: str) -> None:
    args = [command, "--session", "a@b"] + (["hi"] if command != "chat" else [])
    result = CliRunner().invoke(build_app(CliState(env={})), args)
    assert result.exit_code == 2 and "contains '@'" in result.output
