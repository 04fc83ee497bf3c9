"""The bodies of ``agy-host acp install``, ``acp status`` and ``acp-auth``.

``hooks.py`` declares the commands (it is imported on every CLI start, so it
stays tiny); the work and its imports live here. Each function returns the
exit code: 0 ok, 1 failed or needs action, 2 bad command line.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from agy_host.config import Config

OK, ERROR, USAGE = 0, 1, 2


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _out(message: str) -> None:
    print(message, flush=True)


def _say(message: str) -> None:
    _err(f"agy-host: {message}")


def _config(env: Mapping[str, str]) -> Config:
    from agy_host import config

    return config.load(env, warn=_say)


def run_install(
    *,
    build: str | None,
    sha256: str | None,
    force: bool,
    root: str | None,
    registry_url: str | None,
    pins_file: str | None,
    platform: str | None,
    progress: bool,
    env: Mapping[str, str] | None = None,
) -> int:
    import trio

    from agy_host_acp import layout, pins, registry
    from agy_host_acp.install import InstallError, InstallOptions, install
    from agy_host_acp.progress import Progress

    env = os.environ if env is None else env
    try:
        table = pins.load(pins_file, env)
    except pins.PinError as exc:
        _err(f"agy-host: error: {exc}")
        return ERROR
    try:
        plat = platform or registry.platform_key()
    except registry.RegistryError as exc:
        _err(f"agy-host: error: {exc}")
        return ERROR
    opts = InstallOptions(
        root=layout.install_root(root, env),
        registry_url=registry.registry_url(registry_url, env),
        pins=table,
        platform=plat,
        build=build,
        sha256=sha256,
        force=force,
    )
    bar = Progress(sys.stderr, enabled=progress)
    try:
        result = trio.run(functools.partial(install, opts, progress=bar, say=_say))
    except InstallError as exc:
        _err(f"agy-host: error: {exc}")
        return exc.exit_code
    verified = {
        "pin": "verified against the pin table",
        "sha256-option": "verified against --sha256",
        "none": "UNVERIFIED: no pin for this build",
    }.get(result.verified_by, result.verified_by)
    if result.already_installed:
        switched = "switched to it" if result.current_changed else "unchanged"
        _out(f"Antigravity ACP server {result.build} is already installed in {result.path}")
        _out(f"  current -> {result.build} ({switched})")
    else:
        _out(f"Installed Antigravity ACP server {result.build} ({result.platform}) in {result.path}")
        _out(f"  sha256 {result.sha256} ({verified}; recorded in {layout.ZIP_SHA})")
        _out(f"  current -> {result.build}")
    for line in _engine_notes(opts.root, env):
        _out(f"  note: {line}")
    _out("Next: agy-host acp-auth --method oauth-personal (sign in; `agy-host acp-auth` lists the other ways),")
    _out("      then agy-host acp status")
    return OK


def _engine_notes(root: Path, env: Mapping[str, str]) -> list[str]:
    """Say so when turns will not run what was just installed."""
    from agy_host_acp import layout
    from agy_host_acp.profiles import AGY_BINARY, resolve_agy_binary

    cfg = _config(env)
    binary, _tried, source = resolve_agy_binary(cfg, env)
    installed = root / layout.CURRENT / AGY_BINARY
    if binary is not None and binary.resolve() == installed.resolve():
        return []
    if binary is not None:
        return [f"turns run {binary} ({source}), which takes precedence over this install"]
    return [
        f"the engine looks in {layout.default_root(env)}; point it here with "
        f"AGY_ACP_BIN={installed} (or `agy-host config set acp.bin {installed}`)"
    ]


def run_status(
    *, root: str | None, pins_file: str | None, probe: bool, fmt: str, env: Mapping[str, str] | None = None
) -> int:
    import trio

    from agy_host_acp import layout, pins, status

    env = os.environ if env is None else env
    if fmt not in ("text", "json"):
        _err(f"agy-host: error: unknown --format {fmt!r}; choose one of: text, json")
        return USAGE
    try:
        table = pins.load(pins_file, env)
    except pins.PinError as exc:
        _err(f"agy-host: error: {exc}")
        return ERROR
    cfg = _config(env)
    report = status.gather(layout.install_root(root, env), table, cfg, env)
    if probe:
        trio.run(status.probe, report, cfg, env)
    if fmt == "json":
        import msgspec

        doc = msgspec.to_builtins(report)
        doc["ok"] = report.ok
        _out(msgspec.json.format(msgspec.json.encode(doc), indent=2).decode())
    else:
        _out(status.render(report))
    return OK if report.ok else ERROR


def run_auth(
    *,
    agent: str | None,
    method: str | None,
    timeout: float,
    wait: float,
    logout: bool = False,
    env: Mapping[str, str] | None = None,
) -> int:
    import trio

    from agy_host_acp import logout as signing_out
    from agy_host_acp import onboarding

    env = os.environ if env is None else env
    if timeout <= 0 or wait < 0:
        _err("agy-host: error: --timeout must be positive and --wait not negative")
        return USAGE
    if logout and method is not None:
        _err("agy-host: error: --logout signs out; it takes no --method")
        return USAGE
    cfg = _config(env)
    spec, problem, server_missing = onboarding.resolve(cfg, env, agent)
    if spec is None:
        if server_missing and logout:
            return signing_out.not_installed(env, problem, _out, _err)
        if server_missing:
            return onboarding.not_installed(env, problem, method, _out, _err)
        _err(f"agy-host: error: {problem}")
        return ERROR
    if logout:
        return trio.run(functools.partial(signing_out.sign_out, spec, cfg, env, out=_out, err=_err))
    if method is None:
        return trio.run(functools.partial(onboarding.overview, spec, cfg, env, agent=agent, out=_out, err=_err))
    return trio.run(
        functools.partial(
            onboarding.sign_in, spec, cfg, env, method=method, timeout=timeout, wait=wait, out=_out, err=_err
        )
    )


__all__ = ["run_auth", "run_install", "run_status"]
