"""Shared setup for core's tests.

pytest runs with ``--import-mode=importlib``, which does not put test folders
on ``sys.path``; this folder is added once so tests import the test-only
engine as ``from engines.echo_engine import EchoPlugin``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from engines.echo_engine import EchoPlugin  # noqa: E402


@pytest.fixture
def echo_plugin() -> EchoPlugin:
    return EchoPlugin()


@pytest.fixture
def warnings_seen() -> list[str]:
    return []


@pytest.fixture
def cli(
    agy_host_home: Any, echo_plugin: EchoPlugin, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., tuple[int, str, str]]:
    """Run ``agy-host ARGS`` in-process with the echo engine registered and
    selected (``AGY_HOST_ENGINE=echo``) in an isolated home; returns
    (exit code, stdout, stderr)."""
    from agy_host.cli.main import main

    monkeypatch.setenv("AGY_HOST_ENGINE", "echo")

    def run(*args: str, plugins: list[object] | None = None) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args), extra_plugins=[echo_plugin] if plugins is None else plugins)
        out, err = capsys.readouterr()
        return code, out, err

    return run
