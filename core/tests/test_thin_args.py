"""The thin client's reading of ``agy-host run``'s command line
(agy_host.keeper.thin_args) against typer's own: the same options from the
same arguments, or ``None`` (the normal path) for what it does not take."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from agy_host.cli import run_cmd
from agy_host.cli.app import build_app
from agy_host.cli.state import CliState
from agy_host.keeper.thin_args import ThinArgs, parse


def typer_reads(args: list[str], monkeypatch: pytest.MonkeyPatch) -> run_cmd.RunOptions:
    """The options the full CLI's ``run`` builds from ``args`` (the turn itself not run)."""
    seen: list[run_cmd.RunOptions] = []

    def capture(_state: CliState, opts: run_cmd.RunOptions) -> int:
        seen.append(opts)
        return 0

    monkeypatch.setattr(run_cmd, "run_command", capture)
    build_app(CliState(env={}))(args=["run", *args], prog_name="agy-host", standalone_mode=False)
    [opts] = seen
    return opts


def same_fields(thin: ThinArgs, full: run_cmd.RunOptions) -> dict[str, tuple[Any, Any]]:
    """Fields the two read differently (``{}``: none)."""
    differ = {}
    for name in ThinArgs.__struct_fields__:
        if getattr(thin, name) != getattr(full, name):
            differ[name] = (getattr(thin, name), getattr(full, name))
    settings = msgspec.structs.asdict(full.settings())
    if thin.settings() != settings:
        differ["settings"] = (thin.settings(), settings)
    return differ


TAKEN = {
    "plain": ["--session", "w", "fix", "the", "test"],
    "short flags": ["-s", "w", "-f", "json", "-m", "gemini-x", "-e", "acp", "-v", "hi"],
    "equals": ["--session=w", "--format=quiet", "--model=m", "--keep-alive=30", "hi"],
    "options after the words": ["hi", "there", "--session", "w", "--effort", "high", "--mode", "plan"],
    "numbers": ["-s", "w", "--timeout", "2.5", "--inactivity", "0", "--max-tokens", "900", "--max-cost", "1.5", "x"],
    "switches": ["-s", "w", "--no-digest", "--no-wait", "x"],
    "other switches": ["-s", "w", "--digest", "x"],
    "permissions skip": ["-s", "w", "--permissions", "skip", "x"],
    "agent and policy": ["-s", "w", "--agent", "gemini --acp", "--permissions", "deny", "x"],
    "system prompt": ["-s", "w", "--system-prompt", "be brief", "x"],
    "last one wins": ["-s", "a", "-s", "b", "-f", "json", "-f", "text", "x"],
    "a slash command": ["-s", "w", "/compact"],
}


@pytest.mark.parametrize("case", sorted(TAKEN))
def test_the_thin_client_reads_what_typer_reads(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    args = TAKEN[case]
    thin = parse(args)
    assert thin is not None, f"{case}: the thin client should take {args}"
    assert same_fields(thin, typer_reads(args, monkeypatch)) == {}


def test_directories_are_resolved_as_typer_resolves_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path)
    args = ["-s", "w", "--cwd", "a", "--add-dir", "b", "--add-dir", str(tmp_path / "b"), "--add-dir", "a", "x"]
    thin = parse(args)
    assert thin is not None
    assert same_fields(thin, typer_reads(args, monkeypatch)) == {}
    assert thin.cwd == str(tmp_path / "a") and thin.add_dirs == [str(tmp_path / "b"), str(tmp_path / "a")]


LEFT = {
    "no session": ["hi"],
    "a bad session name": ["-s", "a@b", "hi"],
    "no prompt (stdin)": ["-s", "w"],
    "a prompt from stdin": ["-s", "w", "-"],
    "an empty prompt": ["-s", "w", "  "],
    "a prompt naming a file": ["-s", "w", "read", "@notes.md"],
    "a plugin's format": ["-s", "w", "-f", "html", "x"],
    "--resume": ["-s", "w", "--resume", "x"],
    "--answers": ["-s", "w", "--answers", "a.toml", "x"],
    "--trace": ["-s", "w", "--trace", "t.jsonl", "x"],
    "--file": ["-s", "w", "--file", "a.txt", "x"],
    "--image": ["-s", "w", "--image", "a.png", "x"],
    "--help": ["-s", "w", "--help"],
    "--": ["-s", "w", "--", "-x"],
    "a cluster of short flags": ["-vs", "w", "x"],
    "a value stuck to a short flag": ["-sw", "x"],
    "a switch with a value": ["-s", "w", "--verbose=yes", "x"],
    "an unknown flag": ["-s", "w", "--frobnicate", "x"],
    "a missing value": ["x", "-s"],
    "a negative number": ["-s", "w", "--timeout", "-1", "x"],
    "not a number": ["-s", "w", "--max-tokens", "many", "x"],
    "not finite": ["-s", "w", "--max-cost", "inf", "x"],
    "a missing --cwd": ["-s", "w", "--cwd", "/no/such/dir", "x"],
    "a missing --add-dir": ["-s", "w", "--add-dir", "/no/such/dir", "x"],
    "--system-prompt @FILE": ["-s", "w", "--system-prompt", "@prompt.md", "x"],
    "deprecated --skip-permissions": ["-s", "w", "--skip-permissions", "x"],
    "deprecated --ask-permissions": ["-s", "w", "--ask-permissions", "x"],
}


@pytest.mark.parametrize("case", sorted(LEFT))
def test_what_the_thin_client_leaves_to_the_normal_path(case: str) -> None:
    assert parse(LEFT[case]) is None
