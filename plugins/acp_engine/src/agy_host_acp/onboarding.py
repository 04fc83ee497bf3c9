"""The guided sign-in behind ``agy-host acp-auth``.

Without ``--method`` it starts the agent, lists its sign-in methods with the
``settings.json`` shapes Antigravity reads, says whether ``session/new``
works now, and names the next command. With ``--method``:

* ``oauth-personal`` (and any method an agent other than Antigravity
  offers): send ``authenticate``, print the sign-in URL the server writes
  (on stdout as a non-JSON line, or on stderr) the moment it appears, with the
  ``ssh -N -L <port>:127.0.0.1:<port>`` command for a machine without a
  browser, then verify by retrying ``session/new``.
* ``gemini-api-key``, ``agent-platform``, ``oauth-business``: these are
  chosen in ``settings.json``, read only when the server starts. Say which
  environment variables and which shape it reads, then verify on a fresh
  server (``--wait`` keeps retrying while the user edits the file).

agy-host never reads, writes or prints a credential. It reports only whether
the variables the server reads are *set*, never their values.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import msgspec
import trio

from agy_host.config import Config
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


SETTINGS_PATH = "~/.gemini/antigravity-acp/settings.json"

#: The settings shapes Antigravity's ACP server reads at startup (spec §3.12).
SETTINGS_SHAPES = {
    "oauth-personal": '{"auth": {"type": "oauth-personal"}}',
    "gemini-api-key": '{"auth": {"type": "gemini-api-key"}}   (and export GEMINI_API_KEY=...)',
    "oauth-business": '{"auth": {"type": "oauth-business"}, "gcp": {"project": "...", "location": "..."}}',
    "agent-platform": (
        '{"auth": {"type": "agent-platform"}, "gcp": {"project": "...", "location": "..."}}   '
        "(or GOOGLE_API_KEY, or GOOGLE_CLOUD_PROJECT + GOOGLE_CLOUD_LOCATION with ADC)"
    ),
}


def auth_guide(methods: list[tuple[str, str, str]]) -> str:
    """The text ``acp-auth`` prints: the agent's methods and the settings shapes."""
    lines = ["Sign-in methods the agent offers:"]
    if methods:
        for mid, name, desc in methods:
            lines.append(f"  {mid:<16} {name}" + (f" — {desc}" if desc else ""))
    else:
        lines.append("  (none advertised)")
    lines += [
        "",
        f"Antigravity's ACP server reads {SETTINGS_PATH} at startup. Shapes it accepts:",
    ]
    lines += [f"  {mid:<16} {shape}" for mid, shape in SETTINGS_SHAPES.items()]
    lines += [
        "",
        "For oauth-personal the server prints a sign-in URL ('Open the following link to authenticate the",
        "ACP server: https://accounts.google.com/...'); agy-host shows it when it appears. On a remote",
        "machine forward the redirect port first: ssh -N -L <port>:127.0.0.1:<port> <user@host>.",
        "A machine where the `agy` CLI is signed in is usually adopted without a browser.",
        "",
        "agy-host never reads, writes or prints credentials; check the result with `agy-host doctor`.",
    ]
    return "\n".join(lines)


class MethodGuide(msgspec.Struct, kw_only=True):
    shape: str
    env: list[str]
    how: list[str]


#: The methods Antigravity selects from settings.json (spec §2.3, A.4).
SETTINGS_METHODS: dict[str, MethodGuide] = {
    "gemini-api-key": MethodGuide(
        shape='{"auth": {"type": "gemini-api-key"}}',
        env=["GEMINI_API_KEY"],
        how=[
            "export GEMINI_API_KEY in the environment agy-host runs in (a key from Google AI Studio);",
            "the server reads it at startup. This is the usual choice for a headless machine.",
        ],
    ),
    "agent-platform": MethodGuide(
        shape='{"auth": {"type": "agent-platform"}, "gcp": {"project": "...", "location": "..."}}',
        env=["GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS"],
        how=[
            "either export GOOGLE_API_KEY, or give a project and location (GOOGLE_CLOUD_PROJECT and",
            "GOOGLE_CLOUD_LOCATION, or gcp.project / gcp.location in the file) with Application Default",
            "Credentials (`gcloud auth application-default login`, or GOOGLE_APPLICATION_CREDENTIALS).",
            "The legacy type name vertex-ai is still accepted.",
        ],
    ),
    "oauth-business": MethodGuide(
        shape='{"auth": {"type": "oauth-business"}, "gcp": {"project": "...", "location": "..."}}',
        env=[],
        how=[
            "Gemini Enterprise sign-in; it needs gcp.project and gcp.location in the file and can only be",
            "chosen there (the server's `authenticate` does not accept it).",
        ],
    ),
}


def settings_path(env: Mapping[str, str]) -> str:
    base = env.get("GEMINI_HOME")
    return str(Path(base) / "antigravity-acp/settings.json") if base else "~/.gemini/antigravity-acp/settings.json"


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


def resolve(config: Config, env: Mapping[str, str], agent: str | None) -> tuple[AgentSpec | None, str]:
    """The agent to sign in, or why there is none. Without ``--agent`` a
    missing Antigravity server is an error: signing in the sandbox agent
    would prove nothing."""
    try:
        spec = resolve_agent(config, env, agent)
    except AgentNotFound as exc:
        return None, str(exc)
    if spec.kind == "sandbox" and agent is None:
        tried = "; ".join(f"{p.source}: {p.path} ({p.result})" for p in spec.tried)
        return None, (
            f"Antigravity's ACP server is not installed (tried: {tried}). Install it first: agy-host acp install"
        )
    return spec, ""


def _who(spec: AgentSpec) -> str:
    """How messages name the agent: a command line is too long (and may
    carry arguments nobody wants echoed); a profile or Antigravity has a name."""
    return spec.label if spec.kind in ("agy", "profile") else "the agent"


def _state_line(check: AgentCheck) -> str:
    if check.auth == "signed-in":
        return "Sign-in state: signed in (session/new works)."
    if check.auth == "sign-in-required":
        return f"Sign-in state: not signed in. The agent says: {check.auth_detail}"
    return f"Sign-in state: unknown ({check.error})."


async def overview(spec: AgentSpec, config: Config, env: Mapping[str, str], out: Echo, err: Echo) -> int:
    """Methods, shapes, current state and the next command; no sign-in."""
    check = await check_agent(spec, config, env)
    if check.error and not check.started:
        err(f"agy-host: could not ask the agent: {check.error}")
        out(auth_guide([]))
        return ERROR
    out(auth_guide(check.auth_methods))
    out("")
    out(_state_line(check))
    if check.auth == "sign-in-required":
        ids = [m[0] for m in check.auth_methods]
        out("Next:")
        if "oauth-personal" in ids:
            out("  agy-host acp-auth --method oauth-personal    sign in with Google in a browser")
        for mid in ids:
            if mid in SETTINGS_METHODS and SETTINGS_METHODS[mid].env:
                out(f"  agy-host acp-auth --method {mid:<16} what to set, then a check")
        for mid in ids:
            if mid != "oauth-personal" and mid not in SETTINGS_METHODS:
                out(f"  agy-host acp-auth --method {mid}")
    return OK


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
    if spec.is_agy and method in SETTINGS_METHODS:
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
            if check.auth == "signed-in":
                out(f"Already signed in: session/new works on {_who(spec)}. Nothing to do.")
                return OK
            if not _offered(check, method, err):
                return USAGE
            out(f"Asking {_who(spec)} to sign in with {method} (authenticate)...")
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
            out(
                "Turns start their own server; if one still asks for a sign-in, select the method at startup with "
                '{"auth": {"type": "oauth-personal"}} in ' + settings_path(env) + ". `agy-host acp status` checks a "
                "fresh start."
            )
            return OK
        if trio.current_time() >= deadline:
            err(f"agy-host: error: authenticate answered, but session/new still needs a sign-in: {check.auth_detail}")
            return ERROR
        await trio.sleep(_RETRY_EVERY)


async def _settings_method(
    spec: AgentSpec, config: Config, env: Mapping[str, str], *, method: str, wait: float, out: Echo, err: Echo
) -> int:
    guide = SETTINGS_METHODS[method]
    check = await check_agent(spec, config, env, session=False)
    if check.error:
        err(f"agy-host: could not ask the agent: {check.error}")
        return ERROR
    if not _offered(check, method, err):
        return USAGE
    path = settings_path(env)
    out(f"{method}: {_who(spec)} selects this method from {path}, read when the server starts:")
    out(f"  {guide.shape}")
    for line in guide.how:
        out(f"  {line}")
    if guide.env:
        out("Environment (whether each is set here; values are never read or shown):")
        for name in guide.env:
            out(f"  {name:<32} {'set' if env.get(name) else 'not set'}")
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
    "SETTINGS_METHODS",
    "overview",
    "redirect_port",
    "resolve",
    "settings_path",
    "sign_in",
    "sign_in_lines",
]
