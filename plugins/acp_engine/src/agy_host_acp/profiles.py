"""Which ACP agent to run: Antigravity's server (the default), a named
profile from config, any command line, or the bundled sandbox agent.

Antigravity's binary is resolved in the spec's order, and every path tried is
recorded so doctor can show why a binary was or was not found:

1. ``AGY_ACP_BIN``
2. ``acp.bin`` in config
3. ``agy_acp_server.par`` on ``PATH``
4. the install layout ``$AGY_ACP_HOME/current/agy_acp_server.par``
   (default ``~/.local/opt/agy-acp``, where ``agy-host acp install`` puts it)

On Linux the server gets ``--uid=`` (the registry's launch args), and
``ANTIGRAVITY_HARNESS_PATH`` points at the ``localharness_external`` next to the
binary when the user has not set it.

When nothing was asked for and no Antigravity server is installed, the engine
runs the bundled sandbox agent so that a fresh install can complete a real
turn; the output says so plainly.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import msgspec

from agy_host.config import Config

AGY_BINARY = "agy_acp_server.par"
HARNESS = "localharness_external"
INSTALL_CURRENT = Path("~/.local/opt/agy-acp/current") / AGY_BINARY

AgentKind = Literal["agy", "profile", "command", "sandbox"]


class AgentNotFound(Exception):
    """The requested agent cannot be started; the message lists what was tried."""


class Probe(msgspec.Struct):
    source: str
    path: str
    result: str


class AgentSpec(msgspec.Struct, kw_only=True):
    kind: AgentKind
    #: What to show the user: "Antigravity ACP server", a profile name, a command.
    label: str
    command: list[str]
    env: dict[str, str] = msgspec.field(default_factory=dict)
    store_suffix: str = "@acp"
    tried: list[Probe] = msgspec.field(default_factory=list)
    binary_source: str = ""

    @property
    def is_agy(self) -> bool:
        return self.kind == "agy"

    @property
    def memory_key(self) -> str:
        """Key for facts remembered about this agent (cancel support, ...)."""
        return self.store_suffix.removeprefix("@acp").lstrip(":") or "agy"


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


#: Where the user names the binary themselves; a wrong one is an error.
EXPLICIT_SOURCES = ("AGY_ACP_BIN", "config acp.bin")


def resolve_agy_binary(config: Config, env: Mapping[str, str]) -> tuple[Path | None, list[Probe], str]:
    """The Antigravity ACP server binary, every candidate tried, and its source."""
    tried: list[Probe] = []
    candidates: list[tuple[str, str]] = []
    if env.get("AGY_ACP_BIN"):
        candidates.append(("AGY_ACP_BIN", env["AGY_ACP_BIN"]))
    if config.acp.bin:
        candidates.append(("config acp.bin", config.acp.bin))
    for source, raw in candidates:
        path = Path(raw).expanduser()
        if _executable(path):
            tried.append(Probe(source=source, path=str(path), result="found"))
            return path, tried, source
        reason = "not executable" if path.exists() else "does not exist"
        tried.append(Probe(source=source, path=str(path), result=reason))
        # The user named this binary: another one (or the sandbox) in its
        # place would run turns on something they did not choose.
        return None, tried, ""
    on_path = shutil.which(AGY_BINARY, path=env.get("PATH"))
    if on_path:
        tried.append(Probe(source="PATH", path=on_path, result="found"))
        return Path(on_path), tried, "PATH"
    tried.append(Probe(source="PATH", path=AGY_BINARY, result="not on PATH"))
    root = env.get("AGY_ACP_HOME")
    home = env.get("HOME")
    if root:
        installed = Path(root).expanduser() / "current" / AGY_BINARY
    elif home:
        installed = Path(home) / ".local/opt/agy-acp/current" / AGY_BINARY
    else:
        installed = INSTALL_CURRENT.expanduser()
    if _executable(installed):
        tried.append(Probe(source="install dir", path=str(installed), result="found"))
        return installed, tried, "install dir"
    tried.append(Probe(source="install dir", path=str(installed), result="does not exist"))
    return None, tried, ""


def agy_spec(binary: Path, tried: list[Probe], source: str, env: Mapping[str, str]) -> AgentSpec:
    command = [str(binary)]
    if sys.platform.startswith("linux"):
        command.append("--uid=")
    extra: dict[str, str] = {}
    harness = binary.parent / HARNESS
    if "ANTIGRAVITY_HARNESS_PATH" not in env and harness.exists():
        extra["ANTIGRAVITY_HARNESS_PATH"] = str(harness)
    return AgentSpec(
        kind="agy",
        label="Antigravity ACP server",
        command=command,
        env=extra,
        store_suffix="@acp",
        tried=tried,
        binary_source=source,
    )


def sandbox_spec(tried: list[Probe]) -> AgentSpec:
    return AgentSpec(
        kind="sandbox",
        label="bundled sandbox agent (echo)",
        command=[sys.executable, "-m", "agy_host_acp.sandbox_agent"],
        store_suffix="@acp:sandbox",
        tried=tried,
        binary_source="bundled",
    )


def _command_suffix(command: list[str]) -> str:
    digest = hashlib.sha256(shlex.join(command).encode()).hexdigest()[:10]
    return f"@acp:{digest}"


def resolve_agent(config: Config, env: Mapping[str, str], requested: str | None) -> AgentSpec:
    """The agent for ``--agent`` (``requested``), else ``acp.agent``, else agy.

    ``requested`` may be ``agy``, ``sandbox``, a profile name from
    ``[acp.profiles]``, or a command line.
    """
    choice = (requested or config.acp.agent or "").strip()
    if choice == "sandbox":
        return sandbox_spec([])
    if choice in ("", "agy"):
        binary, tried, source = resolve_agy_binary(config, env)
        if binary is not None:
            return agy_spec(binary, tried, source, env)
        named = tried[-1] if tried and tried[-1].source in EXPLICIT_SOURCES else None
        if named is not None:
            fix = "unset AGY_ACP_BIN" if named.source == "AGY_ACP_BIN" else "`agy-host config unset acp.bin`"
            raise AgentNotFound(
                f"{named.source} names Antigravity's ACP server as {named.path}, which "
                f"{'does not exist' if named.result == 'does not exist' else 'is not an executable file'}. "
                f"Point it at the binary (`agy-host acp status` shows what is installed), or {fix} "
                "to look on PATH and in the install dir."
            )
        if choice == "agy":
            lines = "; ".join(f"{p.source}: {p.path} ({p.result})" for p in tried)
            raise AgentNotFound(
                f"Antigravity's ACP server ({AGY_BINARY}) was not found. Tried: {lines}. "
                "Set AGY_ACP_BIN or `agy-host config set acp.bin PATH`."
            )
        return sandbox_spec(tried)
    profile = config.acp.profiles.get(choice)
    if profile is not None:
        if not profile.command:
            raise AgentNotFound(f"profile {choice!r} in [acp.profiles] has an empty command")
        return AgentSpec(
            kind="profile",
            label=choice,
            command=list(profile.command),
            env=dict(profile.env),
            store_suffix=f"@acp:{choice}",
        )
    try:
        command = shlex.split(choice)
    except ValueError as exc:
        raise AgentNotFound(f"cannot parse --agent {choice!r}: {exc}") from exc
    if not command:
        raise AgentNotFound("empty --agent command")
    if Path(command[0]).name == AGY_BINARY:
        spec = agy_spec(Path(command[0]), [Probe(source="--agent", path=command[0], result="given")], "--agent", env)
        spec.command = [spec.command[0], *command[1:]] if len(command) > 1 else spec.command
        return spec
    return AgentSpec(kind="command", label=choice, command=command, store_suffix=_command_suffix(command))


__all__ = [
    "AGY_BINARY",
    "AgentKind",
    "AgentNotFound",
    "AgentSpec",
    "Probe",
    "agy_spec",
    "resolve_agent",
    "resolve_agy_binary",
    "sandbox_spec",
]
