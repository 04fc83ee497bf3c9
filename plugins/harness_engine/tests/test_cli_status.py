"""``agy-host harness status`` and ``install`` as a user runs them (subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

from agy_host_harness import pin

from agy_host.testing.isolation import isolated_env


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "agy_host.cli.main", "harness", *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=60)


def test_status_says_what_is_missing_then_what_an_install_from_a_wheel_gave(tmp_path: Path) -> None:
    env = isolated_env(tmp_path / "home", XDG_DATA_HOME=str(tmp_path / "data"))
    env.pop("ANTIGRAVITY_HARNESS_PATH", None)
    missing = _cli(env, "status")
    assert missing.returncode == 1, missing
    assert "agy-host harness install" in missing.stdout and f"pinned: {pin.VERSION}" in missing.stdout, missing

    wheel = tmp_path / "w.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(pin.BINARY_IN_WHEEL, "#!/bin/sh\n")
    installed = _cli(env, "install", "--wheel", str(wheel), "--version", "9.9.9")
    assert installed.returncode == 0, installed
    assert "sha256" in installed.stdout

    status = _cli(env, "status", "--json")
    assert status.returncode == 0, status
    info = json.loads(status.stdout.splitlines()[0])
    assert (info["source"], info["usable"], info["version"]) == ("managed", True, "9.9.9"), info
    assert info["binary"] == str(tmp_path / "data" / "agy-host" / "harness" / "current" / "localharness")
    assert info["managed_install"]["sha256"] and info["managed_install"]["pinned"] is False

    named = _cli({**env, "ANTIGRAVITY_HARNESS_PATH": str(tmp_path / "nope")}, "status")
    assert named.returncode == 1 and "ANTIGRAVITY_HARNESS_PATH" in named.stdout and "does not exist" in named.stdout


def test_install_of_a_broken_wheel_is_a_clear_error(tmp_path: Path) -> None:
    env = isolated_env(tmp_path / "home", XDG_DATA_HOME=str(tmp_path / "data"))
    bad = tmp_path / "bad.whl"
    bad.write_text("not a zip")
    run = _cli(env, "install", "--wheel", str(bad))
    assert run.returncode == 1 and "is not a valid wheel" in run.stdout, run
    assert "Traceback" not in run.stdout + run.stderr
