"""What typer builds for one command line: the command it names, or a
listing when it names none.

typer turns every registered command into a click command before it looks
at the arguments, reading each function's signature (about 15 ms for the
27 commands and subcommands), and each core command's module imports what
its options need (msgspec, the session store, the shared turn options).
A command line pays for one of them:

* ``agy-host run ...``: :func:`keep_only` drops every other entry before
  typer builds anything (the app imported only ``run``'s module).
* ``agy-host``, ``agy-host --help`` (and a word that names no command, for
  typer's "No such command" with its suggestions): the root help shows each
  command's name and the first sentence of its help and nothing of its
  options. :func:`add_core` registers the core commands as parameterless
  stand-ins from :data:`CORE` without importing their modules, plugins add
  theirs, and :func:`listing` turns those into stand-ins too.

``core/tests/test_cli_startup.py`` pins that the help is the same text as
the full build's and that :data:`CORE` says what the modules register.
A stand-in that ran would raise: they are used only where no command can.
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

import typer
from typer.models import CommandInfo, TyperInfo


class Core(NamedTuple):
    """A core command: the module whose ``register(app, state)`` adds it,
    the first sentence of its help, and whether it is a group."""

    module: str
    summary: str
    group: bool = False


#: The core commands in registration order (the help lists commands, then groups).
CORE: dict[str, Core] = {
    "run": Core("run_cmd", "Run one agent turn and stream the answer."),
    "chat": Core("chat_cmd", "Chat with the agent: many turns, one agent conversation."),
    "ask": Core("ask_cmd", "Ask the agent once and report the answer, duration, status and session."),
    "sessions": Core(
        "sessions_cmd", "Host sessions: their agent conversations (per engine) and transcripts.", group=True
    ),
    "doctor": Core("doctor_cmd", "Check the selected engine, its agent, config, sessions and plugins."),
    "plugins": Core(
        "info_cmds",
        "List plugins: name, version, distribution, the hooks each implements, and every plugin that failed "
        "to load (with the error).",
    ),
    "engine": Core("info_cmds", "Show which engine is selected and why, or select NAME."),
    "models": Core("info_cmds", "List the models the selected engine can run (may start the agent)."),
    "config": Core(
        "config_cmd",
        "Show or change the config file ($XDG_CONFIG_HOME/agy-host/config.toml, or $AGY_HOST_CONFIG).",
        group=True,
    ),
}


def modules(only: str | None) -> list[str]:
    """The core command modules to import: all, or the one that registers ``only``."""
    if only is None:
        return list(dict.fromkeys(core.module for core in CORE.values()))
    return [CORE[only].module] if only in CORE else []


def add_core(app: typer.Typer) -> None:
    """Register every core command as a stand-in (no module imported)."""
    for name, core in CORE.items():
        if core.group:
            app.add_typer(typer.Typer(), name=name, help=core.summary)
        else:
            app.registered_commands.append(CommandInfo(name, callback=_refuse(name), help=core.summary))


def listing(app: typer.Typer) -> typer.Typer:
    """A copy of ``app`` whose commands, in every group, are parameterless
    stand-ins with their names, help and flags. ``app`` and its groups are
    not changed (a plugin may keep its sub-app in a module global)."""
    out = copy.copy(app)
    out.registered_commands = [_stand_in(info) for info in app.registered_commands]
    out.registered_groups = []
    for info in app.registered_groups:
        group = copy.copy(info)
        if isinstance(info.typer_instance, typer.Typer):
            group.typer_instance = listing(info.typer_instance)
        out.registered_groups.append(group)
    return out


def keep_only(app: typer.Typer, word: str) -> bool:
    """Drop every root command and group not called ``word``; ``False``
    when nothing is called so (``app`` is then left alone). A group without
    a name (its commands join the root's) keeps the whole app: what it
    holds is known only once built."""
    groups = [(_group_name(info), info) for info in app.registered_groups]
    if any(name is None for name, _info in groups):
        return True
    commands = [info for info in app.registered_commands if _command_name(info) == word]
    kept = [info for name, info in groups if name == word]
    if not commands and not kept:
        return False
    app.registered_commands = commands
    app.registered_groups = kept
    return True


def _command_name(info: CommandInfo) -> str:
    """The name typer gives a registered command (``typer.main.get_command_from_info``)."""
    from typer.main import get_command_name

    callback: Any = info.callback
    return info.name or get_command_name(callback.__name__)


def _group_name(info: TyperInfo) -> str | None:
    """The name typer gives a registered group; ``None``: its commands join the parent's."""
    from typer.main import solve_typer_info_defaults

    name = solve_typer_info_defaults(info).name
    return name if isinstance(name, str) and name else None


def _refuse(name: str) -> Any:
    def stand_in() -> None:
        raise RuntimeError(f"agy-host: the help listing's stand-in for {name!r} was run")

    return stand_in


def _stand_in(info: CommandInfo) -> CommandInfo:
    real: Any = info.callback
    stand_in = _refuse(_command_name(info))
    # What typer reads from the callback for a listing: its name (when the
    # command has none) and its docstring (when it has no help).
    stand_in.__name__ = real.__name__
    stand_in.__qualname__ = real.__qualname__
    stand_in.__module__ = real.__module__
    stand_in.__doc__ = real.__doc__
    out = copy.copy(info)
    out.callback = stand_in
    return out


__all__ = ["CORE", "Core", "add_core", "keep_only", "listing", "modules"]
