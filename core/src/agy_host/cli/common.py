"""Small helpers shared by the command modules: errors with exit codes,
JSON output, and the ``--format`` option."""

from __future__ import annotations

import sys
from typing import Annotated, Any, NoReturn

import typer

from agy_host.cli.exit_codes import ExitCode

FormatOption = Annotated[
    str,
    typer.Option("--format", "-f", help="Output format: text or json.", metavar="text|json"),
]


def fail(message: str, code: int = ExitCode.ERROR) -> NoReturn:
    """Print ``agy-host: error: MESSAGE`` on stderr and exit with ``code``."""
    print(f"agy-host: error: {message}", file=sys.stderr, flush=True)
    raise typer.Exit(code)


def check_format(fmt: str, allowed: tuple[str, ...] = ("text", "json")) -> str:
    if fmt not in allowed:
        fail(f"unknown --format {fmt!r}; choose one of: {', '.join(allowed)}", ExitCode.USAGE)
    return fmt


def print_json(value: Any) -> None:
    """One JSON document on stdout (msgspec Structs encode as they are;
    times to the millisecond)."""
    import msgspec

    from agy_host.builtins.json_times import rounded_times

    body = msgspec.json.encode(rounded_times(msgspec.to_builtins(value)))
    sys.stdout.write(msgspec.json.format(body, indent=2).decode() + "\n")
    sys.stdout.flush()


__all__ = ["FormatOption", "check_format", "fail", "print_json"]
