"""Whether the model endpoint can be reached at all, checked when the engine
opens: with a driver's first turn (while the harness starts, so it costs no
time), again after a turn could not reach it, and by ``doctor``.

A wrong ``[harness] base_url`` (a port nobody listens on, a host that does
not resolve) never recovers, and the harness would spend its whole retry
budget on it. One TCP connection to the endpoint's host and port tells at
once, and the turn fails naming the endpoint and the setting it came from.

Only an endpoint given by URL is checked (``base_url``,
``$GOOGLE_GEMINI_BASE_URL``, ``openai_base_url``): Google's own endpoints
are right by construction, and an outage there is the retry budget's
business (:mod:`.retries`). Nor is one a proxy stands in front of
(``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY`` in the harness's
environment, for a host that is not loopback): the harness talks to the
proxy, not to the host.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Mapping
from urllib.parse import urlsplit

import trio

from agy_host_harness.harness_config import Endpoint

#: How long the connection may take before the endpoint counts as unreachable.
PROBE_TIMEOUT_S = 5.0
_PROXIES = {"http": ("HTTP_PROXY", "ALL_PROXY"), "https": ("HTTPS_PROXY", "ALL_PROXY")}


def target(point: Endpoint, env: Mapping[str, str]) -> tuple[str, int] | str | None:
    """``(host, port)`` to connect to; a problem with the URL itself (a
    string); ``None`` when there is nothing to check."""
    if not point.base_url or point.kind == "vertex":
        return None
    parts = urlsplit(point.base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{point.source or 'the endpoint'} {point.base_url!r} is not an http(s) URL"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return f"{point.source or 'the endpoint'} {point.base_url!r} has a bad port"
    host = parts.hostname
    return (host, port) if _direct(host, parts.scheme, env) else None


async def problem(point: Endpoint, env: Mapping[str, str], timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Why the endpoint cannot be reached, in a sentence naming it; ``None`` when it can (or is not checked)."""
    where = target(point, env)
    if where is None:
        return None
    if isinstance(where, str):
        return where
    host, port = where
    why = ""
    with trio.move_on_after(timeout_s):
        try:
            stream = await trio.open_tcp_stream(host, port)
        except socket.gaierror:
            why = f"the host name {host!r} does not resolve"
        except OSError as exc:
            why = _reason(exc)
        else:
            await stream.aclose()
            return None
    why = why or f"no connection within {timeout_s:g}s"
    named = f"the model endpoint {point.base_url} ({point.source})"
    return f"{named} cannot be reached: {why}; is the server running, and is {point.source} right?"


async def problem_while(
    nursery: trio.Nursery, work: Callable[[], Awaitable[object]], point: Endpoint, env: Mapping[str, str]
) -> str | None:
    """:func:`problem`, checked on ``nursery`` while ``work`` runs (the
    harness starting): the check costs no time of its own. An error of
    ``work`` propagates as itself; the check then ends by its own bound."""
    found: list[str | None] = []
    checked = trio.Event()

    async def check() -> None:
        try:
            found.append(await problem(point, env))
        finally:
            checked.set()

    nursery.start_soon(check)
    await work()
    await checked.wait()
    return found[0] if found else None


def _reason(exc: OSError) -> str:
    """``connection refused`` rather than trio's "all attempts to connect ... failed"."""
    group = exc.__cause__ if isinstance(exc.__cause__, BaseExceptionGroup) else None
    causes = [exc, *(group.exceptions if group is not None else ())]
    for cause in causes:
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
    for cause in causes:
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror.lower()
    return str(exc)


def _direct(host: str, scheme: str, env: Mapping[str, str]) -> bool:
    """Whether the harness connects to ``host`` itself: Go never sends a
    loopback host through a proxy, and any other goes through one when a
    proxy variable for the scheme is set."""
    if host == "localhost":
        return True
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(host).is_loopback:
            return True
    return not any(env.get(k) or env.get(k.lower()) for k in _PROXIES[scheme])


__all__ = ["PROBE_TIMEOUT_S", "problem", "problem_while", "target"]
