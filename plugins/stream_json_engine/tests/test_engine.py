"""The engine as the host sees it: found by entry point, configured from
``[stream_json]``, doctor rows, and the real ``agy-host`` CLI driving the fake
agy (a turn, a resumed turn under the un-suffixed store key, doctor)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agy_host.contract.diagnostics import DiagnosticReport
from agy_host.engine.base import load_engine_class
from agy_host.testing.contract import collect, outcome_of
from agy_host.testing.store import read_bindings
from agy_host_stream_json.config import StreamJsonConfig, narrow
from agy_host_stream_json.engine import StreamJsonEngine

from ._support import make_engine, req

AGY_HOST = Path(sys.executable).with_name("agy-host")
Fake = Callable[..., Any]


def test_the_entry_point_loads_this_engine(tmp_path: Path) -> None:
    assert load_engine_class("stream-json") is StreamJsonEngine
    engine = make_engine(tmp_path, {})
    assert engine.store_key("work") == "work"  # the un-suffixed key, as the original used
    assert engine.agent_label() == "agy"
    caps = engine.capabilities
    assert caps.reports_usage and caps.plan_mode and caps.load_session
    assert not caps.images and not caps.resources


def test_config_section_is_narrowed_value_by_value() -> None:
    warned: list[str] = []
    cfg = narrow(
        {"bin": "/opt/agy", "kill_grace_seconds": -1, "exit_grace_seconds": "soon", "extra_args": ["-x"], "typo": 1},
        warned.append,
    )
    assert cfg.bin == "/opt/agy" and cfg.extra_args == ["-x"]
    assert cfg.kill_grace_seconds == StreamJsonConfig().kill_grace_seconds
    assert cfg.exit_grace_seconds == StreamJsonConfig().exit_grace_seconds
    assert len(warned) == 3 and any("'stream_json.typo'" in w for w in warned)


def test_agy_bin_wins_over_the_config_and_path_lookup(tmp_path: Path, fake_agy: Fake) -> None:
    fake = fake_agy("happy")
    engine = make_engine(tmp_path, fake.env, section={"bin": "/nowhere/agy"})
    assert (engine.binary.command, engine.binary.source, engine.binary.found) == (str(fake.bin), "AGY_BIN", True)
    on_path = make_engine(tmp_path, {"PATH": str(fake.bin.parent)}, section={"bin": fake.bin.name})
    assert (on_path.binary.command, on_path.binary.source) == (str(fake.bin), "config")
    missing = make_engine(tmp_path, {"PATH": str(tmp_path)})
    assert (missing.binary.value, missing.binary.found) == ("agy", False)


def rows(report: DiagnosticReport, title: str) -> dict[str, Any]:
    return {r.label: r for r in report.section(title).rows}


async def test_doctor_rows_with_agy_installed(tmp_path: Path, fake_agy: Fake) -> None:
    engine = make_engine(tmp_path, fake_agy("happy").env)
    async with engine.open_driver() as drv:
        await collect(await drv.run(req()))
        report = DiagnosticReport()
        await engine.diagnose(report)
    found = rows(report, "stream-json engine")
    assert found["agy"].status == "ok" and found["version"].value == "1.2.17"
    assert found["models"].value == "5 discovered" and found["models"].status == "ok"
    assert found["driver"].value.startswith("ready pid=")
    assert found["driver stats"].value == "spawns=1 turns=1 reused=0 recycles=0"
    assert "denied" in found["permissions"].value
    assert report.worst != "error"


async def test_doctor_rows_without_agy(tmp_path: Path) -> None:
    engine = make_engine(tmp_path, {"PATH": str(tmp_path)})
    report = DiagnosticReport()
    await engine.diagnose(report)
    found = rows(report, "stream-json engine")
    assert found["agy"].status == "error" and "antigravity-cli" in found["agy"].detail[0]
    assert found["models"].value == "3 FALLBACK (agy models failed)" and found["models"].status == "warn"
    assert report.worst == "error"


async def test_a_turn_through_the_engine_hooks_and_host(tmp_path: Path, fake_agy: Fake, agy_host_home: Any) -> None:
    from agy_host.runtime.host import Host

    fake = fake_agy("happy")
    host = Host(env={**os.environ, **fake.env}, engine="stream-json", warn=lambda _m: None)
    engine = host.load_engine()
    assert isinstance(engine, StreamJsonEngine)
    report = DiagnosticReport()
    host.plugins.diagnostics(report)
    assert rows(report, "[stream_json] config")["print_timeout_margin_seconds"].value == "900.0"
    async with engine.open_driver() as drv:
        assert outcome_of(await collect(await drv.run(req()))).status == "ok"


# -- the real CLI ---------------------------------------------------------------------------

needs_cli = pytest.mark.skipif(not AGY_HOST.exists(), reason=f"agy-host console script not installed at {AGY_HOST}")


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGY_", "PYTEST", "XDG_"))}
    env.update(
        AGY_HOST_KEEP_ALIVE_MINUTES="0",  # cold: each run spawns agy, as these tests check
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_CACHE_HOME=str(home / ".cache"),
    )
    return env


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(AGY_HOST), *args], env=env, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL
    )


@needs_cli
def test_agy_host_run_resumes_the_same_agy_conversation(cli_env: dict[str, str], fake_agy: Fake) -> None:
    fake = fake_agy({"turns": [[{"say": "first"}], [{"echo": True}]]})
    env = {**cli_env, **fake.env, "AGY_HOST_ENGINE": "stream-json"}
    first = cli(env, "run", "--session", "t1", "hello")
    assert first.returncode == 0, first.stderr
    assert first.stdout == "first\n"
    binding = read_bindings(Path(env["XDG_STATE_HOME"]) / "agy-host")["t1"]  # un-suffixed key
    assert binding["engine"] == "stream-json"
    second = cli(env, "run", "--session", "t1", "again")
    assert second.returncode == 0, second.stderr
    assert second.stdout == "again\n"
    argvs = fake.argvs()
    assert "--conversation" not in argvs[0]
    assert argvs[1][argvs[1].index("--conversation") + 1] == binding["conversation_id"]


@needs_cli
def test_agy_host_run_shows_agys_own_error_and_exit_code(cli_env: dict[str, str], fake_agy: Fake) -> None:
    env = {**cli_env, **fake_agy("happy", signed_in=False).env}
    proc = cli(env, "run", "--engine", "stream-json", "hi")
    assert proc.returncode == 1
    assert "authentication failed or timed out" in proc.stderr and "Run 'agy' to log in" in proc.stderr


@needs_cli
def test_agy_host_engine_and_doctor(cli_env: dict[str, str], fake_agy: Fake) -> None:
    env = {**cli_env, **fake_agy("happy").env, "AGY_HOST_ENGINE": "stream-json"}
    engine = cli(env, "engine")
    assert engine.returncode == 0 and "stream-json" in engine.stdout, engine.stderr
    doctor = cli(env, "doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "stream-json engine:" in doctor.stdout and "5 discovered" in doctor.stdout
