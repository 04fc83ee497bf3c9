"""The one place the install commands talk HTTP: URL policy and the opener.

The standard library's ``urllib.request`` is enough (GET, Range, redirects),
so the plugin adds no HTTP dependency. It is blocking: callers run it in a
worker thread through ``trio.to_thread.run_sync``, the one thread use the
project allows, because no trio-native HTTP client is a dependency.

URL policy: ``https`` anywhere; ``http`` only to a loopback address (a local
mirror, the tests); ``file`` for an offline copy of the registry or an
archive. The policy is checked again on every redirect, so an https URL cannot
be bounced to plain http on another host.
"""

from __future__ import annotations

import ipaddress
import urllib.error
import urllib.request
from collections.abc import Mapping
from http.client import HTTPMessage
from typing import IO, Any
from urllib.parse import urlsplit

USER_AGENT = "agy-host-acp-install"


class UrlRefused(Exception):
    """A URL that the policy does not allow."""


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str) -> None:
    """Raise :class:`UrlRefused` unless ``url`` may be fetched."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in {"https", "file"}:
        return
    if scheme == "http":
        if _loopback(parts.hostname or ""):
            return
        raise UrlRefused(f"refusing plain http to a non-loopback host: {url} (use https)")
    raise UrlRefused(f"unsupported URL scheme {parts.scheme!r}: {url}")


class _CheckedRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(  # noqa: PLR0917 - urllib's signature
        self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str, headers: HTTPMessage, newurl: str
    ) -> urllib.request.Request | None:
        check_url(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_CheckedRedirects)


def open_url(url: str, headers: Mapping[str, str] | None = None, *, timeout: float) -> Any:
    """Open ``url`` (blocking; call it from a worker thread). Returns the
    response object; HTTP errors raise ``urllib.error.HTTPError``."""
    check_url(url)
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, **(headers or {})})
    return _OPENER.open(request, timeout=timeout)


def describe(exc: BaseException) -> str:
    """A short, human reason for a network failure."""
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return str(exc) or type(exc).__name__


__all__ = ["USER_AGENT", "UrlRefused", "check_url", "describe", "open_url"]
