"""``agy-host acp install``: choose a build, download, verify, unpack, switch.

Which build: ``--build ID`` if given, else the pin table's ``default``. The
registry is read for the archive URL of this platform; when it offers a
different build than the one asked for, the pinned URL is used and the
output says the registry has moved on. The registry's current build is taken
only when ``--build latest`` is said explicitly.

What is accepted: an archive whose SHA-256 matches its pin, or the value given
with ``--sha256``. A build without a pin is refused, except ``--build latest``,
which installs with a loud "unverified" warning and records that in
``install.json`` (``verified_by = "none"``) so ``acp status`` keeps saying so.

What a failure leaves: nothing where the engine looks. The archive is
unpacked into a temp directory beside the target and renamed into place;
``current`` is switched with a temp symlink and ``os.replace``. A checksum
mismatch or a corrupt archive deletes the download; an interrupted download
keeps its ``.part`` so the next run resumes it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from agy_host_acp import layout, registry
from agy_host_acp.download import Downloaded, DownloadError, discard, download
from agy_host_acp.pins import PinTable, valid_sha256
from agy_host_acp.profiles import AGY_BINARY
from agy_host_acp.unpack import UnpackError, extract

if TYPE_CHECKING:
    from agy_host_acp.progress import Progress

LATEST = "latest"
_BUILD_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class InstallError(Exception):
    """The install failed or was refused; the message says why and what to do."""

    exit_code = 1


class InstallUsage(InstallError):
    """The options contradict each other (exit 2)."""

    exit_code = 2


class InstallOptions(msgspec.Struct, kw_only=True):
    root: Path
    registry_url: str
    pins: PinTable
    platform: str
    build: str | None = None
    sha256: str | None = None
    force: bool = False


class Plan(msgspec.Struct, kw_only=True):
    build: str
    platform: str
    url: str
    archive: str
    #: The SHA-256 the archive must have; empty for an unverified install.
    sha256: str
    bytes: int = 0
    binary: str = AGY_BINARY
    verified_by: str = "none"
    pin_source: str = ""
    url_source: str = "registry"
    notes: list[str] = msgspec.field(default_factory=list)


class InstallResult(msgspec.Struct, kw_only=True):
    build: str
    platform: str
    path: str
    binary: str
    sha256: str
    verified_by: str
    already_installed: bool
    current_changed: bool
    notes: list[str] = msgspec.field(default_factory=list)


def _check_options(opts: InstallOptions) -> None:
    if opts.sha256 is not None:
        opts.sha256 = opts.sha256.strip().lower()
        if not valid_sha256(opts.sha256):
            raise InstallUsage(f"--sha256 must be 64 hex digits, got {opts.sha256!r}")
    if opts.build is not None and not opts.build.strip():
        raise InstallUsage("--build needs a build id (e.g. 1.3.0) or 'latest'")
    if opts.build and ("/" in opts.build or opts.build.startswith(".")):
        raise InstallUsage(f"--build {opts.build!r} is not a build id")


async def make_plan(opts: InstallOptions) -> Plan:
    """Decide build, URL and expected checksum; no bytes are written."""
    _check_options(opts)
    pins = opts.pins
    entry: registry.RegistryEntry | None = None
    reg_error = ""
    try:
        entry = await registry.fetch(opts.registry_url)
    except registry.RegistryError as exc:
        reg_error = str(exc)
    target = entry.distribution.binary.get(opts.platform) if entry else None
    reg_build = ""
    if target is not None:
        try:
            reg_build = registry.build_from_archive(registry.archive_name(target.archive))
        except registry.RegistryError as exc:
            reg_error = str(exc)
            target = None
    notes: list[str] = []
    asked = opts.build.strip() if opts.build else None
    if asked == LATEST:
        if entry is None:
            raise InstallError(f"--build latest needs the registry, which cannot be read: {reg_error}")
        if target is None:
            offered = ", ".join(sorted(entry.distribution.binary)) or "none"
            raise InstallError(f"the registry offers no archive for {opts.platform} (it has: {offered})")
        build = pins.canonical(reg_build) or reg_build
    elif asked:
        build = pins.canonical(asked) or asked
    else:
        build = pins.canonical(pins.default) or pins.default
        if not build:
            raise InstallError("the pin table names no default build; pass --build ID")
    pin = pins.lookup(build, opts.platform)
    use_registry = target is not None and (pins.canonical(reg_build) or reg_build) == build
    if use_registry and target is not None:
        url, url_source = target.archive, "registry"
    elif pin is not None and pin.url:
        url, url_source = pin.url, "pin table"
        if reg_error:
            notes.append(f"the registry could not be read ({reg_error}); using the pinned URL")
    else:
        raise InstallError(
            _no_location(
                build, asked=asked, platform=opts.platform, pins=pins, reg_build=reg_build, reg_error=reg_error
            )
        )
    if reg_build and (pins.canonical(reg_build) or reg_build) != build:
        notes.append(
            f"the registry now offers build {reg_build}; this install stays on {build} "
            f"(take it with --build {reg_build} or --build latest)"
        )
    archive = registry.archive_name(url)
    try:
        named = registry.build_from_archive(archive)
    except registry.RegistryError as exc:
        raise InstallError(str(exc)) from exc
    if named != build:
        raise InstallError(f"the archive {archive} ({url_source}) is build {named}, not {build}")
    if not _BUILD_ID.match(build):
        raise InstallError(f"build id {build!r} is not usable as a directory name")
    if opts.sha256:
        if pin is not None and pin.sha256 != opts.sha256:
            raise InstallError(
                f"--sha256 {opts.sha256} differs from the pinned checksum of build {build} on "
                f"{opts.platform} ({pin.sha256}); refusing. Check the value, or drop --sha256"
            )
        sha, verified_by, source = opts.sha256, "sha256-option", "--sha256"
    elif pin is not None:
        sha, verified_by, source = pin.sha256, "pin", pin.source or ", ".join(pins.sources)
    elif asked == LATEST:
        sha, verified_by, source = "", "none", ""
        notes.append(
            f"WARNING: build {build} has no pinned checksum; this install is UNVERIFIED. Its SHA-256 is "
            "recorded, but nothing checks it against a known value. Pin it (--pins / AGY_ACP_PINS) or pass "
            "--sha256 to verify."
        )
    else:
        raise InstallError(
            f"build {build} has no pinned checksum for {opts.platform}; refusing to install it unverified. "
            f"Pass --sha256 HEX (from a source you trust), add it to a pin file (--pins or AGY_ACP_PINS), "
            f"or say --build latest to accept an unverified install"
        )
    binary = (pin.binary if pin and pin.binary else "") or (
        Path(target.cmd).name if use_registry and target and target.cmd else AGY_BINARY
    )
    return Plan(
        build=build,
        platform=opts.platform,
        url=url,
        archive=archive,
        sha256=sha,
        bytes=pin.bytes if pin is not None and pin.sha256 == sha else 0,
        binary=binary,
        verified_by=verified_by,
        pin_source=source,
        url_source=url_source,
        notes=notes,
    )


def _no_location(
    build: str, *, asked: str | None, platform: str, pins: PinTable, reg_build: str, reg_error: str
) -> str:
    known = pins.canonical(build)
    if known is None:
        listed = ", ".join(sorted(pins.builds)) or "none"
        where = f"the registry offers {reg_build}" if reg_build else f"the registry cannot be read ({reg_error})"
        return f"unknown build {asked or build!r}: it is not in the pin table (pinned: {listed}) and {where}"
    platforms = ", ".join(sorted(pins.builds[known].archives)) or "none"
    return f"build {build} has no archive for {platform} (pinned platforms: {platforms})"


def _record(plan: Plan, sha256: str, size: int) -> layout.InstallRecord:
    return layout.InstallRecord(
        build=plan.build,
        platform=plan.platform,
        archive=plan.archive,
        url=plan.url,
        sha256=sha256,
        bytes=size,
        binary=plan.binary,
        verified_by=plan.verified_by,
        pin_source=plan.pin_source,
        installed_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )


def _already(root: Path, plan: Plan, force: bool) -> layout.InstalledBuild | None:
    build_dir = root / plan.build
    if not build_dir.exists() or force:
        return None
    have = layout.describe_build(root, plan.build)
    if have.binary_ok and have.sha256 and (not plan.sha256 or have.sha256 == plan.sha256):
        return have
    if have.sha256 and plan.sha256 and have.sha256 != plan.sha256:
        raise InstallError(
            f"{build_dir} holds an archive with SHA-256 {have.sha256}, not the expected {plan.sha256}; "
            "run again with --force to replace it"
        )
    raise InstallError(f"{build_dir} exists but is not a complete install; run again with --force to replace it")


async def install(opts: InstallOptions, *, progress: Progress, say: Callable[[str], None]) -> InstallResult:
    """Run the whole install under the root's lock."""
    try:
        opts.root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InstallError(f"cannot create the install root {opts.root}: {exc}") from exc
    try:
        with layout.install_lock(opts.root):
            swept = layout.sweep_temp(opts.root)
            if swept:
                say(f"removed what an interrupted install left: {', '.join(sorted(swept))}")
            return await _install_locked(opts, progress=progress, say=say)
    except layout.LockBusy as exc:
        raise InstallError(str(exc)) from exc


async def _install_locked(opts: InstallOptions, *, progress: Progress, say: Callable[[str], None]) -> InstallResult:
    root = opts.root
    plan = await make_plan(opts)
    for note in plan.notes:
        say(note)
    have = _already(root, plan, opts.force)
    if have is not None:
        changed = layout.current_build(root) != plan.build
        if changed:
            _switch(root, plan.build)
        return InstallResult(
            build=plan.build,
            platform=plan.platform,
            path=have.path,
            binary=have.binary,
            sha256=have.sha256,
            verified_by=have.record.verified_by if have.record else plan.verified_by,
            already_installed=True,
            current_changed=changed,
            notes=plan.notes,
        )
    say(f"downloading {plan.archive} from {plan.url}")
    part = root / f"{plan.archive}.part"
    got = await _fetch(plan, part, progress, say)
    if plan.sha256 and got.sha256 != plan.sha256 and got.resumed:
        progress.note("the checksum does not match after resuming; downloading again from the beginning")
        discard(part)
        got = await _fetch(plan, part, progress, say)
    if plan.sha256 and got.sha256 != plan.sha256:
        discard(part)
        size = f"{got.size} bytes" + (f", pinned size {plan.bytes}" if plan.bytes else "")
        raise InstallError(
            f"checksum mismatch for {plan.archive}: expected SHA-256 {plan.sha256}, got {got.sha256} ({size}). "
            "The download was deleted and nothing was installed"
        )
    say(
        f"sha256 {got.sha256} "
        + (
            "(matches the pin)"
            if plan.verified_by == "pin"
            else "(matches --sha256)"
            if plan.verified_by == "sha256-option"
            else "(UNVERIFIED)"
        )
    )
    path = _place(root, plan, part, got.sha256, got.size, replace=opts.force)
    discard(part)
    return InstallResult(
        build=plan.build,
        platform=plan.platform,
        path=str(path),
        binary=str(path / plan.binary),
        sha256=got.sha256,
        verified_by=plan.verified_by,
        already_installed=False,
        current_changed=True,
        notes=plan.notes,
    )


async def _fetch(plan: Plan, part: Path, progress: Progress, say: Callable[[str], None]) -> Downloaded:
    try:
        return await download(plan.url, part, expected_size=plan.bytes, progress=progress)
    except DownloadError as exc:
        raise InstallError(str(exc)) from exc
    except KeyboardInterrupt:
        progress.finish()
        if _exists(part):
            say(f"interrupted; the partial download is kept at {part}: run the same command again to resume")
        raise


def _exists(path: Path) -> bool:
    return path.exists()


def _place(root: Path, plan: Plan, part: Path, sha256: str, size: int, *, replace: bool) -> Path:
    """Unpack beside the target, then rename into place and switch ``current``."""
    from agy_host import fsutil

    final = root / plan.build
    tmp = layout.temp_name(root, ".unpack-", plan.build)
    old: Path | None = None
    try:
        tmp.mkdir(mode=0o755)
        extract(part, tmp, plan.binary)
        fsutil.write_atomic(tmp / layout.ZIP_SHA, f"{sha256}  {plan.archive}\n".encode(), mode=0o644)
        fsutil.write_atomic(
            tmp / layout.RECORD, msgspec.json.format(msgspec.json.encode(_record(plan, sha256, size))), mode=0o644
        )
        if final.exists() or final.is_symlink():
            if not replace:
                raise InstallError(f"{final} appeared while installing; run again")
            old = layout.temp_name(root, ".old-", plan.build)
            os.rename(final, old)
        os.rename(tmp, final)
    except UnpackError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        discard(part)
        raise InstallError(f"{plan.archive}: {exc}; the download was deleted and nothing was installed") from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and not final.exists():
            with contextlib.suppress(OSError):
                os.rename(old, final)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    _switch(root, plan.build)
    return final


def _switch(root: Path, build: str) -> None:
    try:
        layout.point_current(root, build)
    except OSError as exc:
        raise InstallError(f"build {build} is installed, but `current` could not be switched to it: {exc}") from exc


__all__ = ["LATEST", "InstallError", "InstallOptions", "InstallResult", "InstallUsage", "Plan", "install", "make_plan"]
