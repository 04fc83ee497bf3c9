"""``last-driver.json``: the driver snapshot of the last ``run``, which
``doctor`` shows as "last run" (the driver itself is gone by then), with the
slash commands the agent advertised (gone with it too)."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from agy_host import fsutil
from agy_host.contract.events import AgentCommand
from agy_host.engine.driver import DriverSnapshot
from agy_host.runtime.host import Host


class LastRun(msgspec.Struct, kw_only=True, omit_defaults=True):
    version: int = 1
    written_at: str
    session: str
    engine: str
    exit_code: int
    stop_reason: str = ""
    snapshot: DriverSnapshot
    #: The agent's slash commands, as it last advertised them.
    commands: list[AgentCommand] = []


def write_last_run(host: Host, last: LastRun, warn: Callable[[str], None] | None = None) -> None:
    """Best effort: a state dir we cannot write must not fail the run.

    Not synced to disk (``durable=False``): it only describes the last run
    for ``doctor``, and a power cut that loses it loses nothing of the
    user's; a crash of the process still never tears it."""
    try:
        fsutil.write_atomic(host.last_run_path, msgspec.json.encode(last) + b"\n", durable=False)
    except OSError as exc:
        (warn or host.warn)(f"could not write {host.last_run_path}: {exc}")


def read_last_run(host: Host) -> LastRun | str | None:
    """The last run, ``None`` when there was none, or why it is unreadable."""
    path = host.last_run_path
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot read {path}: {exc}"
    try:
        return msgspec.json.decode(data, type=LastRun)
    except (msgspec.DecodeError, RecursionError) as exc:
        return f"{path} is unreadable ({exc})"


__all__ = ["LastRun", "read_last_run", "write_last_run"]
