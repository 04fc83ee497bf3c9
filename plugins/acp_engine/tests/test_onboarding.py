"""The guided sign-in, ``agy-host acp-auth``, against the scripted fake ACP
agent (by ``--agent``, and installed as Antigravity by ``acp install``)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
import trio

from agy_host_acp.onboarding import redirect_port, sign_in_lines

from .test_install_support import AGY_HOST, LoopbackServer, World, cli_env, run_cli

pytestmark = pytest.mark.skipif(not AGY_HOST.exists(), reason=f"agy-host console script not installed at {AGY_HOST}")

SIGN_IN_URL = (
    "https://accounts.google.com/o/oauth2/v2/auth?client_id=fake&response_type=code"
    "&redirect_uri=http%3A%2F%2F127.0.0.1%3A40123%2F&state=Ag3nTsT4te"
)
AGY_METHODS = json.dumps(
    [
        {"id": "oauth-personal", "name": "Log in with Google"},
        {"id": "oauth-business", "name": "Log in with Gemini Enterprise"},
        {"id": "gemini-api-key", "name": "Gemini API key"},
        {"id": "agent-platform", "name": "Gemini Enterprise Agent Platform"},
    ]
)


def fake(tmp_path: Path, scenario: str, *sets: str) -> tuple[str, Path]:
    log = tmp_path / "agent-log.jsonl"
    argv = [sys.executable, "-m", "agy_host.testing.acp.agent", "--scenario", scenario, "--log", str(log)]
    for item in sets:
        argv += ["--set", item]
    return shlex.join(argv), log


def methods_sent(log: Path) -> list[str]:
    out = []
    for line in log.read_text().splitlines():
        msg = json.loads(line)
        if "method" in msg and "_fake" not in msg:
            out.append(msg["method"])
    return out


def test_the_redirect_port_comes_from_the_sign_in_url() -> None:
    assert redirect_port(SIGN_IN_URL) == "40123"
    assert redirect_port("https://accounts.google.com/o/oauth2/v2/auth?redirect_uri=http://127.0.0.1:5555/") == "5555"
    lines = sign_in_lines("https://accounts.google.com/o/oauth2/v2/auth?client_id=x")
    assert "  ssh -N -L <port>:127.0.0.1:<port> <user@this-machine>" in lines
    assert "(the port is the one in the link's redirect_uri)" in lines


async def test_oauth_sign_in_shows_the_url_from_stdout_with_the_ssh_hint_and_verifies(tmp_path: Path) -> None:
    agent, log = fake(tmp_path, "auth-required", f"auth_url={SIGN_IN_URL}")
    res = await run_cli(cli_env(tmp_path), "acp-auth", "--agent", agent, "--method", "oauth-personal")
    assert res.returncode == 0, res.stderr
    assert f"  {SIGN_IN_URL}\n" in res.stdout
    assert "  ssh -N -L 40123:127.0.0.1:40123 <user@this-machine>" in res.stdout
    assert "Signed in: session/new works now." in res.stdout
    sent = methods_sent(log)
    assert sent[:2] == ["initialize", "session/new"]
    assert sent[2] == "authenticate" and sent[3] == "session/new"
    auth = next(json.loads(line) for line in log.read_text().splitlines() if '"authenticate"' in line)
    assert auth["params"] == {"methodId": "oauth-personal"}


async def test_a_sign_in_url_on_stderr_is_shown_too(tmp_path: Path) -> None:
    line = f"Open the following link to authenticate the ACP server: {SIGN_IN_URL}"
    agent, _log = fake(tmp_path, "auth-required", f"stderr_lines={json.dumps([line])}")
    res = await run_cli(cli_env(tmp_path), "acp-auth", "--agent", agent, "--method", "oauth-personal")
    assert res.returncode == 0, res.stderr
    assert res.stdout.count(SIGN_IN_URL) == 1
    assert "ssh -N -L 40123:127.0.0.1:40123" in res.stdout


async def test_an_agent_already_signed_in_is_left_alone(tmp_path: Path) -> None:
    agent, log = fake(tmp_path, "happy")
    res = await run_cli(cli_env(tmp_path), "acp-auth", "--agent", agent, "--method", "oauth-personal")
    assert res.returncode == 0, res.stderr
    assert "Already signed in: session/new works" in res.stdout
    assert "authenticate" not in methods_sent(log)


async def test_a_failed_sign_in_is_an_error_with_the_agents_words(tmp_path: Path) -> None:
    agent, _log = fake(tmp_path, "auth-required", "authenticate=fails")
    res = await run_cli(cli_env(tmp_path), "acp-auth", "--agent", agent, "--method", "oauth-personal")
    assert res.returncode == 1
    assert "the sign-in failed: fake: sign-in failed" in res.stderr


async def test_a_sign_in_that_never_finishes_times_out(tmp_path: Path) -> None:
    agent, _log = fake(tmp_path, "auth-required", "authenticate=hang")
    res = await run_cli(cli_env(tmp_path), "acp-auth", "--agent", agent, "--method", "oauth-personal", "--timeout", "1")
    assert res.returncode == 1
    assert "the sign-in did not finish within 1s; nothing was saved" in res.stderr


async def test_a_method_the_agent_does_not_offer_is_a_usage_error(tmp_path: Path) -> None:
    agent, _log = fake(tmp_path, "auth-required")
    res = await run_cli(cli_env(tmp_path), "acp-auth", "--agent", agent, "--method", "agent-platform")
    assert res.returncode == 2
    assert "does not offer the sign-in method 'agent-platform' (it offers: oauth-personal)" in res.stderr
    bad = await run_cli(cli_env(tmp_path), "acp-auth", "--agent", agent, "--timeout", "0")
    assert bad.returncode == 2
    # signed in already: a method it does not list is still a mistake, not "nothing to do"
    gemini = '[{"id": "oauth-personal", "name": "Log in with Google"}]'
    signed_in, _ = fake(tmp_path / "signed-in", "happy", f"auth_methods={gemini}")
    res = await run_cli(cli_env(tmp_path), "acp-auth", "--agent", signed_in, "--method", "nosuch")
    assert res.returncode == 2 and "does not offer the sign-in method 'nosuch'" in res.stderr, res.stderr


async def test_without_an_install_it_points_at_acp_install(tmp_path: Path) -> None:
    res = await run_cli(cli_env(tmp_path), "acp-auth")
    assert res.returncode == 1
    assert "Antigravity's ACP server is not installed" in res.stderr
    assert "Install it first: agy-host acp install" in res.stderr


async def test_the_overview_names_the_next_command(world: World) -> None:
    env = world.env(AGY_FAKE_ACP_SCENARIO="auth-required", AGY_FAKE_ACP_AUTH_METHODS=AGY_METHODS)
    res = await run_cli(env, "acp-auth")
    assert res.returncode == 0, res.stderr
    assert "Sign-in state: not signed in. The agent says: No authentication method selected" in res.stdout
    assert "agy-host acp-auth --method oauth-personal    sign in with Google in a browser" in res.stdout
    assert "agy-host acp-auth --method gemini-api-key" in res.stdout
    assert "Sign-out: " not in res.stdout, "Antigravity's guide, not another agent's"


async def test_antigravity_is_signed_out_with_its_logout(world: World) -> None:
    env = world.env(AGY_FAKE_ACP_LOGOUT="ok", AGY_FAKE_ACP_AUTH_METHODS=AGY_METHODS)
    res = await run_cli(env, "acp-auth", "--logout")
    assert res.returncode == 0, res.stderr
    assert "Asking Antigravity ACP server to sign out (logout)..." in res.stdout
    assert "Signed out: session/new now asks for a sign-in" in res.stdout


@pytest.fixture
async def world(tmp_path: Path, nursery: trio.Nursery) -> World:
    srv = LoopbackServer()
    await nursery.start(srv.run)
    w = World(tmp_path, srv)
    w.publish()
    res = await run_cli(w.env(), "acp", "install")
    assert res.returncode == 0, res.stderr
    return w


async def test_two_commands_from_nothing_to_signed_in(world: World) -> None:
    env = world.env(AGY_FAKE_ACP_SCENARIO="auth-required", AGY_FAKE_ACP_AUTH_URL=SIGN_IN_URL)
    res = await run_cli(env, "acp-auth", "--method", "oauth-personal")
    assert res.returncode == 0, res.stderr
    assert "Asking Antigravity ACP server to sign in with oauth-personal" in res.stdout
    assert SIGN_IN_URL in res.stdout and "Signed in: session/new works now." in res.stdout


async def test_api_key_sign_in_says_what_to_set_and_never_shows_the_value(world: World) -> None:
    env = world.env(
        AGY_FAKE_ACP_SCENARIO="auth-required",
        AGY_FAKE_ACP_AUTH_METHODS=AGY_METHODS,
        GEMINI_API_KEY="sekrit-value-123",
        GEMINI_HOME=str(world.tmp / "gemini-home"),
    )
    res = await run_cli(env, "acp-auth", "--method", "gemini-api-key")
    assert res.returncode == 1
    settings = world.tmp / "gemini-home" / "antigravity-acp" / "settings.json"
    assert f"selects this method from {settings}, read when the server starts:" in res.stdout
    assert '  {"auth": {"type": "gemini-api-key"}}' in res.stdout
    assert "  GEMINI_API_KEY                   set" in res.stdout
    assert "sekrit-value-123" not in res.stdout + res.stderr
    assert "still not signed in after 1 check(s): No authentication method selected" in res.stderr
    assert not settings.exists()


@pytest.mark.slow
async def test_settings_sign_in_rechecks_a_fresh_server_while_waiting(world: World) -> None:
    env = world.env(AGY_FAKE_ACP_SCENARIO="auth-required", AGY_FAKE_ACP_AUTH_METHODS=AGY_METHODS)
    res = await run_cli(env, "acp-auth", "--method", "agent-platform", "--wait", "2")
    assert res.returncode == 1
    assert "  GOOGLE_CLOUD_PROJECT             not set" in res.stdout
    assert "not signed in yet (check 1)" in res.stdout
    assert "still not signed in after 2 check(s)" in res.stderr


async def test_settings_sign_in_succeeds_when_a_fresh_server_is_signed_in(world: World) -> None:
    env = world.env(AGY_FAKE_ACP_AUTH_METHODS=AGY_METHODS)
    res = await run_cli(env, "acp-auth", "--method", "gemini-api-key")
    assert res.returncode == 0, res.stderr
    assert "  GEMINI_API_KEY                   not set" in res.stdout
    assert "Signed in: a fresh server answers session/new." in res.stdout
