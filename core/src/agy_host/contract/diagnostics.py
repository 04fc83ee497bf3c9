"""The doctor report: sections of labelled rows that plugins fill.

``agy-host doctor`` builds one :class:`DiagnosticReport`, lets the selected
engine probe its agent (:meth:`agy_host.engine.base.Engine.diagnose`), then calls the
``agy_host_diagnostics`` hook so every plugin can add its own section. Doctor
spends no tokens.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

Status = Literal["ok", "warn", "error", "info"]


class DiagnosticRow(msgspec.Struct, kw_only=True, omit_defaults=True):
    label: str
    value: str
    status: Status = "info"
    detail: list[str] = msgspec.field(default_factory=list)


class DiagnosticSection(msgspec.Struct, kw_only=True):
    title: str
    rows: list[DiagnosticRow] = msgspec.field(default_factory=list)

    def add(self, label: str, value: Any, status: Status = "info", detail: list[str] | None = None) -> DiagnosticRow:
        row = DiagnosticRow(label=label, value=str(value), status=status, detail=detail or [])
        self.rows.append(row)
        return row


class DiagnosticReport(msgspec.Struct, kw_only=True):
    """What ``agy-host doctor`` shows: sections of rows that core and every plugin add to
    (``agy_host_diagnostics``)."""

    sections: list[DiagnosticSection] = msgspec.field(default_factory=list)

    def section(self, title: str) -> DiagnosticSection:
        """The section called ``title``, created on first use."""
        for sec in self.sections:
            if sec.title == title:
                return sec
        sec = DiagnosticSection(title=title)
        self.sections.append(sec)
        return sec

    @property
    def worst(self) -> Status:
        order: dict[Status, int] = {"info": 0, "ok": 0, "warn": 1, "error": 2}
        worst: Status = "ok"
        for sec in self.sections:
            for row in sec.rows:
                if order[row.status] > order[worst]:
                    worst = row.status
        return worst

    def format(self) -> str:
        lines = ["agy-host doctor (no tokens spent)"]
        marks = {"ok": "✓", "warn": "!", "error": "✗", "info": " "}
        for sec in self.sections:
            lines.append(f"{sec.title}:")
            for row in sec.rows:
                lines.append(f"  {marks[row.status]} {row.label + ':':<18} {row.value}")
                lines.extend(f"      {d}" for d in row.detail)
        return "\n".join(lines)


__all__ = ["DiagnosticReport", "DiagnosticRow", "DiagnosticSection", "Status"]
