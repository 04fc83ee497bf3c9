"""The ACP plugin's fan-out hooks: ``agy-host acp-auth``, ``acp install``, ``acp status``.

Registered through the ``agy_host`` entry point group, so it loads on every
CLI start: it imports nothing of the engine until a command runs (the bodies
are in ``install_cli.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agy_host import hookimpl

if TYPE_CHECKING:
    import typer

_ACP_HELP = """Install and check Google's Antigravity ACP server.

`agy-host acp install` downloads the server for this machine (about 330 MB,
about 1 GB unpacked), verifies its SHA-256 against the pin table shipped with
agy-host, and unpacks it into ~/.local/opt/agy-acp/<build>/ with `current`
pointing at it. `agy-host acp status` shows what is installed and whether it
starts and is signed in. Sign in with `agy-host acp-auth`.
"""


@hookimpl
def agy_host_register_commands(app: typer.Typer) -> None:
    import typer as _typer

    acp_app = _typer.Typer(
        name="acp", help=_ACP_HELP, no_args_is_help=True, add_completion=False, rich_markup_mode=None
    )

    @acp_app.command("install")
    def acp_install(  # noqa: PLR0917 - typer maps each parameter to a CLI option
        build: str | None = _typer.Option(
            None,
            "--build",
            metavar="ID|latest",
            help="Build to install (default: the pinned default build). 'latest' takes the registry's current "
            "build, unverified when it has no pin.",
        ),
        sha256: str | None = _typer.Option(
            None, "--sha256", metavar="HEX", help="Expected archive SHA-256 for a build the pin table does not know."
        ),
        force: bool = _typer.Option(False, "--force", help="Replace an existing install of the same build."),
        root: str | None = _typer.Option(
            None, "--root", metavar="DIR", help="Install root (env AGY_ACP_HOME; default ~/.local/opt/agy-acp)."
        ),
        registry_url: str | None = _typer.Option(
            None, "--registry-url", metavar="URL", help="Registry entry to read (env AGY_ACP_REGISTRY_URL)."
        ),
        pins_file: str | None = _typer.Option(
            None, "--pins", metavar="FILE", help="Extra pin table merged over the shipped one (env AGY_ACP_PINS)."
        ),
        platform: str | None = _typer.Option(
            None, "--platform", metavar="OS-ARCH", help="Registry platform key (default: this machine's)."
        ),
        no_progress: bool = _typer.Option(False, "--no-progress", help="No progress output while downloading."),
    ) -> None:
        """Download, verify and install the Antigravity ACP server.

        Nothing is left half-installed: a checksum mismatch or a corrupt
        archive deletes the download; an interrupted download is resumed by
        running the same command again.
        """
        from agy_host_acp.install_cli import run_install

        code = run_install(
            build=build,
            sha256=sha256,
            force=force,
            root=root,
            registry_url=registry_url,
            pins_file=pins_file,
            platform=platform,
            progress=not no_progress,
        )
        raise _typer.Exit(code)

    @acp_app.command("status")
    def acp_status(
        root: str | None = _typer.Option(None, "--root", metavar="DIR", help="Install root (env AGY_ACP_HOME)."),
        pins_file: str | None = _typer.Option(
            None, "--pins", metavar="FILE", help="Extra pin table (env AGY_ACP_PINS)."
        ),
        no_probe: bool = _typer.Option(False, "--no-probe", help="Do not start the server."),
        fmt: str = _typer.Option("text", "--format", "-f", metavar="text|json", help="Output format."),
    ) -> None:
        """Installed builds, the current one, recorded checksums, whether the
        server starts (handshake time) and whether it is signed in.

        Exit 1 when something needs action (not installed, checksum drift,
        does not start, not signed in).
        """
        from agy_host_acp.install_cli import run_status

        raise _typer.Exit(run_status(root=root, pins_file=pins_file, probe=not no_probe, fmt=fmt))

    app.add_typer(acp_app, name="acp")

    @app.command("acp-auth")
    def acp_auth(
        agent: str = _typer.Option(
            None, "--agent", help="ACP agent command or profile (default: Antigravity).", metavar="CMD"
        ),
        method: str | None = _typer.Option(
            None,
            "--method",
            metavar="ID",
            help="Sign in with this method: oauth-personal runs the browser sign-in; gemini-api-key, "
            "agent-platform and oauth-business say what to set and check it.",
        ),
        timeout: float = _typer.Option(
            600.0, "--timeout", metavar="SECONDS", help="How long the browser sign-in may take."
        ),
        wait: float = _typer.Option(
            0.0, "--wait", metavar="SECONDS", help="Settings methods: keep re-checking for this long."
        ),
        logout: bool = _typer.Option(
            False,
            "--logout",
            help="Sign out: ACP's logout where the agent offers it (Antigravity does), checked with "
            "session/new; otherwise say how to sign out by hand.",
        ),
    ) -> None:
        """Show the ACP agent's sign-in methods; with --method, sign in and
        verify; with --logout, sign out.

        Without --method: starts the agent, asks `initialize` for its auth
        methods, prints them and whether `session/new` works now. For
        Antigravity also the exact `settings.json` shapes its server reads
        (shown even before the server is installed); for another agent only
        what it advertises (a terminal method's command, whether it offers
        logout). Spends no tokens; never touches credentials.
        """
        from agy_host_acp.install_cli import run_auth

        raise _typer.Exit(run_auth(agent=agent, method=method, timeout=timeout, wait=wait, logout=logout))
