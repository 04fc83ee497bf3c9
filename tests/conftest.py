"""Shared setup for the cross-distribution suites under ``tests/``.

pytest runs with ``--import-mode=importlib`` (root ``pyproject.toml``), which
does not put test folders on ``sys.path``. The helpers here are plain modules
(``conformance.schema``, ``interop.provision``), so this folder is added to
``sys.path`` once; suites import them as ``from conformance.schema import ...``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent

if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def acp_schema_dir() -> Path:
    return TESTS_DIR / "fixtures" / "acp-schema"
