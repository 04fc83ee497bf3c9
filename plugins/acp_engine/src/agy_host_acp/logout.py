"""``agy-host acp-auth --logout``: sign an ACP agent out.

ACP's ``logout`` request ("Terminates the current authenticated session";
after it, new sessions require authentication) is sent only to an agent that
advertises it (``agentCapabilities.auth.logout``, which Antigravity's server
does), and the result is verified with a ``session/new`` probe. An agent
that does not offer it is not signed out by agy-host: the command says how
to do it by hand, exactly for Antigravity (from the shipped facts), and for
any other agent that ACP defines no other way.

agy-host never reads, writes or deletes a credential itself.
"""

from __future__ import annotations

from collections.abc import Mapping

from agy_host.config import Config
from agy_host_acp import auth_facts
from agy_host_acp.connection import AcpConnection
from agy_host_acp.jsonrpc import JsonRpcError, RequestTimeout
from agy_host_acp.onboarding import ERROR, OK, Echo, is_antigravity, who
from agy_host_acp.probe import PROBE_ERRORS, AgentCheck, fill_from, open_agent, session_probe
from agy_host_acp.process import SpawnError
from agy_host_acp.profiles import AgentSpec


def by_hand(env: Mapping[str, str], out: Echo) -> None:
    """Antigravity's sign-out without its server."""
    out("To sign Antigravity's ACP server out by hand (agy-host deletes nothing itself):")
    for line in auth_facts.sign_out_by_hand(env):
        out(f"  {line}")


def not_installed(env: Mapping[str, str], problem: str, out: Echo, err: Echo) -> int:
    by_hand(env, out)
    err(f"agy-host: error: {problem}")
    err("agy-host: so it could not be asked to sign out (logout); the steps above need no server.")
    return ERROR


async def sign_out(spec: AgentSpec, config: Config, env: Mapping[str, str], *, out: Echo, err: Echo) -> int:
    check = AgentCheck(command=" ".join(spec.command))
    try:
        async with open_agent(spec, config, env) as conn:
            fill_from(check, conn)
            antigravity = is_antigravity(spec, check)
            if not check.logout:
                return _not_offered(check, antigravity, env, out=out, err=err)
            return await _logout(check, conn, antigravity, config, env, out=out, err=err)
    except SpawnError as exc:
        err(f"agy-host: could not ask the agent: {exc}")
    except PROBE_ERRORS as exc:
        err(f"agy-host: error: {exc}")
    if spec.is_agy:
        by_hand(env, out)
    return ERROR


async def _logout(
    check: AgentCheck,
    conn: AcpConnection,
    antigravity: bool,
    config: Config,
    env: Mapping[str, str],
    *,
    out: Echo,
    err: Echo,
) -> int:
    assert conn.rpc is not None
    out(f"Asking {who(conn.spec)} to sign out (logout)...")
    try:
        await conn.rpc.request("logout", {}, timeout=config.acp.session_timeout_seconds)
    except RequestTimeout:
        err(f"agy-host: error: logout got no answer within {config.acp.session_timeout_seconds:g}s")
        return ERROR
    except JsonRpcError as exc:
        err(f"agy-host: error: the agent refused logout: {exc}" + (f": {exc.detail}" if exc.detail else ""))
        return ERROR
    # ACP: after a successful logout every new session requires authentication.
    await session_probe(check, conn, env)
    if check.auth == "sign-in-required":
        out(f"Signed out: session/new now asks for a sign-in ({check.auth_detail}).")
        return OK
    err(
        "agy-host: error: logout answered, but session/new still works: the agent is still signed in "
        "another way (a key in the environment, a method chosen in its settings)"
    )
    if antigravity:
        by_hand(env, out)
    return ERROR


def _not_offered(check: AgentCheck, antigravity: bool, env: Mapping[str, str], *, out: Echo, err: Echo) -> int:
    version = f" ({check.agent_version})" if check.agent_version else ""
    err(f"agy-host: the agent{version} does not offer ACP's logout (agentCapabilities.auth.logout).")
    if antigravity:
        by_hand(env, out)
        return ERROR
    out("ACP defines no other way to sign an agent out, and agy-host does not know how this one keeps")
    out("its sign-in: sign out with the agent's own command or settings (see its documentation).")
    for mid, command in check.auth_commands.items():
        out(f"It signs in ({mid}) with its own command: {command}")
    return ERROR


__all__ = ["by_hand", "not_installed", "sign_out"]
