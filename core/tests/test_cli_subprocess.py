"""The real ``agy-host`` console script in a subprocess, in an isolated home:
the fast ``--version`` path, discovery through real entry points, config
files (including broken ones), and a run through an entry-point engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from engines.distributions import make_dist

from agy_host.testing.isolation import isolated_env
from agy_host.testing.store import read_bindings

TESTS_DIR = Path(__file__).resolve().parent
AGY_HOST = Path(sys.executable).with_name("agy-host")

pytestmark = pytest.mark.skipif(not AGY_HOST.exists(), reason=f"console script not installed next to {sys.executable}")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    out = isolated_env(home)
    return out


def agy(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(AGY_HOST), *args], env=env, capture_output=True, text=True, timeout=timeout)


def config_file(env: dict[str, str]) -> Path:
    return Path(env["XDG_CONFIG_HOME"]) / "agy-host" / "config.toml"


def test_version() -> None:
    proc = subprocess.run([str(AGY_HOST), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout.startswith("agy-host ")


def test_version_imports_nothing_heavy() -> None:
    code = (
        "import sys; from agy_host.cli.main import main; rc = main(['--version']);"
        "heavy = [m for m in ('typer', 'trio', 'msgspec', 'stevedore') if m in sys.modules];"
        "print(rc, heavy)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.splitlines()[-1] == "0 []"


IMPORTED = (
    "import sys; from agy_host.cli.main import main; rc = main(sys.argv[1:]);"
    "print(); print(rc, sorted({m.split('.')[0] for m in sys.modules} & {'trio', 'pydantic', 'rich', 'mcp'}))"
)


def _heavy_imports(env: dict[str, str], *args: str) -> tuple[str, str]:
    proc = subprocess.run([sys.executable, "-c", IMPORTED, *args], env=env, capture_output=True, text=True, timeout=60)
    return proc.stdout.splitlines()[-1], proc.stderr


def test_commands_that_run_no_turn_do_not_import_trio_or_pydantic(env: dict[str, str]) -> None:
    # `plugins`, `--help` and config editing are typed at a shell prompt: each
    # of these imports costs a tenth of a second (docs/performance.md, B2).
    for args in (["plugins"], ["--help"], ["run", "--help"], ["config", "path"]):
        line, stderr = _heavy_imports(env, *args)
        assert line == "0 []", (args, line, stderr)


@pytest.mark.skipif(
    "acp" not in {ep.name for ep in metadata.entry_points(group="agy_host.engines")},
    reason="the ACP engine is not installed",
)
def test_a_one_shot_run_does_not_import_pydantic(env: dict[str, str]) -> None:
    # typer >= 0.29 parses every option through pydantic; the bridge loads the
    # MCP SDK only when the agent connects to it.
    agent = f"{sys.executable} -m agy_host.testing.acp.agent --scenario echo"
    line, stderr = _heavy_imports(env, "run", "--engine", "acp", "--agent", agent, "hi")
    assert line == "0 ['trio']", (line, stderr)


def test_plugins_json(env: dict[str, str]) -> None:
    proc = agy(env, "plugins", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["version"] == 1
    assert all(not p.get("builtin") for p in doc["plugins"])
    for key in ("engines", "disabled", "errors"):
        assert isinstance(doc[key], list)


@pytest.fixture
def site(tmp_path: Path, env: dict[str, str]) -> Path:
    """Throw-away distributions on the child's PYTHONPATH (with the echo
    engine module importable from this tests folder)."""
    root = tmp_path / "site"
    env["PYTHONPATH"] = os.pathsep.join([str(root), str(TESTS_DIR)])
    make_dist(root, "agyt-echo", entry_points={"agy_host.engines": {"echo": "engines.echo_engine:EchoEngine"}})
    make_dist(root, "agyt-broken", entry_points={"agy_host": {"agyt_broken": "agyt_no_such_module"}})
    return root


def test_a_broken_plugin_is_reported_not_a_crash(env: dict[str, str], site: Path) -> None:
    proc = agy(env, "plugins", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    [err] = [e for e in doc["errors"] if e["name"] == "agyt_broken"]
    assert err["distribution"] == "agyt-broken"
    assert "ModuleNotFoundError" in err["error"]
    assert any(e["name"] == "echo" and e["distribution"] == "agyt-echo" for e in doc["engines"])
    proc = agy(env, "doctor", "--engine", "echo")
    assert "agyt_broken" in proc.stdout and "failed: ModuleNotFoundError" in proc.stdout
    assert proc.returncode == 1  # a load error is an error row


def test_disable_plugins(env: dict[str, str], site: Path) -> None:
    env["AGY_HOST_DISABLE_PLUGINS"] = "agyt_broken"
    doc = json.loads(agy(env, "plugins", "--format", "json").stdout)
    assert "agyt_broken" in doc["disabled"]
    assert not [e for e in doc["errors"] if e["name"] == "agyt_broken"]


def test_trace_hooks(env: dict[str, str], site: Path) -> None:
    env["AGY_HOST_TRACE_HOOKS"] = "1"
    proc = agy(env, "plugins")
    assert "[hook] agy_host_register_commands" in proc.stderr


def test_engine_selection_and_persistence(env: dict[str, str], site: Path) -> None:
    proc = agy(env, "engine", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert "echo" in doc["installed"]
    assert doc["source"] in {"default", "first", "only"}
    proc = agy(env, "engine", "echo")
    assert proc.returncode == 0, proc.stderr
    assert 'engine = "echo"' in config_file(env).read_text()
    proc = agy(env, "engine")
    assert proc.stdout.startswith("engine: echo ('engine' in ")
    env["AGY_HOST_ENGINE"] = "echo"
    assert agy(env, "engine").stdout.startswith("engine: echo (AGY_HOST_ENGINE is set)")
    proc = agy(env, "engine", "missing")
    assert proc.returncode == 1
    assert "installed engines:" in proc.stderr


def test_run_through_an_entry_point_engine(env: dict[str, str], site: Path) -> None:
    proc = agy(env, "run", "--engine", "echo", "--session", "sub", "hello")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "echo: hello\n"
    assert "session: sub" in proc.stderr
    assert "sub@echo" in read_bindings(Path(env["XDG_STATE_HOME"]) / "agy-host")
    last = json.loads((Path(env["XDG_STATE_HOME"]) / "agy-host" / "last-driver.json").read_text())
    assert last["session"] == "sub" and last["snapshot"]["engine"] == "echo"


def test_config_set_and_show(env: dict[str, str]) -> None:
    proc = agy(env, "config", "set", "turn.timeout_minutes", "2.5")
    assert proc.returncode == 0, proc.stderr
    assert "timeout_minutes = 2.5" in config_file(env).read_text()
    assert (config_file(env).stat().st_mode & 0o777) == 0o600
    proc = agy(env, "config", "show")
    assert proc.returncode == 0
    assert "timeout_minutes = 2.5" in proc.stdout
    assert proc.stdout.splitlines()[0] == f"# {config_file(env)}"
    assert agy(env, "config", "path").stdout.strip() == str(config_file(env))
    proc = agy(env, "config", "set", "turn.bogus", "1")
    assert proc.returncode == 1 and "unknown config key" in proc.stderr


def test_a_corrupt_config_is_moved_aside_with_a_warning(env: dict[str, str]) -> None:
    path = config_file(env)
    path.parent.mkdir(parents=True)
    path.write_text("this is [not toml\n")
    proc = agy(env, "config", "show")
    assert proc.returncode == 0
    assert "agy-host: warning: config:" in proc.stderr and "moved it to" in proc.stderr
    [moved] = list(path.parent.glob("config.toml.corrupt-*"))
    assert moved.read_text() == "this is [not toml\n"
    # ``set`` now starts a fresh file; the broken one stays aside.
    assert agy(env, "config", "set", "model", "flash").returncode == 0
    assert moved.exists()


def test_a_bad_value_is_narrowed_with_a_warning(env: dict[str, str]) -> None:
    path = config_file(env)
    path.parent.mkdir(parents=True)
    path.write_text('model = "kept"\n[turn]\ntimeout_minutes = "ten"\n')
    proc = agy(env, "config", "show", "--format", "json")
    assert proc.returncode == 0
    cfg = json.loads(proc.stdout)["config"]
    assert cfg["turn"]["timeout_minutes"] == 10.0
    assert cfg["model"] == "kept"
    assert "agy-host: warning: config: bad value for 'turn.timeout_minutes'" in proc.stderr
    env["AGY_HOST_TIMEOUT_MINUTES"] = "forever"
    proc = agy(env, "config", "show")
    assert "$AGY_HOST_TIMEOUT_MINUTES='forever' ignored" in proc.stderr


def test_ctrl_c_while_the_agent_starts_exits_130_cleanly(env: dict[str, str], site: Path, tmp_path: Path) -> None:
    import signal
    import time

    marker = tmp_path / "opening"
    path = config_file(env)
    path.parent.mkdir(parents=True)
    path.write_text(f'[echo]\nslow_open = "{marker}"\n')
    proc = subprocess.Popen(
        [str(AGY_HOST), "run", "--engine", "echo", "hi"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert time.monotonic() < deadline, "the engine never started opening"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130
    assert "interrupted" in err
    assert "Traceback" not in err
