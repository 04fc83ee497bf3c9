"""What the end-to-end bridge tests share: a throw-away installed plugin of
host tools, the child's environment, config, and the ``--format json``
events of one ``agy-host run``.

The tools plugin is a real entry point (a ``.dist-info`` on the child's
``PYTHONPATH``), so the host discovers it the way it finds any third-party
plugin; nothing is patched into the process under test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from agy_host.testing.isolation import install_plugin, isolated_env

AGY_HOST = Path(sys.executable).with_name("agy-host")

TOOLS_MODULE = """
import json
import trio
from agy_host import hookimpl
from agy_host.contract.tools import HostTool, ToolResult


async def echo(args):
    return ToolResult(text="echo " + json.dumps(args, sort_keys=True))


async def slow(args):
    await trio.sleep(float(args.get("seconds", 1)))
    return ToolResult(text="slow done after " + str(args.get("seconds")))


async def refuse(args):
    return ToolResult(text="refused by host policy", is_error=True)


@hookimpl
def agy_host_register_tools(register):
    schema = {"type": "object", "properties": {}}
    register(HostTool(name="host_echo", description="echo the arguments", input_schema=schema, call=echo))
    register(HostTool(name="slow_tool", description="take a while", input_schema=schema, call=slow))
    register(HostTool(name="guarded", description="always refuses", input_schema=schema, call=refuse))
"""


def e2e_env(tmp_path: Path, engine: str) -> dict[str, str]:
    """A clean environment for one engine: a private HOME and XDG dirs, no
    terminal, the tools plugin importable."""
    out = isolated_env(
        tmp_path / "home", AGY_HOST_ENGINE=engine, AGY_HOST_TTY="none", PYTHONPATH=str(tmp_path / "site")
    )
    install_plugin(tmp_path / "site", "agyt_tools", TOOLS_MODULE)
    return out


def write_config(env: dict[str, str], text: str) -> None:
    path = Path(env["XDG_CONFIG_HOME"]) / "agy-host" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


class Run:
    """One finished ``agy-host run --format json``: its events, by type."""

    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.proc = proc
        self.events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]

    @property
    def text(self) -> str:
        return "".join(e["delta"] for e in self.of("text"))

    def context(self) -> str:
        return f"exit {self.proc.returncode}\n{self.proc.stdout[-4000:]}\n--- stderr ---\n{self.proc.stderr[-4000:]}"


def run_cli(env: dict[str, str], *args: str, timeout: float = 90) -> Run:
    argv = [str(AGY_HOST), "run", "--format", "json", "--session", "e2e", *args]
    return Run(subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL))
