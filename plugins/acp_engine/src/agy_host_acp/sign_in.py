"""Reading an agent's sign-in needs out of what it says.

Antigravity's ACP server prints its sign-in URL as a plain line on stdout or
stderr, outside the protocol, and answers ``-32000`` to requests until the
user signed in; other agents use ``-32000`` for any server error ("unknown
session"). These two readers keep the guesswork in one place.
"""

from __future__ import annotations

import re

from agy_host_acp.jsonrpc import JsonRpcError

_SIGN_IN = re.compile(r"(Open the following link to authenticate[^:]*:\s*)?(https://accounts\.google\.com/\S+)")


def sign_in_url(line: str) -> str | None:
    """The Google sign-in URL a line of the agent's output carries, if any."""
    m = _SIGN_IN.search(line)
    return m.group(2) if m else None


def is_auth_error(exc: JsonRpcError) -> bool:
    """-32000 is ACP's auth_required, but agents also use it for other server
    errors ("unknown session"); only treat it as a sign-in problem when it says so."""
    text = f"{exc.message} {exc.detail}".lower()
    reason = exc.data.get("reason") if isinstance(exc.data, dict) else None
    return "auth" in text or "sign in" in text or "login" in text or reason == "onboarding_failed"


__all__ = ["is_auth_error", "sign_in_url"]
