"""Which agent the ACP engine runs, and where it looked for Antigravity."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from agy_host.config import AcpProfile, Config
from agy_host_acp.profiles import AGY_BINARY, AgentNotFound, resolve_agent


def make_bin(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_resolution_order_env_then_config_then_path_then_install(tmp_path: Path) -> None:
    env_bin = make_bin(tmp_path / "env" / AGY_BINARY)
    cfg_bin = make_bin(tmp_path / "cfg" / AGY_BINARY)
    path_bin = make_bin(tmp_path / "path" / AGY_BINARY)
    inst_bin = make_bin(tmp_path / "home/.local/opt/agy-acp/current" / AGY_BINARY)
    (inst_bin.parent / "localharness_external").write_text("")
    cfg = Config()
    cfg.acp.bin = str(cfg_bin)
    env = {"AGY_ACP_BIN": str(env_bin), "PATH": str(path_bin.parent), "HOME": str(tmp_path / "home")}
    assert resolve_agent(cfg, env, None).command[0] == str(env_bin)
    env.pop("AGY_ACP_BIN")
    assert resolve_agent(cfg, env, None).command[0] == str(cfg_bin)
    cfg.acp.bin = ""
    assert resolve_agent(cfg, env, None).command[0] == str(path_bin)
    env["PATH"] = str(tmp_path / "nothing")
    spec = resolve_agent(cfg, env, None)
    assert spec.command[0] == str(inst_bin)
    assert spec.env["ANTIGRAVITY_HARNESS_PATH"] == str(inst_bin.parent / "localharness_external")
    if sys.platform.startswith("linux"):
        assert spec.command[1:] == ["--uid="]
    assert [p.result for p in spec.tried] == ["not on PATH", "found"]
    assert spec.store_suffix == "@acp"


def test_missing_agy_falls_back_to_sandbox_unless_asked_for(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    spec = resolve_agent(Config(), env, None)
    assert spec.kind == "sandbox"
    assert [p.source for p in spec.tried] == ["PATH", "install dir"]
    with pytest.raises(AgentNotFound, match=r"PATH: agy_acp_server.par \(not on PATH\)"):
        resolve_agent(Config(), env, "agy")


@pytest.mark.parametrize("requested", [None, "agy"])
def test_a_binary_the_user_named_that_cannot_run_is_an_error_never_a_fallback(
    tmp_path: Path, requested: str | None
) -> None:
    on_path = make_bin(tmp_path / "path" / AGY_BINARY)
    env = {"PATH": str(on_path.parent), "HOME": str(tmp_path), "AGY_ACP_BIN": str(tmp_path / "nope")}
    with pytest.raises(AgentNotFound, match=r"AGY_ACP_BIN names .*nope, which does not exist.*unset AGY_ACP_BIN"):
        resolve_agent(Config(), env, requested)
    cfg = Config()
    cfg.acp.bin = str(tmp_path)  # a directory: exists, not executable as a file
    env.pop("AGY_ACP_BIN")
    with pytest.raises(AgentNotFound, match=r"config acp.bin names .*, which is not an executable file"):
        resolve_agent(cfg, env, requested)


def test_profiles_and_commands_get_their_own_store_keys(tmp_path: Path) -> None:
    cfg = Config()
    cfg.acp.profiles["gemini"] = AcpProfile(command=["gemini", "--acp"], env={"X": "1"})
    prof = resolve_agent(cfg, dict(os.environ), "gemini")
    assert (prof.kind, prof.command, prof.env, prof.store_suffix) == (
        "profile",
        ["gemini", "--acp"],
        {"X": "1"},
        "@acp:gemini",
    )
    cmd = resolve_agent(cfg, dict(os.environ), "python3 -m my_agent --flag 'a b'")
    assert cmd.kind == "command"
    assert cmd.command == ["python3", "-m", "my_agent", "--flag", "a b"]
    other = resolve_agent(cfg, dict(os.environ), "python3 -m other_agent")
    assert cmd.store_suffix.startswith("@acp:") and cmd.store_suffix != other.store_suffix
    with pytest.raises(AgentNotFound, match="cannot parse"):
        resolve_agent(cfg, dict(os.environ), "unterminated 'quote")


def test_install_root_follows_agy_acp_home(tmp_path: Path) -> None:
    binary = make_bin(tmp_path / "opt" / "current" / AGY_BINARY)
    env = {"PATH": str(tmp_path / "none"), "HOME": str(tmp_path / "home"), "AGY_ACP_HOME": str(tmp_path / "opt")}
    spec = resolve_agent(Config(), env, None)
    assert spec.kind == "agy" and spec.command[0] == str(binary)
