"""``agy-host acp-auth`` for agents other than Antigravity, before
Antigravity's server is installed, and ``--logout``: real runs of the CLI
against the scripted fake ACP agent (its ``logout`` and ``terminal`` auth
methods in the wire shapes of the ACP schema)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from .test_install_support import AGY_HOST, cli_env, run_cli
from .test_onboarding import AGY_METHODS, fake, methods_sent

pytestmark = pytest.mark.skipif(not AGY_HOST.exists(), reason=f"agy-host console script not installed at {AGY_HOST}")

#: What the Gemini CLI 0.46.0 advertised (fixtures: mprasanjith-anyagent), plus
#: a terminal method in the schema's shape (``type``, ``args``, ``env``).
OTHER_METHODS = json.dumps(
    [
        {"id": "oauth-personal", "name": "Log in with Google", "description": "Log in with your Google account"},
        {"id": "gemini-api-key", "name": "Gemini API key", "description": "Use an API key with Gemini Developer API"},
        {"id": "login", "name": "Log in", "type": "terminal", "args": ["--login"], "env": {"FAKE_LOGIN_MODE": "tui"}},
    ]
)
ANTIGRAVITY_INFO = json.dumps({"name": "antigravity-acp", "title": "Google Antigravity", "version": "1.3.0"})


def _profile_env(tmp_path: Path, command: str) -> dict[str, str]:
    """A config profile ``other`` that runs ``command``."""
    config = tmp_path / "config" / "agy-host" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"[acp.profiles.other]\ncommand = {json.dumps(shlex.split(command))}\n")
    return cli_env(tmp_path)


async def test_another_agent_is_described_by_what_it_advertises_never_by_antigravitys_file(tmp_path: Path) -> None:
    agent, log = fake(tmp_path, "auth-required", f"auth_methods={OTHER_METHODS}", "auth_message=please log in")
    env = _profile_env(tmp_path, agent)
    for args in (["--agent", agent], ["--agent", "other"]):
        res = await run_cli(env, "acp-auth", *args)
        assert res.returncode == 0, res.stderr
        assert "settings.json" not in res.stdout and "antigravity" not in res.stdout.lower(), res.stdout
        assert "  gemini-api-key   Gemini API key — Use an API key with Gemini Developer API" in res.stdout
        assert "its own sign-in: run FAKE_LOGIN_MODE=… " in res.stdout and " --login\n" in res.stdout
        assert "Sign-out: the agent does not offer ACP's logout" in res.stdout
        assert "Sign-in state: not signed in. The agent says: please log in" in res.stdout
        again = "agy-host acp-auth --agent other" if args[1] == "other" else "agy-host acp-auth --agent '"
        assert f"  {again}" in res.stdout and "--method oauth-personal" in res.stdout, res.stdout
    assert "authenticate" not in methods_sent(log)
    # the same agent saying it is Antigravity's server (its agentInfo.name) gets Antigravity's guide
    named, _log = fake(tmp_path, "auth-required", f"auth_methods={AGY_METHODS}", f"agent_info={ANTIGRAVITY_INFO}")
    res = await run_cli(env, "acp-auth", "--agent", named)
    assert res.returncode == 0, res.stderr
    assert "~/.gemini/antigravity-acp/settings.json at startup" in res.stdout
    assert "--method oauth-personal    sign in with Google in a browser" in res.stdout
    assert "Sign-out: " not in res.stdout


async def test_a_terminal_method_is_never_sent_to_authenticate(tmp_path: Path) -> None:
    agent, log = fake(tmp_path, "auth-required", f"auth_methods={OTHER_METHODS}")
    res = await run_cli(cli_env(tmp_path), "acp-auth", "--agent", agent, "--method", "login")
    assert res.returncode == 2
    assert "'login' is the agent's own sign-in in a terminal: run FAKE_LOGIN_MODE=…" in res.stderr
    assert "authenticate" not in methods_sent(log)


async def test_the_settings_shapes_are_shown_before_the_server_is_installed(tmp_path: Path) -> None:
    env = cli_env(tmp_path, GEMINI_HOME=str(tmp_path / "gh"))
    res = await run_cli(env, "acp-auth")
    assert res.returncode == 1
    assert "Antigravity's ACP server is not installed, so it was not asked" in res.stdout
    for mid in ("oauth-personal", "oauth-business", "gemini-api-key", "agent-platform"):
        assert f"  {mid:<16} " in res.stdout
    assert f"{tmp_path / 'gh' / 'antigravity-acp' / 'settings.json'} at startup" in res.stdout
    assert '{"auth": {"type": "gemini-api-key"}}   (and export GEMINI_API_KEY=...)' in res.stdout
    assert "Install it first: agy-host acp install" in res.stderr
    assert "need the server itself" in res.stderr

    method = await run_cli({**env, "GEMINI_API_KEY": "sekrit-value-123"}, "acp-auth", "--method", "gemini-api-key")
    assert method.returncode == 1
    assert "gemini-api-key: the server selects this method from" in method.stdout
    assert "  GEMINI_API_KEY                   set" in method.stdout
    assert "sekrit-value-123" not in method.stdout + method.stderr


async def test_logout_is_sent_where_offered_and_checked_with_session_new(tmp_path: Path) -> None:
    agent, log = fake(tmp_path, "happy", "logout=ok")
    overview = await run_cli(cli_env(tmp_path), "acp-auth", "--agent", agent)
    assert "Sign-out: the agent offers ACP's logout: agy-host acp-auth --agent '" in overview.stdout
    log.unlink()
    res = await run_cli(cli_env(tmp_path), "acp-auth", "--agent", agent, "--logout")
    assert res.returncode == 0, res.stderr
    assert "Asking the agent to sign out (logout)..." in res.stdout
    assert "Signed out: session/new now asks for a sign-in" in res.stdout
    assert methods_sent(log) == ["initialize", "logout", "session/new"]
    sent = next(json.loads(line) for line in log.read_text().splitlines() if '"logout"' in line)
    assert sent["params"] == {}


async def test_a_refused_logout_is_an_error_with_the_agents_words(tmp_path: Path) -> None:
    agent, _log = fake(tmp_path, "happy", "logout=fails")
    res = await run_cli(cli_env(tmp_path), "acp-auth", "--agent", agent, "--logout")
    assert res.returncode == 1
    assert "the agent refused logout" in res.stderr and "fake: logout failed" in res.stderr


async def test_an_agent_without_logout_is_not_asked_and_the_user_is_told(tmp_path: Path) -> None:
    agent, log = fake(tmp_path, "happy", f"auth_methods={OTHER_METHODS}")
    res = await run_cli(cli_env(tmp_path), "acp-auth", "--agent", agent, "--logout")
    assert res.returncode == 1
    assert "does not offer ACP's logout (agentCapabilities.auth.logout)" in res.stderr
    assert "ACP defines no other way to sign an agent out" in res.stdout
    assert "It signs in (login) with its own command: FAKE_LOGIN_MODE=…" in res.stdout
    assert "settings.json" not in res.stdout
    assert "logout" not in methods_sent(log)
    both = await run_cli(cli_env(tmp_path), "acp-auth", "--agent", agent, "--logout", "--method", "login")
    assert both.returncode == 2


async def test_antigravity_without_logout_or_installed_server_says_what_to_delete(tmp_path: Path) -> None:
    gemini_home = tmp_path / "gh"
    agent, _log = fake(tmp_path, "happy", f"agent_info={ANTIGRAVITY_INFO}")
    env = cli_env(tmp_path, GEMINI_HOME=str(gemini_home))
    for args in (["--agent", agent, "--logout"], ["--logout"]):
        res = await run_cli(env, "acp-auth", *args)
        assert res.returncode == 1
        assert "To sign Antigravity's ACP server out by hand (agy-host deletes nothing itself):" in res.stdout
        assert f"{gemini_home / 'antigravity-acp' / 'acp_token.json'}: delete that file" in res.stdout
        assert f'remove the "auth" entry from {gemini_home / "antigravity-acp" / "settings.json"}' in res.stdout
    assert "Install it first: agy-host acp install" in res.stderr
