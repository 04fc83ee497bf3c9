"""Fan-out hooks of the stream-json engine, registered by the host only when
this engine is selected (:attr:`Engine.hooks`): doctor's config rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from agy_host import hookimpl
from agy_host_stream_json.config import SECTION

if TYPE_CHECKING:
    from agy_host.contract.diagnostics import DiagnosticReport
    from agy_host_stream_json.engine import StreamJsonEngine


class StreamJsonHooks:
    def __init__(self, engine: StreamJsonEngine) -> None:
        self.engine = engine

    @hookimpl
    def agy_host_diagnostics(self, report: DiagnosticReport) -> None:
        sec = report.section(f"[{SECTION}] config")
        for key, value in msgspec.structs.asdict(self.engine.settings).items():
            shown = " ".join(value) if isinstance(value, list) else value
            sec.add(key, shown if shown != "" else "(not set)")


__all__ = ["StreamJsonHooks"]
