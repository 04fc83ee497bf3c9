"""Secrets out of what agy-host writes down about an agent's traffic.

A wire trace (:mod:`agy_host.engine.trace`) is made to be attached to a bug
report, so it must be safe to share without reading it first. Three nets,
each catching what the others miss:

* **By name.** A JSON value under a key named like ``*key*``, ``*token*``,
  ``*secret*``, ``*password*``, ``*authorization*`` or ``*cookie*`` (the
  harness's ``apiKey``, a header map's ``x-bridge-token``), and the
  ``value`` of a ``{"name": ..., "value": ...}`` pair whose name is one (ACP
  sends headers and environment variables that way). Token *counts*
  (``inputTokens``, ``promptTokenCount``) are numbers about usage, not
  secrets, and are kept: a trace without usage is a worse bug report.
* **By shape, inside any string.** Google API keys (``AIza...``),
  ``sk-...`` keys, ``Bearer ...`` credentials, ``Authorization:`` header
  lines, and ``name=value`` / ``"name": "value"`` text whose name is
  sensitive (an agent echoing its environment or its config as text).
* **By value.** Literal secrets the host knows (values of sensitive
  environment variables and config keys, the bridge's token, the harness's
  socket key) are replaced wherever they appear, whatever surrounds them.

Only strings are replaced, with :data:`REDACTED`; numbers, booleans and the
structure stay, so the trace still shows what was sent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[redacted]"

#: A literal secret shorter than this is not scrubbed by value: ``true`` or
#: ``1`` in a sensitive-looking variable would otherwise blank every match.
MIN_SECRET_CHARS = 8

_WORDS = ("key", "token", "secret", "password", "passwd", "authorization", "cookie")
#: Sensitive-looking names that are counts or words, not credentials.
_NOT_SECRET = ("tokens", "tokencount", "tokenlimit", "keyword", "keyboard")

_SHAPES = re.compile(
    r"AIza[0-9A-Za-z_\-]{35}"  # Google API key
    r"|\bsk-[A-Za-z0-9_\-]{20,}"  # OpenAI / Anthropic style keys
)
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{6,}")
_AUTH_HEADER = re.compile(r"(?i)\b((?:proxy-)?authorization\s*:\s*)[^\r\n\"]+")
_NAMED = re.compile(
    r"""(?P<q>["']?)(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)(?P=q)(?P<sep>\s*[:=]\s*)(?P<vq>["']?)(?P<value>[^\s"'&,;{}\[\]]+)"""
)


def sensitive_name(name: str) -> bool:
    """Whether a key, header or variable named ``name`` holds a secret."""
    folded = name.lower().replace("_", "").replace("-", "")
    if not any(word in folded for word in _WORDS):
        return False
    return not any(word in folded for word in _NOT_SECRET)


def env_secrets(env: Mapping[str, str]) -> list[str]:
    """Values of the environment's sensitive variables (``GEMINI_API_KEY``...)."""
    return [value for name, value in env.items() if sensitive_name(name) and _worth_scrubbing(value)]


def value_secrets(value: Any) -> list[str]:
    """Strings under sensitive keys anywhere in a JSON-like value (a config)."""
    found: list[str] = []
    _collect(value, found)
    return found


def _collect(value: Any, found: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str) and isinstance(key, str) and sensitive_name(key):
                if _worth_scrubbing(item):
                    found.append(item)
            else:
                _collect(item, found)
    elif isinstance(value, list):
        for item in value:
            _collect(item, found)


def _worth_scrubbing(value: str) -> bool:
    return len(value) >= MIN_SECRET_CHARS and not value.isdigit()


def _named(match: re.Match[str]) -> str:
    value = match["value"]
    if value == REDACTED or value.isdigit() or not sensitive_name(match["name"]):
        return match[0]
    return match[0][: match.start("value") - match.start()] + REDACTED


class Redactor:
    """Redacts JSON-like values and text; knows the literal secrets it was given."""

    __slots__ = ("_secrets",)

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: list[str] = []
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        """More literal secrets (longest first, so a secret that contains
        another is replaced whole)."""
        known = set(self._secrets)
        known.update(s for s in secrets if _worth_scrubbing(s))
        self._secrets = sorted(known, key=len, reverse=True)

    def text(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        text = _SHAPES.sub(REDACTED, text)
        text = _BEARER.sub(lambda m: f"{m[1]} {REDACTED}", text)
        text = _AUTH_HEADER.sub(lambda m: m[1] + REDACTED, text)
        return _NAMED.sub(_named, text)

    def value(self, value: Any) -> Any:
        """A copy of a decoded JSON value with its secrets replaced."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            out: dict[Any, Any] = {}
            pair = _named_pair(value)
            for key, item in value.items():
                if (pair and key == "value") or (isinstance(key, str) and sensitive_name(key)):
                    out[key] = _blank(item)
                else:
                    out[key] = self.value(item)
            return out
        if isinstance(value, list):
            return [self.value(item) for item in value]
        return value


def _blank(value: Any) -> Any:
    """Every non-empty string in ``value`` replaced (a sensitive key's value,
    whatever its shape); numbers and the structure kept."""
    if isinstance(value, str):
        return REDACTED if value else value
    if isinstance(value, dict):
        return {key: _blank(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_blank(item) for item in value]
    return value


def _named_pair(value: dict[Any, Any]) -> bool:
    """``{"name": "x-bridge-token", "value": ...}``: ACP's headers and env."""
    name = value.get("name")
    return "value" in value and isinstance(name, str) and sensitive_name(name)


__all__ = ["MIN_SECRET_CHARS", "REDACTED", "Redactor", "env_secrets", "sensitive_name", "value_secrets"]
