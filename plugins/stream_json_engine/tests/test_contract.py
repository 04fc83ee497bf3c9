"""The engine contract suite against the stream-json engine and the fake agy
(harness: ``conftest.py``)."""

from __future__ import annotations

from agy_host.testing.contract import EngineContract


class TestStreamJsonEngineContract(EngineContract):
    pass
