"""Built-in doctor rows: where config and state live, for the host asking."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agy_host import hookimpl

if TYPE_CHECKING:
    from agy_host.contract.diagnostics import DiagnosticReport
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


def make_plugin() -> HostRows:
    return HostRows()


__all__ = ["HostRows", "make_plugin"]
