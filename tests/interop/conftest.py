"""Fixtures for the interop suite: provisioned real agents (skipped, with the
reason, when provisioning is impossible here) and an isolated environment."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from interop.provision import (
    FastAgent,
    ProvisionReport,
    SdkAgents,
    Unavailable,
    provision_fast_agent,
    provision_sdk,
    reports,
)
from interop.provision_gemini import GeminiCli, provision_gemini_cli

from agy_host.testing.isolation import install_plugin


@pytest.fixture(scope="session")
def sdk_agents() -> SdkAgents:
    try:
        return provision_sdk()
    except Unavailable as exc:
        pytest.skip(f"ACP Python SDK example agents unavailable: {exc}")


@pytest.fixture(scope="session")
def fast_agent() -> FastAgent:
    try:
        return provision_fast_agent()
    except Unavailable as exc:
        pytest.skip(f"fast-agent-mcp unavailable: {exc}")


@pytest.fixture(scope="session")
def gemini_cli() -> GeminiCli:
    try:
        return provision_gemini_cli()
    except Unavailable as exc:
        pytest.skip(f"the Gemini CLI is unavailable: {exc}")


@pytest.fixture
def isolated_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment for an agent or the CLI: HOME and the XDG folders in a
    temporary folder, no agy-host settings inherited from the caller."""
    home = tmp_path / "home"
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("AGY_HOST_") and k not in {"VIRTUAL_ENV", "PYTHONPATH"}
    }
    env.update(
        AGY_HOST_KEEP_ALIVE_MINUTES="0",  # cold unless a test asks: no keeper outlives it
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
    )
    for key in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    yield env


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    first: dict[str, ProvisionReport] = {}
    for r in reports():  # the first call per agent is the one that did the work
        first.setdefault(r.agent, r)
    if not first:
        return
    terminalreporter.section("interop provisioning")
    for r in first.values():
        state = "cached" if r.cached else f"installed with {r.installer}"
        versions = ", ".join(f"{k} {v}" for k, v in sorted(r.versions.items()))
        terminalreporter.write_line(f"{r.agent}: {state} in {r.seconds:.1f}s ({versions})")


@pytest.fixture(scope="session")
def agy_host_cli() -> Path:
    """The ``agy-host`` console script of the environment under test."""
    sibling = Path(sys.executable).parent / "agy-host"
    found = sibling if sibling.exists() else (Path(p) if (p := shutil.which("agy-host")) else None)
    if found is None:
        pytest.fail(
            "the agy-host CLI is not installed in this environment (no agy-host next to the interpreter or on PATH)"
        )
    return found


#: A host-tool plugin for the bridge (``host_echo``), installed per test.
TOOLS = """
import json
from agy_host import hookimpl
from agy_host.contract.tools import HostTool, ToolResult


async def echo(args):
    return ToolResult(text="host echo: " + json.dumps(args, sort_keys=True))


@hookimpl
def agy_host_register_tools(register):
    schema = {"type": "object", "properties": {"token": {"type": "string"}}}
    register(HostTool(name="host_echo", description="echo the arguments", input_schema=schema, call=echo))
"""


@pytest.fixture
def tools_env(isolated_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """A host tool (``host_echo``) on the bridge; no terminal to ask on."""
    site = install_plugin(tmp_path / "site", "agyt_interop_tools", TOOLS)
    return {**isolated_env, "PYTHONPATH": str(site), "AGY_HOST_ENGINE": "acp", "AGY_HOST_TTY": "none"}
