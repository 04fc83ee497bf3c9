"""The ACP plugin's fan-out hooks: the ``agy-host acp-auth`` command.

Registered through the ``agy_host`` entry point group, so it loads on every
CLI start: it imports nothing of the engine until the command runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agy_host import hookimpl

if TYPE_CHECKING:
    import typer

SETTINGS_PATH = "~/.gemini/antigravity-acp/settings.json"

#: The settings shapes Antigravity's ACP server reads at startup (spec §3.12).
SETTINGS_SHAPES = {
    "oauth-personal": '{"auth": {"type": "oauth-personal"}}',
    "gemini-api-key": '{"auth": {"type": "gemini-api-key"}}   (and export GEMINI_API_KEY=...)',
    "oauth-business": '{"auth": {"type": "oauth-business"}, "gcp": {"project": "...", "location": "..."}}',
    "agent-platform": (
        '{"auth": {"type": "agent-platform"}, "gcp": {"project": "...", "location": "..."}}   '
        "(or GOOGLE_API_KEY, or GOOGLE_CLOUD_PROJECT + GOOGLE_CLOUD_LOCATION with ADC)"
    ),
}


def auth_guide(methods: list[tuple[str, str, str]]) -> str:
    """The text ``acp-auth`` prints: the agent's methods and the settings shapes."""
    lines = ["Sign-in methods the agent offers:"]
    if methods:
        for mid, name, desc in methods:
            lines.append(f"  {mid:<16} {name}" + (f" — {desc}" if desc else ""))
    else:
        lines.append("  (none advertised)")
    lines += [
        "",
        f"Antigravity's ACP server reads {SETTINGS_PATH} at startup. Shapes it accepts:",
    ]
    lines += [f"  {mid:<16} {shape}" for mid, shape in SETTINGS_SHAPES.items()]
    lines += [
        "",
        "For oauth-personal the server prints a sign-in URL ('Open the following link to authenticate the",
        "ACP server: https://accounts.google.com/...'); agy-host shows it when it appears. On a remote",
        "machine forward the redirect port first: ssh -N -L <port>:127.0.0.1:<port> <user@host>.",
        "A machine where the `agy` CLI is signed in is usually adopted without a browser.",
        "",
        "agy-host never reads, writes or prints credentials; check the result with `agy-host doctor`.",
    ]
    return "\n".join(lines)


@hookimpl
def agy_host_register_commands(app: typer.Typer) -> None:
    import typer as _typer

    @app.command("acp-auth")
    def acp_auth(
        agent: str = _typer.Option(None, "--agent", help="ACP agent command or profile (default: Antigravity)."),
    ) -> None:
        """Show the ACP agent's sign-in methods and the settings shapes it reads.

        Starts the agent, asks `initialize` for its auth methods, prints them
        with the exact `settings.json` shapes. Spends no tokens; never touches
        credentials.
        """
        import trio

        from agy_host_acp.cli_support import fetch_auth_methods

        methods, error = trio.run(fetch_auth_methods, agent)
        if error:
            _typer.echo(f"agy-host: could not ask the agent: {error}", err=True)
        _typer.echo(auth_guide(methods))
        if error:
            raise _typer.Exit(1)
