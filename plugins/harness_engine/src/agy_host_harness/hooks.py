"""The harness plugin's hooks: ``agy-host harness install|status`` (always
registered, so a user can install the binary before the engine is selected)
and, once the engine is selected, its config rows in doctor.

Imported by every ``agy-host`` command, ``--help`` included: msgspec and the
settings (the config module) are imported where they are used."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from agy_host import hookimpl

if TYPE_CHECKING:
    import typer

    from agy_host.contract.diagnostics import DiagnosticReport
    from agy_host_harness.engine import HarnessEngine

_HARNESS_HELP = """Google's Antigravity harness (localharness), for the harness engine.

`install` fetches the pinned google-antigravity wheel with pip (no Python
dependencies) and keeps only the binary, under the user's data dir;
`status` says which binary the engine would run and why."""


@hookimpl
def agy_host_register_commands(app: typer.Typer) -> None:
    import typer as _typer

    harness_app = _typer.Typer(
        name="harness", help=_HARNESS_HELP, no_args_is_help=True, add_completion=False, rich_markup_mode=None
    )

    @harness_app.command("install")
    def harness_install(  # typer reads the defaults; the annotations would need typer at import time
        version: str | None = _typer.Option(
            None, "--version", metavar="V", help="Wheel version (default: the pinned one; others are unverified)."
        ),
        wheel: Path | None = _typer.Option(  # noqa: B008
            None, "--wheel", metavar="FILE", help="Install from a wheel file you already have (offline)."
        ),
        root: Path | None = _typer.Option(  # noqa: B008
            None, "--dir", metavar="DIR", help="Install root (default: $XDG_DATA_HOME/agy-host/harness)."
        ),
    ) -> None:
        """Install the pinned harness binary (atomically: a failed install keeps the previous one)."""
        from agy_host_harness import pin
        from agy_host_harness.binary import data_dir
        from agy_host_harness.install import InstallError, install

        target = root.resolve() if root else data_dir(os.environ)
        try:
            install(
                root=target,
                version=version or pin.VERSION,
                wheel=wheel,
                say=lambda m: print(f"agy-host: {m}", flush=True),
            )
        except InstallError as exc:
            print(f"agy-host: error: {exc}", flush=True)
            raise _typer.Exit(1) from exc

    @harness_app.command("status")
    def harness_status(
        as_json: bool = _typer.Option(False, "--json", help="Print one JSON object."),
    ) -> None:
        """Which harness binary the engine runs, from where, which version."""
        import msgspec

        from agy_host import config as config_mod
        from agy_host_harness import pin
        from agy_host_harness.binary import ENV_VAR, INSTALL_HINT, data_dir, resolve
        from agy_host_harness.install import read_receipt
        from agy_host_harness.settings import SECTION, narrow

        warnings: list[str] = []
        cfg = config_mod.load(os.environ, warnings.append)
        settings = narrow(cfg.section(SECTION), warnings.append)
        choice = resolve(settings.bin, os.environ)
        receipt = read_receipt(os.environ)
        info = {
            "binary": choice.path or None,
            "source": choice.source,
            "usable": choice.found,
            "problem": choice.problem or None,
            "version": choice.version or None,
            "pinned_version": pin.VERSION,
            "managed_install": msgspec.to_builtins(receipt) if receipt else None,
            "managed_dir": str(data_dir(os.environ)),
            "order": [ENV_VAR, f"[{SECTION}] bin", pin.DISTRIBUTION, "managed install"],
        }
        if as_json:
            print(msgspec.json.encode(info).decode())
        else:
            print(f"binary:   {choice.path or '(none)'}")
            print(f"source:   {choice.source} (order: {', '.join(info['order'])})")  # type: ignore[arg-type]
            print(f"version:  {choice.version or 'unknown'} (pinned: {pin.VERSION})")
            if receipt:
                print(f"managed:  {receipt.version} from {receipt.wheel}, sha256 {receipt.sha256}")
            else:
                print(f"managed:  none in {data_dir(os.environ)}")
            if not choice.found:
                print(f"problem:  {choice.problem}; {INSTALL_HINT}")
        for warning in warnings:
            print(f"agy-host: warning: {warning}")
        raise _typer.Exit(0 if choice.found else 1)

    app.add_typer(harness_app)


class HarnessEngineHooks:
    """Registered by the host only when the harness engine is selected."""

    def __init__(self, engine: HarnessEngine) -> None:
        self.engine = engine

    @hookimpl
    def agy_host_diagnostics(self, report: DiagnosticReport) -> None:
        import msgspec

        from agy_host_harness.settings import SECTION

        sec = report.section(f"[{SECTION}] config")
        for key, value in msgspec.structs.asdict(self.engine.settings).items():
            shown = ", ".join(sorted(value)) if key == "env" else value  # the names, never the values
            shown = " ".join(shown) if isinstance(shown, list) else shown
            sec.add(key, shown if shown != "" else "(not set)")


__all__ = ["HarnessEngineHooks", "agy_host_register_commands"]
