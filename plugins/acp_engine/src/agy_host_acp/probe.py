"""Short-lived agent connections for ``acp status`` and ``acp-auth``.

The same :class:`AcpConnection` the driver uses, opened the way
``AcpEngine._probe_connection`` does, with one difference: the caller gets
the connection's notices as they happen. The sign-in URL Antigravity prints
(on stdout as a non-JSON line, or on stderr) must reach the user while
``authenticate`` is still waiting for the browser, not after.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import time
from collections.abc import AsyncIterator, Callable, Mapping

import msgspec
import trio

from agy_host.config import Config
from agy_host.engine.base import EngineError
from agy_host.engine.concurrency import unwrap_single
from agy_host.engine.lifecycle import Lifecycle
from agy_host_acp.connection import AcpConnection, AuthRequired
from agy_host_acp.jsonrpc import ConnectionClosed, JsonRpcError, RequestTimeout
from agy_host_acp.process import SpawnError
from agy_host_acp.profiles import AgentSpec

NoticeCallback = Callable[[AcpConnection, str, str, str], None]

#: What a probe can fail with; each has a message fit for the user.
PROBE_ERRORS = (EngineError, SpawnError, RequestTimeout, ConnectionClosed, JsonRpcError)


def probe_cwd(env: Mapping[str, str]) -> str:
    return str(env.get("PWD") or os.getcwd())


@contextlib.asynccontextmanager
async def open_agent(
    spec: AgentSpec,
    config: Config,
    env: Mapping[str, str],
    *,
    on_notice: NoticeCallback | None = None,
    lifecycle: Lifecycle | None = None,
) -> AsyncIterator[AcpConnection]:
    """Spawn ``spec``, run ``initialize``, yield the connection, then close it."""
    acp = config.acp
    log = lifecycle or Lifecycle()
    holder: list[AcpConnection] = []

    def notice(level: str, message: str, code: str) -> None:
        log.add("notice", level=level, message=message[:300])
        if on_notice is not None and holder:
            on_notice(holder[0], level, message, code)

    with unwrap_single():
        async with trio.open_nursery() as nursery:
            conn = AcpConnection(
                spec,
                cwd=probe_cwd(env),
                env=env,
                generation=1,
                lifecycle=log,
                on_exit=lambda _c: None,
                on_notice=notice,
                initialize_timeout=acp.initialize_timeout_seconds,
                session_timeout=acp.session_timeout_seconds,
                kill_grace=acp.kill_grace_seconds,
            )
            holder.append(conn)
            try:
                try:
                    await conn.start(nursery)
                except ConnectionClosed as exc:
                    # The reader often sees EOF before the exit is reaped; wait
                    # for the exit so the user gets the code and stderr tail.
                    with trio.CancelScope(shield=True):
                        await conn.aclose()
                    raise ConnectionClosed(
                        f"{spec.label} exited before answering initialize ({conn.exit_detail or exc})"
                    ) from exc
                yield conn
            finally:
                with trio.CancelScope(shield=True):
                    await conn.aclose()
                nursery.cancel_scope.cancel()


class AgentCheck(msgspec.Struct, kw_only=True):
    """One start of an agent: did it answer ``initialize``, is it signed in."""

    command: str
    started: bool = False
    error: str = ""
    #: Where it failed: ``start`` (spawn), ``initialize``, or ``session`` (session/new).
    error_stage: str = ""
    handshake_seconds: float | None = None
    agent_name: str = ""
    agent_title: str = ""
    agent_version: str = ""
    auth_methods: list[tuple[str, str, str]] = msgspec.field(default_factory=list)
    #: ``terminal`` methods: id -> the command the user runs to sign in (ACP's
    #: terminal auth: the agent's own command with the method's args; the
    #: names of its extra variables, never their values).
    auth_commands: dict[str, str] = msgspec.field(default_factory=dict)
    #: The agent offers ``logout`` (``agentCapabilities.auth.logout``).
    logout: bool = False
    #: ``signed-in``, ``sign-in-required``, or ``unknown`` (the probe failed first).
    auth: str = "unknown"
    auth_detail: str = ""
    sign_in_urls: list[str] = msgspec.field(default_factory=list)


def fill_from(check: AgentCheck, conn: AcpConnection) -> None:
    info = conn.info
    check.started = True
    check.handshake_seconds = round(conn.handshake_s, 3) if conn.handshake_s is not None else None
    if info is not None:
        agent = info.agent_info
        if agent is not None:
            check.agent_name = agent.name or ""
            check.agent_title = agent.title or ""
            check.agent_version = agent.version or ""
        check.auth_methods = [(m.id, m.name, m.description or "") for m in info.auth_methods]
        check.auth_commands = {
            m.id: terminal_command(
                conn.spec.command,
                [str(a) for a in m.args] if isinstance(m.args, list) else [],
                [str(k) for k in m.env] if isinstance(m.env, dict) else [],
            )
            for m in info.auth_methods
            if m.type == "terminal"
        }
        auth = info.agent_capabilities.auth
        check.logout = isinstance(auth, dict) and isinstance(auth.get("logout"), dict)


def terminal_command(command: list[str], args: list[str], env_names: list[str]) -> str:
    """What a ``terminal`` auth method asks the user to run: the agent's own
    command plus ``args``, with its extra variables named (values elided)."""
    names = " ".join(f"{name}=…" for name in sorted(env_names))
    return (names + " " if names else "") + shlex.join([*command, *args])


async def session_probe(check: AgentCheck, conn: AcpConnection, env: Mapping[str, str]) -> None:
    """``session/new``: it works only when the agent is signed in. Spends no tokens."""
    try:
        await conn.new_session(probe_cwd(env), [])
    except AuthRequired as exc:
        check.auth = "sign-in-required"
        check.auth_detail = exc.detail or str(exc)
        return
    check.auth = "signed-in"
    check.auth_detail = ""


async def check_agent(spec: AgentSpec, config: Config, env: Mapping[str, str], *, session: bool = True) -> AgentCheck:
    """Start the agent once: handshake, then (optionally) the sign-in probe."""
    check = AgentCheck(command=" ".join(spec.command))
    started = time.monotonic()
    try:
        async with open_agent(spec, config, env) as conn:
            fill_from(check, conn)
            if check.handshake_seconds is None:
                check.handshake_seconds = round(time.monotonic() - started, 3)
            if session:
                await session_probe(check, conn, env)
            check.sign_in_urls = list(conn.sign_in_urls)
    except SpawnError as exc:
        check.error, check.error_stage = str(exc), "start"
    except PROBE_ERRORS as exc:
        check.error, check.error_stage = str(exc), "session" if check.started else "initialize"
    return check


__all__ = [
    "PROBE_ERRORS",
    "AgentCheck",
    "check_agent",
    "fill_from",
    "open_agent",
    "probe_cwd",
    "session_probe",
    "terminal_command",
]
