"""``agy-host acp status``: what is installed, and does it work.

It answers the questions a user has after ``acp install`` and ``acp-auth``:
which builds are on disk and which one is ``current``; whether each recorded
archive checksum still matches its pin (drift shows up here); which binary
the engine will actually run (``AGY_ACP_BIN`` or ``acp.bin`` win over the
install); whether that binary starts and answers ``initialize`` (and how
long it took); and whether ``session/new`` works, i.e. whether it is signed
in. Any answer that needs action makes the exit code 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import msgspec

from agy_host.config import Config
from agy_host_acp import layout
from agy_host_acp.pins import PinTable
from agy_host_acp.probe import AgentCheck, check_agent
from agy_host_acp.profiles import AGY_BINARY, Probe, agy_spec, resolve_agy_binary


class BuildStatus(msgspec.Struct, kw_only=True):
    build: str
    path: str
    current: bool
    binary_ok: bool
    harness_ok: bool
    sha256: str
    archive: str
    #: ``matches pin``, ``differs from pin``, ``no pin``, ``not recorded``.
    pin_state: str
    pin_sha256: str = ""
    verified_by: str = ""
    installed_at: str = ""


class EngineView(msgspec.Struct, kw_only=True):
    """Which Antigravity binary a turn would start, and why."""

    binary: str = ""
    source: str = ""
    uses_install: bool = False
    tried: list[Probe] = msgspec.field(default_factory=list)


class StatusReport(msgspec.Struct, kw_only=True):
    root: str
    engine_root: str
    current: str | None
    builds: list[BuildStatus]
    partial_downloads: list[str]
    engine: EngineView
    probe_target: str = ""
    probe: AgentCheck | None = None
    problems: list[str] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _pin_state(build: layout.InstalledBuild, pins: PinTable) -> tuple[str, str]:
    if not build.sha256:
        return "not recorded", ""
    key = pins.canonical(build.build)
    if key is None:
        return "no pin", ""
    archives = pins.builds[key].archives
    if build.record is not None:
        pin = archives.get(build.record.platform)
        if pin is None:
            return "no pin", ""
        return ("matches pin" if pin.sha256 == build.sha256 else "differs from pin"), pin.sha256
    # No install.json (an install made by hand): any platform's pin may match.
    for pin in archives.values():
        if pin.sha256 == build.sha256:
            return "matches pin", pin.sha256
    return "no pin", ""


def gather(root: Path, pins: PinTable, config: Config, env: Mapping[str, str]) -> StatusReport:
    """Everything that needs no agent process."""
    builds = []
    for b in layout.list_builds(root):
        state, pin_sha = _pin_state(b, pins)
        builds.append(
            BuildStatus(
                build=b.build,
                path=b.path,
                current=b.current,
                binary_ok=b.binary_ok,
                harness_ok=b.harness_ok,
                sha256=b.sha256,
                archive=b.archive,
                pin_state=state,
                pin_sha256=pin_sha,
                verified_by=b.record.verified_by if b.record else "",
                installed_at=b.record.installed_at if b.record else "",
            )
        )
    binary, tried, source = resolve_agy_binary(config, env)
    current = layout.current_build(root)
    current_bin = root / layout.CURRENT / AGY_BINARY
    engine = EngineView(
        binary=str(binary) if binary else "",
        source=source,
        tried=tried,
        uses_install=binary is not None and binary.resolve() == current_bin.resolve(),
    )
    report = StatusReport(
        root=str(root),
        engine_root=str(layout.default_root(env)),
        current=current,
        builds=builds,
        partial_downloads=[str(p) for p in layout.partial_downloads(root)],
        engine=engine,
    )
    _judge(report, root)
    return report


def _judge(report: StatusReport, root: Path) -> None:
    by_name = {b.build: b for b in report.builds}
    if not report.builds:
        report.problems.append("no Antigravity ACP server is installed here: run `agy-host acp install`")
    elif report.current is None:
        report.problems.append(f"{root / layout.CURRENT} is missing: run `agy-host acp install --build BUILD`")
    elif report.current not in by_name:
        report.problems.append(f"`current` points at {report.current}, which is not installed")
    elif not by_name[report.current].binary_ok:
        report.problems.append(f"the current build {report.current} has no executable {AGY_BINARY}")
    for b in report.builds:
        if b.pin_state == "differs from pin":
            report.problems.append(
                f"build {b.build}: the recorded archive SHA-256 {b.sha256} differs from its pin {b.pin_sha256}"
            )
        if b.verified_by == "none":
            report.warnings.append(f"build {b.build} was installed unverified (--build latest without a pin)")
    if report.builds and not report.engine.uses_install:
        if report.engine.binary:
            report.warnings.append(
                f"turns run {report.engine.binary} ({report.engine.source}), not this install's current build"
            )
        elif Path(report.root) != Path(report.engine_root):
            report.warnings.append(
                f"the engine looks in {report.engine_root}, not {report.root}: set "
                f"AGY_ACP_BIN={Path(report.root) / layout.CURRENT / AGY_BINARY} "
                "(or `agy-host config set acp.bin PATH`)"
            )
    if report.partial_downloads:
        report.warnings.append("a download was interrupted; `agy-host acp install` resumes it")


async def probe(report: StatusReport, config: Config, env: Mapping[str, str]) -> None:
    """Start the binary a turn would use (the install's current build, else
    the engine's resolution) and record the handshake and the sign-in state."""
    root = Path(report.root)
    target: Path | None = None
    source = ""
    if report.current is not None:
        candidate = root / layout.CURRENT / AGY_BINARY
        if candidate.is_file():
            target, source = candidate, "install dir"
    if target is None and report.engine.binary:
        target, source = Path(report.engine.binary), report.engine.source
    if target is None:
        return
    report.probe_target = str(target)
    spec = agy_spec(target, [Probe(source=source, path=str(target), result="found")], source, env)
    check = await check_agent(spec, config, env)
    report.probe = check
    if check.error:
        where = {"start": "cannot be started", "initialize": "did not complete initialize"}.get(
            check.error_stage, "failed"
        )
        report.problems.append(f"the server {where}: {check.error}")
    elif check.auth == "sign-in-required":
        report.problems.append("not signed in: run `agy-host acp-auth` (then `agy-host acp-auth --method ...`)")


def render(report: StatusReport) -> str:
    lines = [f"install root   {report.root}"]
    if not report.builds:
        lines.append("builds         (none)")
    for i, b in enumerate(report.builds):
        label = "builds" if i == 0 else ""
        flags = []
        if b.current:
            flags.append("current")
        if not b.binary_ok:
            flags.append(f"no executable {AGY_BINARY}")
        if not b.harness_ok:
            flags.append("no localharness_external")
        verified = {"pin": "verified by pin", "sha256-option": "verified by --sha256", "none": "UNVERIFIED"}.get(
            b.verified_by, ""
        )
        extra = f" [{', '.join(flags)}]" if flags else ""
        lines.append(
            f"{label:<14} {b.build}{extra}  sha256 {b.sha256 or '(not recorded)'}  "
            f"{b.pin_state}" + (f", {verified}" if verified else "")
        )
    lines.append(f"current        {report.current or '(none)'}")
    if report.engine.binary:
        uses = "this install" if report.engine.uses_install else "not this install"
        lines.append(f"engine uses    {report.engine.binary} ({report.engine.source}; {uses})")
    else:
        lines.append("engine uses    (no Antigravity binary found; turns run the sandbox agent)")
    check = report.probe
    if check is not None:
        if check.started:
            who = check.agent_version or "unknown version"
            title = f", {check.agent_title}" if check.agent_title else ""
            lines.append(f"start          ok: initialize answered in {check.handshake_seconds:.2f}s ({who}{title})")
        else:
            lines.append(f"start          FAILED: {check.error}")
        if check.auth_methods:
            lines.append(f"auth methods   {', '.join(m[0] for m in check.auth_methods)}")
        if check.auth == "signed-in":
            lines.append("auth           signed in (session/new works)")
        elif check.auth == "sign-in-required":
            lines.append(f"auth           sign-in required: {check.auth_detail}")
        elif check.started:
            lines.append(f"auth           unknown: {check.error}")
    elif report.builds or report.engine.binary:
        lines.append("start          (not probed)")
    for path in report.partial_downloads:
        lines.append(f"partial        {path}")
    lines += [f"warning: {w}" for w in report.warnings]
    lines += [f"problem: {p}" for p in report.problems]
    if not report.problems:
        lines.append("ok: installed, starts, signed in" if check is not None else "ok")
    return "\n".join(lines)


__all__ = ["BuildStatus", "EngineView", "StatusReport", "gather", "probe", "render"]
