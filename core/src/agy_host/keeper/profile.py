"""What decides which warm agent a command may use: its profile.

:func:`profile_of` digests everything a warm agent was started with (the
engine, agent command, working directory, command-line overrides, the
environment and the config file's bytes): a command whose profile differs
from the warm session's starts cold, and the old warm agent ends.
:func:`differences` says which of those differ, for the command to show.
Variables that only describe a shell or a terminal (:data:`VOLATILE_ENV`)
are left out: a command from another terminal finds the agent still warm.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Protocol

import msgspec

from agy_host.config import config_path
from agy_host.keeper import wire


class Fitted(Protocol):
    """What a warm agent was started with (a :class:`~agy_host.keeper.warm.WarmSession`)."""

    @property
    def spec(self) -> wire.HostSpec: ...
    @property
    def cwd(self) -> str: ...
    #: The config file's digest (:func:`config_digest`) when it started.
    @property
    def config(self) -> str: ...


#: Variables that change from shell to shell without changing what an agent
#: sees: a difference in them does not make a warm agent cold.
VOLATILE_ENV = frozenset(
    {
        "_",
        "OLDPWD",
        "PWD",
        "SHLVL",
        "COLUMNS",
        "LINES",
        "TERM",
        "TERM_PROGRAM",
        "TERM_PROGRAM_VERSION",
        "COLORTERM",
        "TMUX",
        "TMUX_PANE",
        "STY",
        "WINDOW",
        "WINDOWID",
        "SSH_TTY",
        "SSH_CLIENT",
        "SSH_CONNECTION",
        "PS1",
        "PS2",
        "PROMPT_COMMAND",
        "HISTFILE",
        "HISTSIZE",
        "HISTCONTROL",
        "HISTFILESIZE",
        "HISTTIMEFORMAT",
        "GPG_TTY",
        "LS_COLORS",
        "LSCOLORS",
        # what a shell's init scripts and terminal apps set for the shell itself
        "PYENV_SHELL",
        "PYENV_VIRTUALENV_INIT",
        "VIRTUAL_ENV_PROMPT",
        "STARSHIP_SHELL",
        "STARSHIP_SESSION_KEY",
        "TERM_SESSION_ID",
        "SHELL_SESSION_ID",
        "ITERM_SESSION_ID",
        "ITERM_PROFILE",
        "KONSOLE_DBUS_SESSION",
        "KONSOLE_DBUS_WINDOW",
        "KONSOLE_VERSION",
        "VTE_VERSION",
        "WT_SESSION",
        "WT_PROFILE_ID",
        "AGY_HOST_TTY",
        "AGY_HOST_THIN",
        "PYTEST_CURRENT_TEST",
    }
)

#: The command-line names of the :class:`~agy_host.keeper.wire.HostSpec`
#: fields a warm agent is fitted to (what :func:`differences` names).
_SETTING_NAMES = {
    "engine": "--engine",
    "agent": "--agent",
    "permissions": "--permissions",
    "trace": "--trace",
    "system_prompt": "--system-prompt",
    "digest": "--digest",
    "tools": "the program's tools",
    "allowed_tools": "the allowed tools",
    "disallowed_tools": "the disallowed tools",
    "before_tool": "the program's before_tool",
}


def profile_of(name: str, cwd: str, spec: wire.HostSpec) -> str:
    """A digest of everything that decides which agent a session gets: a
    command whose profile differs from the warm session's starts cold.

    That includes the config file the command reads (its bytes, read here on
    every request): the warm host was built from the file as it was, so an
    edit (a rule, a model, an agent profile) must not be ignored until the
    agent happens to expire.

    The environment is taken in sorted order: it is a mapping, and two
    terminals list the same variables in different orders (a command from
    the other one would otherwise never find the agent left warm)."""
    env = {k: spec.env[k] for k in sorted(spec.env) if k not in VOLATILE_ENV}
    # whether the command draws diffs is the turn's, not the agent's (WarmSession.run)
    fixed = msgspec.structs.replace(spec, env=env, draws_diffs=False)
    blob = msgspec.json.encode({"session": name, "cwd": cwd, "host": fixed, "config": config_digest(spec.env)})
    return hashlib.sha256(blob).hexdigest()


def differences(fitted: Fitted, cwd: str, spec: wire.HostSpec) -> str:
    """What keeps the agent ``fitted`` to one command from serving another
    of ``cwd`` and ``spec``, in a person's words: the settings by their
    option names, the environment by the names of its variables (never their
    values: they hold API keys)."""
    said = [name for field, name in _SETTING_NAMES.items() if getattr(fitted.spec, field) != getattr(spec, field)]
    if fitted.cwd != cwd:
        said.append("the working directory")
    if fitted.config != config_digest(spec.env):
        said.append("the config file")
    before = {k: v for k, v in fitted.spec.env.items() if k not in VOLATILE_ENV}
    now = {k: v for k, v in spec.env.items() if k not in VOLATILE_ENV}
    changed = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
    if changed:
        named = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        said.append(f"the environment ({named})")
    return ", ".join(said) or "the command's settings"


def config_digest(env: Mapping[str, str]) -> str:
    """The digest of the config file ``env`` selects; ``""`` when there is
    none, and a marker naming the error when it cannot be read (the command's
    own host reports that error; the profile only has to differ)."""
    try:
        return hashlib.sha256(config_path(env).read_bytes()).hexdigest()
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return f"unreadable: {type(exc).__name__}"


__all__ = ["VOLATILE_ENV", "Fitted", "config_digest", "differences", "profile_of"]
