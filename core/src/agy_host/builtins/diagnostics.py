"""Built-in doctor rows: where config and state live, and whether the wire
is traced (``AGY_HOST_TRACE``), for the host asking."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agy_host import hookimpl

if TYPE_CHECKING:
    from agy_host.contract.diagnostics import DiagnosticReport, Status
    from agy_host.contract.run_context import RunContext


class HostRows:
    """One per plugin manager: the paths of the host it was configured by."""

    def __init__(self) -> None:
        self.run: RunContext | None = None

    @hookimpl
    def agy_host_configure(self, run: RunContext) -> None:
        self.run = run

    @hookimpl
    def agy_host_diagnostics(self, report: DiagnosticReport) -> None:
        from agy_host import config

        env = self.run.env if self.run is not None else None
        sec = report.section("host")
        path = config.config_path(env)
        sec.add("config", f"{path}{'' if path.exists() else ' (not created yet)'}")
        sec.add("state", str(self.run.state_dir if self.run is not None else config.state_dir(env)))
        sec.add("trace", *trace_row(os.environ if env is None else env))


def trace_row(env: Mapping[str, str]) -> tuple[str, Status]:
    """Whether ``AGY_HOST_TRACE`` traces every command's wire, and where to."""
    from agy_host.engine.trace import TRACE_ENV, trace_target

    path = trace_target(None, env)
    if path is None:
        return f"off (--trace FILE on run, chat and ask, or {TRACE_ENV}=FILE)", "info"
    folder = Path(path).absolute().parent
    if not folder.is_dir():
        return f"on ({TRACE_ENV}), but its folder {folder} does not exist: commands cannot start", "error"
    return f"on: every frame in and out, secrets redacted, appended to {path} ({TRACE_ENV})", "info"


def make_plugin() -> HostRows:
    return HostRows()


__all__ = ["HostRows", "make_plugin", "trace_row"]
