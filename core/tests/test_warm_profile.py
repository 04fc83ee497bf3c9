"""Which warm agent a command may use: :func:`agy_host.keeper.profile.profile_of`."""

from __future__ import annotations

from pathlib import Path

from agy_host.keeper import wire
from agy_host.keeper.profile import profile_of


def test_the_environments_order_does_not_change_the_profile(tmp_path: Path) -> None:
    """Two terminals list the same environment in different orders (a
    command from the other one never found the agent left warm): the same
    variables are the same profile; another value is not."""
    env = {"XDG_CONFIG_HOME": str(tmp_path), "PATH": "/bin", "GEMINI_API_KEY": "k"}
    same = profile_of("work", "/p", wire.HostSpec(env=env))
    assert profile_of("work", "/p", wire.HostSpec(env=dict(reversed(env.items())))) == same
    assert profile_of("work", "/p", wire.HostSpec(env={**env, "GEMINI_API_KEY": "other"})) != same
