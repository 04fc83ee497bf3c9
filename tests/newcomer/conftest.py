"""Fixtures of the newcomer suite: the real agents, provisioned as the
interop suite provisions them (cached under ``.cache/``; skipped, with the
reason, where a machine cannot have them: no node, no Python 3.13, no
harness wheel for the platform), and the places a test runs the docs in."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from interop.conftest import fast_agent, gemini_cli
from newcomer.catalogue import BLOCKS, EVERYDAY, Run, Skip
from newcomer.place import Place


@pytest.fixture(scope="session")
def harness_binary() -> str:
    """The real ``localharness`` (``$ANTIGRAVITY_HARNESS_PATH``, else the
    repository's cache, filled from the pinned wheel on first use)."""
    from agy_host_harness.install import platform_problem
    from parity.rigs import harness_binary as provisioned

    problem = platform_problem()
    if problem:
        pytest.skip(problem)
    return provisioned()


@pytest.fixture
def place(tmp_path: Path) -> Iterator[Callable[..., Place]]:
    """``place(installed, warm=False)``: a newcomer's machine with what a
    doc's ``pip install`` line installed; closed (keeper stopped, nothing
    left running) after the test."""
    made: list[Place] = []

    def make(installed: Sequence[str], *, warm: bool = False) -> Place:
        new = Place(tmp_path / f"place-{len(made)}", installed, warm=warm)
        made.append(new)
        return new

    yield make
    for each in made:
        each.close()


__all__ = ["fast_agent", "gemini_cli", "harness_binary", "place", "pytest_terminal_summary"]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Which doc examples this run covered: the catalogue, in a line each."""
    reports = [r for key in ("passed", "failed", "skipped") for r in terminalreporter.stats.get(key, [])]
    if not any("tests/newcomer/" in getattr(r, "nodeid", "") for r in reports):
        return
    terminalreporter.section("newcomer: the docs' shell examples")
    for (page, first), entry in BLOCKS.items():
        if isinstance(entry, Run):
            part = " (in part)" if entry.except_ else ""
            terminalreporter.write_line(f"run{part} on {', '.join(entry.agents)}: {page}: {first}")
    for (page, first), entry in BLOCKS.items():
        if isinstance(entry, Skip):
            terminalreporter.write_line(f"not run: {page}: {first}")
    lines = sum(1 for runs in EVERYDAY.values() if not isinstance(runs, str))
    terminalreporter.write_line(f"README everyday block: {lines} of {len(EVERYDAY)} lines run (catalogue.EVERYDAY)")
