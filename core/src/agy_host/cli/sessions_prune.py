"""``agy-host sessions prune``: remove the unnamed runs nobody went back to.

Every ``run`` without ``--session`` leaves a session (its binding, so the
printed name can be continued, and its transcript). Prune removes those
whose last use is older than ``--older-than`` (7 days by default), bindings
and transcripts together; named sessions are never pruned (``sessions rm``
removes one). Last use is the newest of its bindings' ``updated_at`` and its
transcript's modification time, so deciding reads each run's small store
file and never its transcript. Nothing is
removed without ``--yes`` or a yes at the terminal; ``--dry-run`` lists
what would go.
"""

from __future__ import annotations

import calendar
import os
import re
import sys
import time
from typing import TYPE_CHECKING, Annotated

import msgspec
import typer

from agy_host.cli.common import FormatOption, check_format, fail, print_json
from agy_host.cli.exit_codes import ExitCode
from agy_host.runtime.naming import generated_stamp

if TYPE_CHECKING:
    from agy_host.cli.state import CliState
    from agy_host.runtime.host import Host

PRUNE_HELP = """Remove unnamed runs (sessions with a generated name) last used
longer ago than --older-than: their bindings and transcripts. Named sessions
are kept (`sessions rm NAME` removes one). Asks first at a terminal;
elsewhere pass --yes, or --dry-run to list what would go."""

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_PART = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


def parse_duration(text: str) -> float:
    """``7d``, ``12h``, ``1d12h``, ``90m``, ``30s``, ``2w`` (or ``0``) in
    seconds; ``ValueError`` naming the accepted forms otherwise."""
    spec = text.strip().lower()
    if spec == "0":
        return 0.0
    parts = _PART.findall(spec)
    if not parts or "".join(n + u for n, u in parts) != spec:
        raise ValueError(f"--older-than {text!r} is not a duration; use e.g. 7d, 12h, 1d12h, 90m, 30s, 2w or 0")
    return sum(float(n) * _UNITS[u] for n, u in parts)


class Stale(msgspec.Struct, kw_only=True):
    """An unnamed run prune would remove."""

    name: str
    last_used: str
    bindings: bool
    transcript: bool


def stale_runs(host: Host, older_than_s: float) -> list[Stale]:
    """The unnamed runs last used over ``older_than_s`` ago, oldest first."""
    from agy_host.runtime.sessions_view import every_name, transcript_of

    cutoff = time.time() - older_than_s
    found: list[tuple[float, Stale]] = []
    for name in every_name(host):
        if generated_stamp(name) is None:
            continue
        bindings = host.store.bindings_of(name)
        transcript = transcript_of(host, name)
        used = [_epoch(b.updated_at) for b in bindings.values()]
        if transcript is not None:
            used.append(_mtime(transcript))
        newest = max((t for t in used if t is not None), default=_mtime(host.store.file_of(name)))
        if newest is None or newest >= cutoff:
            continue
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(newest))
        found.append((newest, Stale(name=name, last_used=stamp, bindings=bool(bindings), transcript=bool(transcript))))
    return [entry for _, entry in sorted(found, key=lambda pair: pair[0])]


def _epoch(stamp: str) -> float | None:
    """A binding's ``updated_at`` (``2026-12-02T15:24:00Z``) in seconds."""
    try:
        return float(calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


def _mtime(path: os.PathLike[str]) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def register_prune(sessions: typer.Typer, state: CliState) -> None:
    @sessions.command("prune", help=PRUNE_HELP)
    def sessions_prune(
        older_than: Annotated[
            str,
            typer.Option(
                "--older-than", help="Last used longer ago than this: 7d, 12h, 90m, 0 (all).", metavar="DURATION"
            ),
        ] = "7d",
        dry_run: Annotated[
            bool, typer.Option("--dry-run", "-n", help="List what would be removed; remove nothing.")
        ] = False,
        yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
        fmt: FormatOption = "text",
    ) -> None:
        from agy_host.runtime.sessions_view import remove

        check_format(fmt)
        try:
            seconds = parse_duration(older_than)
        except ValueError as exc:
            fail(str(exc), ExitCode.USAGE)
        host = state.host()
        stale = stale_runs(host, seconds)
        swept = 0 if dry_run else host.store.sweep_temps()
        what = "unnamed run(s)" + (f" last used more than {older_than} ago" if seconds else "")
        if dry_run or not stale:
            if fmt == "json":
                print_json({"version": 1, "dry_run": dry_run, "removed": [], "would_remove": stale})
                return
            for entry in stale:
                typer.echo(f"would remove {entry.name}  (last used {entry.last_used})")
            typer.echo(f"{len(stale)} {what}" + (" would be removed" if stale else "; nothing to remove"))
            return
        if not yes:
            if not sys.stdin.isatty():
                fail(
                    f"{len(stale)} {what} to remove; pass --yes to remove them, or --dry-run to list them",
                    ExitCode.USAGE,
                )
            if not typer.confirm(f"remove {len(stale)} {what} (bindings and transcripts)?"):
                raise typer.Exit(ExitCode.ERROR)
        bindings = transcripts = 0
        for entry in stale:
            count, dropped = remove(host, entry.name)
            bindings += count
            transcripts += dropped
        if fmt == "json":
            print_json(
                {"version": 1, "dry_run": False, "removed": stale, "bindings": bindings, "transcripts": transcripts}
            )
            return
        extra = f", {swept} stranded temp file(s)" if swept else ""
        typer.echo(f"removed {len(stale)} {what}: {bindings} binding(s), {transcripts} transcript(s){extra}")


__all__ = ["PRUNE_HELP", "Stale", "parse_duration", "register_prune", "stale_runs"]
