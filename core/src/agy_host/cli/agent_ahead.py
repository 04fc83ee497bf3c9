"""``agy-host run --agent COMMAND``: start the agent before anything else.

The agent's command is in the command line, so the CLI starts it before
importing typer, trio, the plugins and the engine
(:mod:`agy_host.engine.ahead`), and the ACP engine adopts it when it would
have started it. Measured on the kit's instant agent (docs/performance.md,
B2): the agent's own start (~50 ms) overlaps the command's.

Only where the command line says exactly which command the engine will run,
read the way click reads it:

* ``run`` with no ``--session`` (a named session may run on a warm agent,
  which the keeper holds) and no option but ``--agent COMMAND``,
  ``--engine acp`` and ``--format FORMAT`` (any other option, ``--help``
  and ``--`` leave the command to the engine);
* ``COMMAND`` a command line (two words or more, or a path), not a profile
  of the config's ``[acp.profiles]``, not Antigravity's server (the engine
  adds flags of its own to it), the ACP engine installed.

The engine adopts the child only when it is about to start that very argv
in that directory with that environment; otherwise it ends it and starts
its own. A command that fails before its turn, or is interrupted, ends the
child as it exits (``core/tests/test_agent_ahead.py``).
``AGY_HOST_AHEAD=0`` turns it off.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping

#: The variable that turns starting ahead off (``0``).
AHEAD_ENV = "AGY_HOST_AHEAD"
#: ``agy_host.engine.base.ENGINE_GROUP`` (not imported here: it costs msgspec before the agent starts).
_ENGINES = "agy_host.engines"
#: Options ``run`` may have for its agent to start ahead; each takes a value.
_OPTIONS = {"--agent": "agent", "--engine": "engine", "-e": "engine", "--format": "format", "-f": "format"}


def start_agent_ahead(args: list[str], env: Mapping[str, str]) -> bool:
    """Start ``run``'s agent now when ``args`` (after ``run``) name it as
    described above; whether it was started."""
    argv = agent_argv(args, env)
    if argv is None:
        return False
    from agy_host.engine import ahead

    return ahead.start(argv, cwd=os.getcwd(), env=env)


def agent_argv(args: list[str], env: Mapping[str, str]) -> list[str] | None:
    """The argv the ACP engine will start for ``run ARGS``, when the command
    line says it exactly; ``None`` otherwise."""
    if env.get(AHEAD_ENV, "").strip() == "0":
        return None
    given = _read(args)
    if given is None or given.get("engine", "acp") != "acp" or "agent" not in given:
        return None
    agent = given["agent"]
    try:
        argv = shlex.split(agent)
    except ValueError:
        return None
    if not argv or (len(argv) < 2 and "/" not in argv[0]) or argv[0].endswith(".par"):
        return None
    if not _acp_installed() or _is_profile(agent, env):
        return None
    return argv


def _read(args: list[str]) -> dict[str, str] | None:
    """The options of ``run``'s arguments, or ``None`` when they hold
    anything but prompt words and :data:`_OPTIONS` (each once)."""
    given: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "-" or not arg.startswith("-"):
            continue  # a prompt word
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        field = _OPTIONS.get(name)
        if field is None or field in given:
            return None  # --session, --help, --, anything else: the engine starts the agent
        if not eq:
            if i >= len(args):
                return None
            value = args[i]
            i += 1
        given[field] = value
    return given


def _acp_installed() -> bool:
    from agy_host import entry_points

    return any(ep.name == "acp" for ep in entry_points.group(_ENGINES))


def _is_profile(agent: str, env: Mapping[str, str]) -> bool:
    """Whether ``agent`` names a profile of the config (or the config cannot
    be read, which the command will report: no guess then)."""
    import tomllib

    from agy_host.config import config_path

    try:
        data = tomllib.loads(config_path(env).read_text("utf-8"))
    except FileNotFoundError:
        return False
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return True
    acp = data.get("acp")
    profiles = acp.get("profiles") if isinstance(acp, dict) else None
    return isinstance(profiles, dict) and agent.strip() in profiles


__all__ = ["AHEAD_ENV", "agent_argv", "start_agent_ahead"]
