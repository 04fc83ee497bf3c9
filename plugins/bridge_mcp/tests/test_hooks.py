"""The plugin's hooks: cheap to load, the service only for commands that
bind it, the running bridge handed to engines as an MCP server, doctor rows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import trio

from agy_host.config import BridgeConfig, Config
from agy_host.contract.diagnostics import DiagnosticReport
from agy_host.plugins import Plugins
from agy_host_bridge_mcp import hooks
from agy_host_bridge_mcp.service import BridgeService
from agy_host_bridge_mcp.testing import running_bridge


def test_loading_the_hooks_imports_nothing_heavy() -> None:
    code = (
        "import sys; import agy_host_bridge_mcp.hooks as h; from agy_host.config import Config;"
        "services = h.services(Config());"
        "heavy = [m for m in ('mcp', 'mcp_types', 'hypercorn', 'pydantic', 'starlette') if m in sys.modules];"
        "print(len(services), heavy)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "1 []", proc.stderr


def test_the_plugin_is_found_through_its_entry_point() -> None:
    plugins = Plugins({})
    assert "bridge_mcp" in [p.name for p in plugins.info()]
    assert "ask_user" in [t.name for t in plugins.tools()]
    assert "BridgeService" in [type(s).__name__ for s in plugins.services(Config())]


def test_a_disabled_bridge_offers_no_service() -> None:
    cfg = Config()
    cfg.bridge.enabled = False
    assert hooks.services(cfg) is None


async def test_an_unbound_service_never_gets_ready() -> None:
    service = BridgeService(BridgeConfig())
    async with trio.open_nursery() as nursery:
        nursery.start_soon(service.run)
    assert service.port is None and "not-bound" in [e.event for e in service.log.entries()]


async def test_engines_get_the_running_bridge_with_its_token(tmp_path: Path) -> None:
    assert hooks.mcp_servers() is None
    async with running_bridge(tmp_path) as bridge:
        [spec] = hooks.mcp_servers() or []
        assert (spec.name, spec.type, spec.url) == ("agy-host-bridge", "http", bridge.url)
        assert spec.headers == {"x-bridge-token": bridge.service.token}
    assert hooks.mcp_servers() is None  # gone with the command


def test_doctor_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.delenv("AGY_HOST_CONFIG", raising=False)
    report = DiagnosticReport()
    hooks.make_plugin().agy_host_diagnostics(report)
    [section] = report.sections
    labels = {row.label: row for row in section.rows}
    assert labels["bridge"].status == "ok"
    assert "park TTL 8m" in labels["round-trips"].value and "escalated TTL 30m" in labels["round-trips"].value
    assert "absent" in labels["agy CLI config"].value
    assert report.worst == "ok"
