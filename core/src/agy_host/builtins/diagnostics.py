"""Built-in doctor rows: where config and state live, and plugin load errors."""

from __future__ import annotations

from agy_host import hookimpl
from agy_host.contract.diagnostics import DiagnosticReport


@hookimpl
def agy_host_diagnostics(report: DiagnosticReport) -> None:
    from agy_host import config

    sec = report.section("host")
    path = config.config_path()
    sec.add("config", f"{path}{'' if path.exists() else ' (not created yet)'}")
    sec.add("state", str(config.state_dir()))
