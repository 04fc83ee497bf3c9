"""The ``agy-host`` console entry point.

``agy-host --version`` is answered here, before typer, trio or msgspec are
imported, so scripts that probe the version pay for Python's start-up and
nothing else. ``agy-host run --session NAME ...`` on a warm agent is run by
the thin client (:mod:`agy_host.keeper.thin`: no typer, no trio, no engine)
when it can take the command whole; an unnamed ``run --agent COMMAND``
starts its agent here, before the imports (:mod:`agy_host.cli.agent_ahead`).
Everything else builds the typer app (:mod:`agy_host.cli.app`). The real
process ends with :func:`~agy_host.cli.exit_now.exit_now` once the command
returned: its output flushed, without the interpreter's finalization.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence


def main(
    argv: Sequence[str] | None = None,
    *,
    extra_plugins: Sequence[object] = (),
    env: Mapping[str, str] | None = None,
) -> int:
    """Run the CLI and return its exit code (see :mod:`agy_host.cli.exit_codes`).

    ``extra_plugins`` are registered in-process before the command runs (tests,
    embedding); ``env`` replaces ``os.environ`` for config and plugin switches.
    Called without arguments (the console script's own process), it does
    not return: the process ends with the command's code.
    """
    code = _command(argv, extra_plugins=extra_plugins, env=env)
    if argv is None and env is None and not extra_plugins:
        from agy_host.cli.exit_now import exit_now

        exit_now(code)
    return code


def _command(argv: Sequence[str] | None, *, extra_plugins: Sequence[object], env: Mapping[str, str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if argv is None:  # the real process: its own streams (tests pass argv and capture them)
        from agy_host.cli.streams import guard_streams

        problem = guard_streams()
        if problem is not None:
            if sys.stderr is not None:
                print(problem, file=sys.stderr)
            return 1
    if args in (["--version"], ["-V"]):
        from agy_host import __version__

        print(f"agy-host {__version__}")
        return 0
    if argv is None and env is None and not extra_plugins and args[:1] == ["run"]:
        if not _names_a_session(args[1:]):
            from agy_host.cli.agent_ahead import start_agent_ahead

            start_agent_ahead(args[1:], os.environ)
        else:
            try:
                from agy_host.keeper import thin

                code = thin.run(args[1:])
            except KeyboardInterrupt:  # Ctrl-C before the thin client watches signals
                print("agy-host: interrupted", file=sys.stderr)
                return 130
            if code is not None:
                return code
    from agy_host.cli.app import run_app

    return run_app(args, extra_plugins=extra_plugins, env=env)


def _names_a_session(args: list[str]) -> bool:
    """Whether ``run``'s arguments may name a session: the thin client takes
    only ``run --session NAME`` (``-s NAME``, ``--session=NAME``), and an
    unnamed run should not import it to learn that."""
    return any(a in ("--session", "-s") or a.startswith("--session=") for a in args)


if __name__ == "__main__":  # pragma: no cover - ``python -m agy_host.cli.main``
    sys.exit(main())
