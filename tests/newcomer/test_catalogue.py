"""Every shell example of the README and the docs that names ``agy-host``
is run by this suite or listed with the reason it is not
(``catalogue.BLOCKS``), and the README's everyday block line by line
(``catalogue.EVERYDAY``). A new example, or a changed first command, fails
here until it is run or explained."""

from __future__ import annotations

import ast
from pathlib import Path

from newcomer.catalogue import AGENTS, BLOCKS, EVERYDAY, README_EVERYDAY, Run, Skip
from newcomer.shell import commands, find, key, shell_blocks, without_comment

HERE = Path(__file__).resolve().parent


def test_every_shell_example_naming_agy_host_is_run_or_skipped_with_a_reason() -> None:
    found = {key(b): b.where for b in shell_blocks()}
    missing = [f"{where}: {first[1]!r}" for first, where in found.items() if first not in BLOCKS]
    assert not missing, (
        "shell examples naming agy-host that the newcomer suite neither runs nor skips with a reason "
        f"(add each to tests/newcomer/catalogue.py BLOCKS): {missing}"
    )
    stale = [k for k in BLOCKS if k not in found]
    assert not stale, f"catalogue entries whose block is gone or changed its first command: {stale}"


def _tests() -> set[str]:
    """``file.py::test_name`` of every test function here, and each ``file.py``."""
    found = set()
    for path in HERE.glob("test_*.py"):
        found.add(path.name)
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                found.add(f"{path.name}::{node.name}")
    return found


def test_every_skip_has_a_reason_and_every_run_names_a_test_that_exists() -> None:
    tests = _tests()
    for (page, first), entry in BLOCKS.items():
        if isinstance(entry, Skip):
            assert len(entry.reason) > 20, f"{page} {first!r}: say why it is not run"
        else:
            assert isinstance(entry, Run) and entry.agents and set(entry.agents) <= set(AGENTS), (page, first)
            name = entry.test.split(" ", 1)[0]
            assert name in tests, f"{page} {first!r}: no test {name} in tests/newcomer"
    for line, runs in EVERYDAY.items():
        if isinstance(runs, str):
            assert len(runs) > 20, f"README {line!r}: say why it is not run"
            continue
        for agent, name in runs:
            assert agent in AGENTS and name in tests, f"README {line!r}: {agent} {name}"


def test_every_line_of_the_readmes_everyday_block_is_run_or_explained() -> None:
    lines = [without_comment(line) for line in commands(find("README.md", README_EVERYDAY))]
    assert sorted(lines) == sorted(EVERYDAY), (
        f"README everyday lines not in EVERYDAY: {sorted(set(lines) - set(EVERYDAY))}; "
        f"EVERYDAY entries no longer in the README: {sorted(set(EVERYDAY) - set(lines))}"
    )
