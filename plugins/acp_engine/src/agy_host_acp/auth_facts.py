"""What is known about signing Antigravity's ACP server in and out, without
the server: ``antigravity_auth.toml``, shipped with the plugin (its header
names the source of every value).

``agy-host acp-auth`` shows these facts before the 330 MB server is
installed; whatever needs the server itself (its sign-in state,
``authenticate``, ``logout``) says so. They are Antigravity's alone: another
ACP agent is described only by what it advertises in ``initialize``.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

import msgspec

#: ``agentInfo.name`` of Google's ACP server (RC01 to 1.3.0).
ANTIGRAVITY_AGENT_NAME = "antigravity-acp"


class MethodFact(msgspec.Struct, kw_only=True):
    id: str
    name: str
    #: The ``settings.json`` shape that selects it at startup.
    shape: str
    #: A short aside printed after the shape.
    note: str = ""
    #: The server's ``authenticate`` accepts it (else it is chosen in the file only).
    authenticate: bool = True
    #: The environment variables the server reads for it.
    env: list[str] = []
    #: How to set it up, one printed line each.
    how: list[str] = []


class SignIn(msgspec.Struct, kw_only=True):
    url: list[str]


class SignOut(msgspec.Struct, kw_only=True):
    by_hand: list[str]


class AntigravityAuth(msgspec.Struct, kw_only=True):
    folder: str
    settings: str
    token: str
    cli_token: str
    methods: list[MethodFact]
    sign_in: SignIn
    sign_out: SignOut

    def method(self, method_id: str) -> MethodFact | None:
        return next((m for m in self.methods if m.id == method_id), None)

    @property
    def settings_methods(self) -> dict[str, MethodFact]:
        """The methods chosen in ``settings.json`` (everything but the browser sign-in)."""
        return {m.id: m for m in self.methods if m.id != "oauth-personal"}


@functools.cache
def facts() -> AntigravityAuth:
    text = resources.files("agy_host_acp").joinpath("antigravity_auth.toml").read_text(encoding="utf-8")
    return msgspec.convert(tomllib.loads(text), AntigravityAuth)


def _folder(env: Mapping[str, str]) -> str:
    base = env.get("GEMINI_HOME")
    return str(Path(base) / facts().folder) if base else f"~/.gemini/{facts().folder}"


def settings_path(env: Mapping[str, str]) -> str:
    """Where the server reads its sign-in method (``$GEMINI_HOME`` honoured)."""
    return f"{_folder(env)}/{facts().settings}"


def token_path(env: Mapping[str, str]) -> str:
    return f"{_folder(env)}/{facts().token}"


def methods_guide() -> list[str]:
    """The four methods, as the server advertises them (not asked: the facts)."""
    return [f"  {m.id:<16} {m.name}" for m in facts().methods]


def settings_guide(env: Mapping[str, str]) -> list[str]:
    """The ``settings.json`` shapes and how the browser sign-in goes."""
    lines = [f"Antigravity's ACP server reads {settings_path(env)} at startup. Shapes it accepts:"]
    for m in facts().methods:
        lines.append(f"  {m.id:<16} {m.shape}" + (f"   ({m.note})" if m.note else ""))
    return [*lines, "", *facts().sign_in.url]


def sign_out_by_hand(env: Mapping[str, str]) -> list[str]:
    """What to delete or unset to sign Antigravity's server out without its ``logout``."""
    paths = {"token": token_path(env), "settings": settings_path(env), "cli_token": facts().cli_token}
    return [line.format(**paths) for line in facts().sign_out.by_hand]


__all__ = [
    "ANTIGRAVITY_AGENT_NAME",
    "AntigravityAuth",
    "MethodFact",
    "facts",
    "methods_guide",
    "settings_guide",
    "settings_path",
    "sign_out_by_hand",
    "token_path",
]
