"""The guided sign-in behind ``agy-host acp-auth``.

Without ``--method`` it starts the agent, lists its sign-in methods, says
whether ``session/new`` works now, and names the next command. For
Antigravity it adds the ``settings.json`` shapes its server reads (shipped
facts, :mod:`agy_host_acp.auth_facts`, shown even before the server is
installed); for any other agent it shows only what the agent advertised in
``initialize``: its methods, the command of a ``terminal`` method, whether it
offers ``logout``. With ``--method``:

* ``oauth-personal`` (and any method an agent other than Antigravity
  offers): send ``authenticate``, print the sign-in URL the server writes
  (on stdout as a non-JSON line, or on stderr) the moment it appears, with the
  ``ssh -N -L <port>:127.0.0.1:<port>`` command for a machine without a
  browser, then verify by retrying ``session/new``.
* ``gemini-api-key``, ``agent-platform``, ``oauth-business``: these are
  chosen in ``settings.json``, read only when the server starts. Say which
  environment variables and which shape it reads, then verify on a fresh
  server (``--wait`` keeps retrying while the user edits the file).

``--logout`` is :mod:`agy_host_acp.logout`.

agy-host never reads, writes or prints a credential. It reports only whether
the variables the server reads are *set*, never their values.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Mapping
from urllib.parse import parse_qs, urlsplit

import trio

from agy_host.config import Config
from agy_host_acp import auth_facts
from agy_host_acp.connection import AcpConnection, AuthRequired
from agy_host_acp.jsonrpc import RequestTimeout
from agy_host_acp.probe import PROBE_ERRORS, AgentCheck, check_agent, fill_from, open_agent, session_probe
from agy_host_acp.process import SpawnError
from agy_host_acp.profiles import AgentNotFound, AgentSpec, resolve_agent

Echo = Callable[[str], None]

OK, ERROR, USAGE = 0, 1, 2
#: Spec: an OAuth sign-in may take minutes; the original waited 10.
AUTH_TIMEOUT = 600.0
#: After ``authenticate`` answers, how long ``session/new`` is retried.
VERIFY_SECONDS = 5.0
_RETRY_EVERY = 1.0
_FRESH_RETRY_EVERY = 3.0


NEVER_CREDENTIALS = "agy-host never reads, writes or prints credentials; check the result with `agy-host doctor`."


def auth_guide(methods: list[tuple[str, str, str]], env: Mapping[str, str]) -> str:
    """What ``acp-auth`` prints for Antigravity: its methods and the settings shapes."""
    lines = ["Sign-in methods the agent offers:"]
    if methods:
        for mid, name, desc in methods:
            lines.append(f"  {mid:<16} {name}" + (f" — {desc}" if desc else ""))
    else:
        lines.append("  (none advertised)")
    lines += ["", *auth_facts.settings_guide(env), "", NEVER_CREDENTIALS]
    return "\n".join(lines)


def agent_guide(check: AgentCheck, again: str) -> str:
    """What ``acp-auth`` prints for an agent other than Antigravity: only what
    it advertised in ``initialize`` (its methods, the command of each
    ``terminal`` method, whether it offers ``logout``)."""
    lines = ["Sign-in methods the agent offers (its initialize answer):"]
    for mid, name, desc in check.auth_methods:
        lines.append(f"  {mid:<16} {name}" + (f" — {desc}" if desc else ""))
        if mid in check.auth_commands:
            lines.append(f"  {'':<16} its own sign-in: run {check.auth_commands[mid]}")
    if not check.auth_methods:
        lines.append("  (none advertised)")
    if check.logout:
        lines.append(f"Sign-out: the agent offers ACP's logout: {again} --logout")
    else:
        lines.append("Sign-out: the agent does not offer ACP's logout (agentCapabilities.auth.logout).")
    return "\n".join([*lines, "", NEVER_CREDENTIALS])


def is_antigravity(spec: AgentSpec, check: AgentCheck) -> bool:
    """Antigravity's server, resolved as such or recognised by its ``agentInfo.name``."""
    return spec.is_agy or check.agent_name == auth_facts.ANTIGRAVITY_AGENT_NAME


def again_command(agent: str | None) -> str:
    """``agy-host acp-auth`` for the same agent, to name the next command."""
    return "agy-host acp-auth" + (f" --agent {shlex.quote(agent)}" if agent else "")


def settings_path(env: Mapping[str, str]) -> str:
    return auth_facts.settings_path(env)


def redirect_port(url: str) -> str | None:
    """The loopback port in a Google sign-in URL's ``redirect_uri``."""
    try:
        query = parse_qs(urlsplit(url).query)
        redirect = query.get("redirect_uri", [""])[0]
        port = urlsplit(redirect).port if redirect else None
    except ValueError:
        return None
    return str(port) if port else None


def sign_in_lines(url: str) -> list[str]:
    port = redirect_port(url)
    p = port or "<port>"
    lines = [
        "Open this link in a browser and sign in with your Google account:",
        "",
        f"  {url}",
        "",
        f"Google then redirects the browser to http://127.0.0.1:{p}/ on the machine the server runs on.",
        "If that is a remote or headless machine, first run this on the computer with the browser:",
        f"  ssh -N -L {p}:127.0.0.1:{p} <user@this-machine>",
    ]
    if port is None:
        lines.append("(the port is the one in the link's redirect_uri)")
    lines.append("Waiting for the sign-in to finish (Ctrl-C to give up)...")
    return lines


def resolve(config: Config, env: Mapping[str, str], agent: str | None) -> tuple[AgentSpec | None, str, bool]:
    """The agent to sign in, or why there is none, and whether the reason is
    only that Antigravity's server is not installed (then the shipped facts
    can still be shown). Without ``--agent`` a missing server is an error:
    signing in the sandbox agent would prove nothing."""
    try:
        spec = resolve_agent(config, env, agent)
    except AgentNotFound as exc:
        return None, str(exc), False
    if spec.kind == "sandbox" and agent is None:
        tried = "; ".join(f"{p.source}: {p.path} ({p.result})" for p in spec.tried)
        problem = f"Antigravity's ACP server is not installed (tried: {tried}). Install it first: agy-host acp install"
        return None, problem, True
    return spec, "", False


def not_installed(env: Mapping[str, str], problem: str, method: str | None, out: Echo, err: Echo) -> int:
    """``acp-auth`` before the server is installed: what is known of it, and
    that the rest needs the server."""
    out("Antigravity's ACP server is not installed, so it was not asked. What is known of it:")
    out("Sign-in methods it offers:")
    for line in auth_facts.methods_guide():
        out(line)
    out("")
    for line in auth_facts.settings_guide(env):
        out(line)
    fact = auth_facts.facts().settings_methods.get(method or "")
    if fact is not None:
        out("")
        for line in method_lines(fact, env, "the server"):
            out(line)
    err(f"agy-host: error: {problem}")
    err("agy-host: its sign-in state, the browser sign-in and every check need the server itself.")
    return ERROR


def who(spec: AgentSpec) -> str:
    """How messages name the agent: a command line is too long (and may
    carry arguments nobody wants echoed); a profile or Antigravity has a name."""
    return spec.label if spec.kind in ("agy", "profile") else "the agent"


def _state_line(check: AgentCheck) -> str:
    if check.auth == "signed-in":
        return "Sign-in state: signed in (session/new works)."
    if check.auth == "sign-in-required":
        return f"Sign-in state: not signed in. The agent says: {check.auth_detail}"
    return f"Sign-in state: unknown ({check.error})."


async def overview(
    spec: AgentSpec, config: Config, env: Mapping[str, str], *, agent: str | None, out: Echo, err: Echo
) -> int:
    """Methods (and for Antigravity the shapes), current state and the next command; no sign-in."""
    check = await check_agent(spec, config, env)
    if check.error and not check.started:
        err(f"agy-host: could not ask the agent: {check.error}")
        if spec.is_agy:
            out(auth_guide([], env))
        return ERROR
    antigravity = is_antigravity(spec, check)
    again = again_command(agent)
    out(auth_guide(check.auth_methods, env) if antigravity else agent_guide(check, again))
    out("")
    out(_state_line(check))
    if check.auth == "sign-in-required":
        out("Next:")
        for line in _next_lines(check, antigravity, again):
            out(line)
    return OK


def _next_lines(check: AgentCheck, antigravity: bool, again: str) -> list[str]:
    ids = [m[0] for m in check.auth_methods]
    settings = auth_facts.facts().settings_methods if antigravity else {}
    lines = []
    if antigravity and "oauth-personal" in ids:
        lines.append(f"  {again} --method oauth-personal    sign in with Google in a browser")
    for mid in ids:
        if mid in settings and settings[mid].env:
            lines.append(f"  {again} --method {mid:<16} what to set, then a check")
    for mid in ids:
        if mid in settings or (antigravity and mid == "oauth-personal"):
            continue
        if mid in check.auth_commands:
            lines.append(f"  {check.auth_commands[mid]}    (the agent's own sign-in; then {again} checks it)")
        else:
            lines.append(f"  {again} --method {mid}")
    return lines


def _offered(check: AgentCheck, method: str, err: Echo) -> bool:
    ids = [m[0] for m in check.auth_methods]
    if method in ids:
        return True
    err(
        f"agy-host: error: the agent does not offer the sign-in method {method!r} "
        f"(it offers: {', '.join(ids) or 'none'})"
    )
    return False


async def sign_in(
    spec: AgentSpec,
    config: Config,
    env: Mapping[str, str],
    *,
    method: str,
    timeout: float,
    wait: float,
    out: Echo,
    err: Echo,
) -> int:
    """``--method``: for Antigravity's settings-selected methods, the guide and
    a fresh-start check; for everything else (``oauth-personal``, other agents'
    methods), ``authenticate``."""
    if spec.is_agy and method in auth_facts.facts().settings_methods:
        return await _settings_method(spec, config, env, method=method, wait=wait, out=out, err=err)
    return await _authenticate(spec, config, env, method=method, timeout=timeout, out=out, err=err)


async def _authenticate(
    spec: AgentSpec, config: Config, env: Mapping[str, str], *, method: str, timeout: float, out: Echo, err: Echo
) -> int:
    shown: set[str] = set()

    def on_notice(conn: AcpConnection, level: str, message: str, code: str) -> None:
        if code == "sign-in-url" and conn.sign_in_urls:
            url = conn.sign_in_urls[-1]
            if url not in shown:
                shown.add(url)
                out("")
                for line in sign_in_lines(url):
                    out(line)
            return
        err(f"agy-host: {level}: {message}")

    check = AgentCheck(command=" ".join(spec.command))
    try:
        async with open_agent(spec, config, env, on_notice=on_notice) as conn:
            fill_from(check, conn)
            await session_probe(check, conn, env)
            # A method the agent does not offer is a mistake, signed in or not;
            # an agent that lists no methods at all cannot be checked against.
            if check.auth_methods and not _offered(check, method, err):
                return USAGE
            if check.auth == "signed-in":
                out(f"Already signed in: session/new works on {who(spec)}. Nothing to do.")
                return OK
            if not _offered(check, method, err):
                return USAGE
            if method in check.auth_commands:
                # ACP: a terminal method is never passed to authenticate.
                err(
                    f"agy-host: error: {method!r} is the agent's own sign-in in a terminal: run "
                    f"{check.auth_commands[method]} yourself, then `agy-host acp-auth` checks it"
                )
                return USAGE
            out(f"Asking {who(spec)} to sign in with {method} (authenticate)...")
            try:
                await conn.authenticate(method, timeout=timeout if math.isfinite(timeout) else None)
            except AuthRequired as exc:
                err(f"agy-host: error: the sign-in failed: {exc.detail or exc}")
                return ERROR
            except RequestTimeout:
                err(
                    f"agy-host: error: the sign-in did not finish within {timeout:g}s; nothing was saved. "
                    "Run the command again (--timeout SECONDS gives it longer)"
                )
                return ERROR
            if not shown:
                out("The server accepted the sign-in without a browser (it adopted a sign-in already on this machine).")
            return await _verify_same(check, conn, env, out=out, err=err)
    except SpawnError as exc:
        err(f"agy-host: could not ask the agent: {exc}")
        return ERROR
    except PROBE_ERRORS as exc:
        err(f"agy-host: error: {exc}")
        return ERROR


async def _verify_same(check: AgentCheck, conn: AcpConnection, env: Mapping[str, str], *, out: Echo, err: Echo) -> int:
    """Retry ``session/new`` for a few seconds: the server may store the token
    just after it answers ``authenticate``."""
    deadline = trio.current_time() + VERIFY_SECONDS
    while True:
        await session_probe(check, conn, env)
        if check.auth == "signed-in":
            out("Signed in: session/new works now.")
            if is_antigravity(conn.spec, check):
                out(
                    "Turns start their own server; if one still asks for a sign-in, select the method at startup "
                    'with {"auth": {"type": "oauth-personal"}} in ' + settings_path(env) + ". `agy-host acp status` "
                    "checks a fresh start."
                )
            return OK
        if trio.current_time() >= deadline:
            err(f"agy-host: error: authenticate answered, but session/new still needs a sign-in: {check.auth_detail}")
            return ERROR
        await trio.sleep(_RETRY_EVERY)


def method_lines(fact: auth_facts.MethodFact, env: Mapping[str, str], who: str) -> list[str]:
    """How one settings-selected method is set up, and whether each variable
    it reads is set (never its value)."""
    lines = [f"{fact.id}: {who} selects this method from {settings_path(env)}, read when the server starts:"]
    lines.append(f"  {fact.shape}")
    lines += [f"  {line}" for line in fact.how]
    if fact.env:
        lines.append("Environment (whether each is set here; values are never read or shown):")
        lines += [f"  {name:<32} {'set' if env.get(name) else 'not set'}" for name in fact.env]
    return lines


async def _settings_method(
    spec: AgentSpec, config: Config, env: Mapping[str, str], *, method: str, wait: float, out: Echo, err: Echo
) -> int:
    check = await check_agent(spec, config, env, session=False)
    if check.error:
        err(f"agy-host: could not ask the agent: {check.error}")
        return ERROR
    if not _offered(check, method, err):
        return USAGE
    for line in method_lines(auth_facts.facts().settings_methods[method], env, who(spec)):
        out(line)
    out("agy-host does not write that file; edit it yourself, then this command checks a fresh server start.")
    deadline = trio.current_time() + max(wait, 0.0)
    attempt = 0
    while True:
        attempt += 1
        check = await check_agent(spec, config, env)
        if check.auth == "signed-in":
            out("Signed in: a fresh server answers session/new.")
            return OK
        if check.error and not check.started:
            err(f"agy-host: error: the server did not start: {check.error}")
            return ERROR
        if trio.current_time() >= deadline:
            detail = check.auth_detail or check.error
            err(f"agy-host: error: still not signed in after {attempt} check(s): {detail}")
            return ERROR
        out(f"not signed in yet (check {attempt}); checking again in {_FRESH_RETRY_EVERY:g}s...")
        await trio.sleep(_FRESH_RETRY_EVERY)


__all__ = [
    "AUTH_TIMEOUT",
    "agent_guide",
    "again_command",
    "who",
    "auth_guide",
    "is_antigravity",
    "method_lines",
    "not_installed",
    "overview",
    "redirect_port",
    "resolve",
    "settings_path",
    "sign_in",
    "sign_in_lines",
]
