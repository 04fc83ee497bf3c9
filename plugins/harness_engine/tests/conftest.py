"""The real harness binary for these tests, and a home to run agy-host in.

The binary comes from ``$ANTIGRAVITY_HARNESS_PATH`` or the repository's
git-ignored cache ``.cache/harness`` (filled once, from the pinned wheel on
PyPI, by ``python -m agy_host_harness.install``; CI keeps the folder). On a
platform Google publishes no wheel for, the tests that need it skip with that
reason; anywhere else a failed provisioning is a failure, never a skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from agy_host.testing.isolation import install_plugin, isolated_env
from agy_host.testing.models.api import ModelApiProcess

REPO = Path(__file__).resolve().parents[3]
CACHE = REPO / ".cache" / "harness"

HOST_TOOLS_PLUGIN = """
import json
import trio
from agy_host import hookimpl
from agy_host.contract.tools import HostTool, ToolResult


async def echo(args):
    return ToolResult(text="echo " + json.dumps(args, sort_keys=True))


async def slow(args):
    await trio.sleep(float(args.get("seconds", 1)))
    return ToolResult(text="slow done")


async def picture(args):
    # a 1x1 PNG
    data = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    return ToolResult(text="here is the picture", images=[(data, "image/png")])


@hookimpl
def agy_host_register_tools(register):
    schema = {"type": "object", "properties": {"x": {"type": "integer"}, "seconds": {"type": "number"}}}
    register(HostTool(name="host_echo", description="echo the arguments", input_schema=schema, call=echo))
    register(HostTool(name="slow_tool", description="take a while", input_schema=schema, call=slow))
    register(HostTool(name="picture", description="a picture", input_schema=schema, call=picture))
"""


@pytest.fixture(scope="session")
def harness_binary() -> str:
    from agy_host_harness.install import platform_problem

    given = os.environ.get("ANTIGRAVITY_HARNESS_PATH", "").strip()
    if given:
        return given
    binary = CACHE / "current" / "localharness"
    if not binary.is_file():
        problem = platform_problem()
        if problem:
            pytest.skip(problem)
        proc = subprocess.run(
            [sys.executable, "-m", "agy_host_harness.install", "--dir", str(CACHE), "--if-missing"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, f"provisioning the pinned harness failed:\n{proc.stdout}\n{proc.stderr}"
    return str(binary)


class Run:
    def __init__(self, args: list[str], proc: subprocess.CompletedProcess[str], seconds: float) -> None:
        self.args = args
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.seconds = seconds
        self.events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind]

    @property
    def text(self) -> str:
        return "".join(e["delta"] for e in self.of("text"))

    @property
    def end(self) -> dict[str, Any]:
        ends = self.of("turn_end")
        return ends[-1] if ends else {}

    def __repr__(self) -> str:
        return f"agy-host {' '.join(self.args)} -> {self.returncode}\n{self.stdout[-3000:]}\n{self.stderr[-3000:]}"


class HarnessHome:
    """A private HOME where ``agy-host --engine harness`` runs against a scripted model."""

    def __init__(self, root: Path, binary: str) -> None:
        self.root = root
        self.cwd = root / "project"
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.site = root / "site"
        install_plugin(self.site, "harness_test_tools", HOST_TOOLS_PLUGIN)
        self.env = isolated_env(
            root / "home",
            ANTIGRAVITY_HARNESS_PATH=binary,
            AGY_HOST_TTY="none",
            GEMINI_API_KEY="test-key",
            PYTHONPATH=os.pathsep.join([str(self.site), *filter(None, [os.environ.get("PYTHONPATH")])]),
        )
        self.env.pop("GOOGLE_GEMINI_BASE_URL", None)
        self.model: ModelApiProcess | None = None
        self.config: dict[str, dict[str, Any]] = {"turn": {"timeout_minutes": 1.0, "inactivity_minutes": 0.5}}

    @property
    def state(self) -> Path:
        return Path(self.env["XDG_STATE_HOME"]) / "agy-host"

    def serve(self, script: Mapping[str, Any], api_key: str | None = None) -> ModelApiProcess:
        if self.model is not None:
            self.model.close()
        self.model = ModelApiProcess(self.root / "model", dict(script), api_key=api_key)
        self.configure(harness={"base_url": self.model.url})
        return self.model

    def configure(self, **sections: Mapping[str, Any]) -> None:
        for name, values in sections.items():
            self.config.setdefault(name, {}).update(values)
        path = Path(self.env["XDG_CONFIG_HOME"]) / "agy-host" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(tomli_w.dumps(self.config))

    def run(self, *args: str, env: Mapping[str, str] | None = None, timeout: float = 90) -> Run:
        argv = [sys.executable, "-m", "agy_host.cli.main", *args]
        started = time.monotonic()
        proc = subprocess.run(
            argv,
            env={**self.env, **(env or {})},
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        return Run(list(args), proc, time.monotonic() - started)

    def turn(self, session: str, prompt: str, *args: str, **kw: Any) -> Run:
        return self.run("run", "--engine", "harness", "--format", "json", "--session", session, *args, prompt, **kw)

    def close(self) -> None:
        if self.model is not None:
            self.model.close()


@pytest.fixture
def hhome(tmp_path: Path, harness_binary: str) -> Iterator[HarnessHome]:
    home = HarnessHome(tmp_path, harness_binary)
    yield home
    home.close()
