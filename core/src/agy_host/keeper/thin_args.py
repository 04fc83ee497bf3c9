"""``agy-host run``'s command line as the thin client reads it, without typer.

The thin client (:mod:`agy_host.keeper.thin`) must not pay for typer and
click, so it reads ``run``'s arguments itself, the way click would, for the
flags it fully supports. Everything else is left to the normal path:
:func:`parse` returns ``None`` for an unknown or unsupported flag, a value
that click or the command would refuse, no ``--session``, a prompt read from
stdin or naming files (``@path``), so that the normal path gives its own
parsing, checks and messages. ``None`` costs a few milliseconds; a wrong
guess here would be a different command.

Supported: the prompt words; ``--session/-s``; ``--format/-f`` with a
built-in format; ``--engine/-e``, ``--agent``, ``--model/-m``,
``--effort``, ``--mode``, ``--permissions``; ``--cwd``, ``--add-dir``;
``--timeout``, ``--inactivity``, ``--max-tokens``, ``--max-cost``,
``--keep-alive``; ``--system-prompt TEXT`` (not ``@FILE``);
``--digest/--no-digest``, ``--verbose/-v``, ``--no-wait``; each as
``--flag VALUE``, ``--flag=VALUE`` or ``-x VALUE``. ``--permissions skip``
is read as the normal path reads it; the deprecated
``--skip-permissions/--ask-permissions`` go the normal way, which says so.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import msgspec

#: The formats the thin client draws (the built-in renderers'); a plugin's goes the normal way.
FORMATS = frozenset({"text", "plain", "rich", "json", "quiet"})

#: Flags that take a value -> the field they set.
_VALUED = {
    "--session": "session",
    "-s": "session",
    "--format": "fmt",
    "-f": "fmt",
    "--engine": "engine",
    "-e": "engine",
    "--agent": "agent",
    "--model": "model",
    "-m": "model",
    "--effort": "effort",
    "--mode": "mode",
    "--permissions": "permissions",
    "--cwd": "cwd",
    "--add-dir": "add_dir",
    "--timeout": "timeout",
    "--inactivity": "inactivity",
    "--max-tokens": "max_tokens",
    "--max-cost": "max_cost",
    "--keep-alive": "keep_alive",
    "--system-prompt": "system_prompt",
}
#: Flags without a value -> (field, value).
_SWITCHES = {
    "--digest": ("digest", True),
    "--no-digest": ("digest", False),
    "--verbose": ("verbose", True),
    "-v": ("verbose", True),
    "--no-wait": ("no_wait", True),
}


class Unsupported(Exception):
    """Not for the thin client: the normal path takes the command."""


class ThinArgs(msgspec.Struct, kw_only=True):
    """``run``'s options, checked as the normal path checks them
    (:func:`agy_host.cli.turn_options.common`)."""

    prompt: str
    session: str
    #: Absolute and resolved, as ``common`` makes it.
    cwd: str
    fmt: str = "text"
    engine: str | None = None
    agent: str | None = None
    model: str | None = None
    effort: str | None = None
    mode: str | None = None
    permissions: str | None = None
    skip_permissions: bool | None = None
    verbose: bool = False
    system_prompt: str | None = None
    digest: bool | None = None
    no_wait: bool = False
    timeout_min: float | None = None
    inactivity_min: float | None = None
    max_tokens: int | None = None
    max_cost: float | None = None
    keep_alive_min: float | None = None
    add_dirs: list[str] = msgspec.field(default_factory=list)

    def settings(self) -> dict[str, Any]:
        """The turn's settings, by :class:`~agy_host.runtime.session.TurnSettings`'
        field names, as :meth:`~agy_host.cli.turn_options.TurnOptions.settings` makes them."""
        return {
            "model": self.model,
            "effort": self.effort,
            "mode": self.mode,
            "skip_permissions": self.skip_permissions,
            "timeout_s": self.timeout_min * 60 if self.timeout_min is not None else None,
            "inactivity_s": self.inactivity_min * 60 if self.inactivity_min is not None else None,
            "additional_directories": self.add_dirs,
            "max_tokens": self.max_tokens,
            "max_cost": self.max_cost,
            "resume": False,
            "wait": not self.no_wait,
        }


def parse(args: list[str]) -> ThinArgs | None:
    """``run``'s arguments (after the word ``run``), or ``None`` for the normal path."""
    try:
        return _parse(args)
    except Unsupported:
        return None


def _parse(args: list[str]) -> ThinArgs:
    given: dict[str, Any] = {}
    add_dirs: list[str] = []
    words: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "-" or not arg.startswith("-"):
            words.append(arg)
            continue
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in _SWITCHES and not eq:
            field, on = _SWITCHES[name]
            given[field] = on
            continue
        if name not in _VALUED:
            raise Unsupported(arg)  # --resume, --answers, --trace, --file, --image, --help, --, -vs ...
        if not eq:
            if i >= len(args):
                raise Unsupported(f"{arg} without its value")
            value = args[i]
            i += 1
        if _VALUED[name] == "add_dir":
            add_dirs.append(value)
        else:
            given[_VALUED[name]] = value
    return _checked(words, given, add_dirs)


def _checked(words: list[str], given: dict[str, Any], add_dirs: list[str]) -> ThinArgs:
    from agy_host.runtime.naming import session_name_problem

    prompt = " ".join(words)
    if not words or words == ["-"] or not prompt.strip() or "@" in prompt:
        raise Unsupported("a prompt from stdin, empty, or naming files")
    session = given.get("session")
    if not session or session_name_problem(session) is not None:
        raise Unsupported("no session, or a bad name")
    fmt = given.get("fmt", "text")
    if fmt not in FORMATS:
        raise Unsupported(f"format {fmt!r}")
    system = given.get("system_prompt")
    if system is not None and system.startswith("@") and len(system) > 1:
        raise Unsupported("--system-prompt @FILE")
    skip = given.get("permissions") == "skip"  # as turn_options._skip reads it
    return ThinArgs(
        prompt=prompt,
        session=session,
        cwd=_cwd(given.get("cwd")),
        fmt=fmt,
        engine=given.get("engine"),
        agent=given.get("agent"),
        model=given.get("model"),
        effort=given.get("effort"),
        mode=given.get("mode"),
        permissions="auto" if skip else given.get("permissions"),
        skip_permissions=True if skip else None,
        verbose=bool(given.get("verbose", False)),
        system_prompt=system,
        digest=given.get("digest"),
        no_wait=bool(given.get("no_wait", False)),
        timeout_min=_number(given.get("timeout"), float),
        inactivity_min=_number(given.get("inactivity"), float),
        max_tokens=_number(given.get("max_tokens"), int),
        max_cost=_number(given.get("max_cost"), float),
        keep_alive_min=_number(given.get("keep_alive"), float),
        add_dirs=_dirs(add_dirs),
    )


def _number(text: str | None, kind: type[float] | type[int]) -> Any:
    """A value of at least 0, parsed as click parses it."""
    if text is None:
        return None
    try:
        value = kind(text)
    except ValueError:
        raise Unsupported(f"not a number: {text!r}") from None
    if value < 0 or not math.isfinite(value):
        raise Unsupported(f"out of range: {text!r}")
    return value


def _cwd(given: str | None) -> str:
    """``--cwd`` (an existing, readable directory, as click checks it), resolved; else here."""
    if given is None:
        return str(Path.cwd().resolve())
    path = Path(given)
    if not path.is_dir() or not os.access(path, os.R_OK):
        raise Unsupported(f"--cwd {given!r}")
    return str(path.resolve())


def _dirs(given: list[str]) -> list[str]:
    """``--add-dir`` values, absolute and once each (``turn_options._dirs``)."""
    out: list[str] = []
    for text in given:
        resolved = Path(text).expanduser().resolve()
        if not resolved.is_dir():
            raise Unsupported(f"--add-dir {text!r}")
        if str(resolved) not in out:
            out.append(str(resolved))
    return out


__all__ = ["FORMATS", "ThinArgs", "parse"]
