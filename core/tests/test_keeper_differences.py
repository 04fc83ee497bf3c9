"""Why a warm agent does not fit a command, in a person's words (keeper/warm.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from agy_host.keeper import wire
from agy_host.keeper.profile import Fitted, config_digest, differences


def _warm(spec: wire.HostSpec, cwd: str = "/p") -> Fitted:
    return cast("Fitted", SimpleNamespace(spec=spec, cwd=cwd, config=config_digest(spec.env)))


def _spec(**kw: Any) -> wire.HostSpec:
    env = kw.pop("env", {"HOME": "/h", "XDG_CONFIG_HOME": "/nowhere"})
    return wire.HostSpec(env=env, **kw)


def test_settings_are_named_by_their_options() -> None:
    old = _warm(_spec(permissions=None, agent="a"))
    assert differences(old, "/p", _spec(permissions="ask", agent="b")) == "--agent, --permissions"
    assert differences(old, "/q", _spec(permissions=None, agent="a")) == "the working directory"


def test_the_environment_is_named_by_variable_never_by_value() -> None:
    old = _warm(_spec(env={"HOME": "/h", "KEY": "secret-1", "GONE": "x", "PWD": "/a"}))
    said = differences(old, "/p", _spec(env={"HOME": "/h", "KEY": "secret-2", "NEW": "y", "PWD": "/b"}))
    assert said == "the environment (GONE, KEY, NEW)"
    assert "secret" not in said


def test_many_variables_are_counted() -> None:
    old = _warm(_spec(env={}))
    said = differences(old, "/p", _spec(env={f"V{i}": "1" for i in range(8)}))
    assert said == "the environment (V0, V1, V2, V3, V4 and 3 more)"


def test_an_edited_config_file_is_named(tmp_path: Path) -> None:
    config = tmp_path / "agy-host" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "a"\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path), "HOME": str(tmp_path)}
    old = _warm(_spec(env=env))
    config.write_text('model = "b"\n')
    assert differences(old, "/p", _spec(env=env)) == "the config file"
