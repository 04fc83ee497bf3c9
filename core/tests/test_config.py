"""Config: TOML into Structs, env on top, bad values narrowed with a warning,
a broken file moved aside (never clobbered), ``set`` writing one key atomically."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from agy_host import config, config_writes
from agy_host.config import Config, ConfigError


def _load(path: Path, env: dict[str, str] | None = None) -> tuple[Config, list[str]]:
    warnings: list[str] = []
    cfg = config.load(env=env or {}, warn=warnings.append, path=path)
    return cfg, warnings


def test_missing_file_gives_defaults(tmp_path: Path) -> None:
    cfg, warnings = _load(tmp_path / "config.toml")
    assert cfg == Config()
    assert warnings == []


def test_paths_follow_xdg_and_override(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "c"), "XDG_STATE_HOME": str(tmp_path / "s")}
    assert config.config_path(env) == tmp_path / "c" / "agy-host" / "config.toml"
    assert config.state_dir(env) == tmp_path / "s" / "agy-host"
    assert config.config_path({**env, "AGY_HOST_CONFIG": str(tmp_path / "x.toml")}) == tmp_path / "x.toml"


def test_file_values_and_plugin_tables(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        'engine = "acp"\nmodel = "flash"\n[turn]\ntimeout_minutes = 2.5\n'
        '[acp]\nbin = "/opt/agy"\n[acp.profiles.gemini]\ncommand = ["gemini", "--acp"]\n'
        '[stream_json]\nbin = "agy"\n'
    )
    cfg, warnings = _load(path)
    assert warnings == []
    assert (cfg.engine, cfg.model, cfg.turn.timeout_minutes, cfg.acp.bin) == ("acp", "flash", 2.5, "/opt/agy")
    assert cfg.acp.profiles["gemini"].command == ["gemini", "--acp"]
    assert cfg.section("stream_json") == {"bin": "agy"}
    assert cfg.section("absent") == {}


def test_env_wins_over_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('engine = "stream-json"\n[acp]\nbin = "/file"\n')
    cfg, _ = _load(
        path,
        {
            "AGY_HOST_ENGINE": "acp",
            "AGY_ACP_BIN": "/env",
            "AGY_HOST_SKIP_PERMISSIONS": "1",
            "AGY_HOST_TIMEOUT_MINUTES": "3",
        },
    )
    assert (cfg.engine, cfg.acp.bin, cfg.skip_permissions, cfg.turn.timeout_minutes) == ("acp", "/env", True, 3.0)


def test_bad_env_value_is_ignored_with_a_warning_naming_the_variable(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[turn]\ntimeout_minutes = 7\n")
    cfg, warnings = _load(path, {"AGY_HOST_TIMEOUT_MINUTES": "soon", "AGY_HOST_INACTIVITY_MINUTES": "-1"})
    assert cfg.turn.timeout_minutes == 7  # the file's value stays
    assert cfg.turn.inactivity_minutes == 5.0
    assert any("AGY_HOST_TIMEOUT_MINUTES" in w for w in warnings)
    assert any("AGY_HOST_INACTIVITY_MINUTES" in w and "negative" in w for w in warnings)


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('skip_permissions = "perhaps"', "skip_permissions"),
        ("[turn]\ntimeout_minutes = -3", "turn.timeout_minutes"),
        ("[turn]\ntimeout_minutes = nan", "turn.timeout_minutes"),
        ("[turn]\ninactivity_minutes = inf", "turn.inactivity_minutes"),
        ('[turn]\ntimeout_minutes = "ten"', "turn.timeout_minutes"),
        ("[acp]\ncancel_grace_seconds = -1", "acp.cancel_grace_seconds"),
        ("engine = 42", "engine"),
        ("[bridge]\nport = 70000", "bridge.port"),
        ("[bridge]\nport = -1", "bridge.port"),
    ],
)
def test_bad_value_narrows_to_its_default(tmp_path: Path, toml: str, key: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text('model = "kept"\n' + toml + "\n")
    cfg, warnings = _load(path)
    default = Config()
    section, _, name = key.rpartition(".")
    got = getattr(getattr(cfg, section), name) if section else getattr(cfg, name)
    want = getattr(getattr(default, section), name) if section else getattr(default, name)
    assert got == want
    assert cfg.model == "kept"  # other values are not poisoned
    assert any(repr(key) in w for w in warnings), warnings


def test_non_table_section_and_unknown_keys_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('turn = 5\nengin = "acp"\n[acp]\nbinn = "x"\n')
    cfg, warnings = _load(path)
    assert cfg.turn == config.TurnConfig()
    assert cfg.plugins["engin"] == "acp"  # kept, never dropped
    assert any("'turn' must be a table" in w for w in warnings)
    assert any("'engin'" in w for w in warnings)
    assert any("'acp.binn'" in w for w in warnings)


def test_one_bad_profile_keeps_the_others(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[acp.profiles.good]\ncommand = ["a"]\n[acp.profiles.bad]\ncommand = "not a list"\n')
    cfg, warnings = _load(path)
    assert list(cfg.acp.profiles) == ["good"]
    assert any("acp.profiles.bad" in w for w in warnings)


def test_not_toml_is_moved_aside_and_defaults_used(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("engine = = broken\n")
    cfg, warnings = _load(path)
    assert cfg == Config()
    [moved] = list(tmp_path.glob("config.toml.corrupt-*"))
    assert moved.read_text() == "engine = = broken\n"
    assert not path.exists()
    assert any(str(moved) in w for w in warnings)


def test_set_value_keeps_other_keys_and_comments_free_tables(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('engine = "acp"\n[acp]\nbin = "/opt/agy"\n[stream_json]\nbin = "agy"\n')
    config_writes.set_value("model", "flash", path=path)
    config_writes.set_value("turn.timeout_minutes", "2.5", path=path)
    cfg, warnings = _load(path)
    assert warnings == []
    assert (cfg.engine, cfg.acp.bin, cfg.model, cfg.turn.timeout_minutes) == ("acp", "/opt/agy", "flash", 2.5)
    assert cfg.section("stream_json") == {"bin": "agy"}


def test_set_value_creates_the_file(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "config.toml"
    assert config_writes.set_value("skip_permissions", "yes", path=path) == path
    assert _load(path)[0].skip_permissions is True


def test_toml_nested_too_deep_is_moved_aside_and_refused_by_set(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    deep = "engine = " + "[" * 3000 + "]" * 3000 + "\n"
    path.write_text(deep)
    with pytest.raises(ConfigError, match="not valid TOML"):
        config_writes.set_value("model", "x", path=path)
    assert path.read_text() == deep, "set never clobbers a file it cannot read"
    cfg, warnings = _load(path)
    assert cfg == config.Config(), "the defaults are used"
    [moved] = list(tmp_path.glob("config.toml.corrupt-*"))
    assert moved.read_text() == deep and any(str(moved) in w for w in warnings)


def test_set_value_checks_ranges_and_writes_through_a_symlink(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="between 0 and 65535"):
        config_writes.set_value("bridge.port", "70000", path=tmp_path / "c.toml")
    real = tmp_path / "dotfiles" / "config.toml"
    real.parent.mkdir()
    real.write_text('model = "m"\n')
    link = tmp_path / "config.toml"
    link.symlink_to(real)
    config_writes.set_value("bridge.port", "8123", path=link)
    assert link.is_symlink(), "the link is kept"
    assert _load(real)[0].bridge.port == 8123 and _load(real)[0].model == "m"


def test_set_value_refuses_to_clobber_a_broken_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("not = = toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        config_writes.set_value("model", "x", path=path)
    assert path.read_text() == "not = = toml"


@pytest.mark.parametrize(
    ("key", "text", "value"),
    [
        ("model", "1.5", "1.5"),  # a string key keeps the text as typed
        ("model", "true", "true"),
        ("skip_permissions", "on", True),
        ("skip_permissions", "0", False),
        ("turn.timeout_minutes", "3", 3),
        ("acp.cancel_grace_seconds", "0.5", 0.5),
        ("stream_json.bin", "agy", "agy"),  # a plugin's table keeps the user's type
        ("stream_json.port", "8080", 8080),
        ("stream_json.label", "nan", "nan"),
    ],
)
def test_coerce_value(key: str, text: str, value: object) -> None:
    assert config.coerce_value(key, text) == value


@pytest.mark.parametrize(
    ("key", "text", "message"),
    [
        ("nope", "1", None),
        ("turn.nope", "1", "unknown config key"),
        ("turn", "1", "is a table"),
        ("turn.timeout_minutes", "-1", "negative"),
        ("turn.timeout_minutes", "inf", "finite"),
        ("skip_permissions", "maybe", "bad value"),
    ],
)
def test_coerce_value_errors(key: str, text: str, message: str | None) -> None:
    if message is None:  # an unknown top-level key is a plugin's table, not an error
        assert config.coerce_value(key, text) == 1
        return
    with pytest.raises(ConfigError, match=message):
        config.coerce_value(key, text)


def test_to_toml_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('engine = "acp"\n[acp.profiles.g]\ncommand = ["g"]\n[bridge]\nport = 0\n')
    cfg, _ = _load(path)
    again = tmp_path / "again.toml"
    again.write_text(config.to_toml(cfg))
    assert _load(again) == (cfg, [])


def test_unset_value_removes_a_key_and_the_tables_it_leaves_empty(tmp_path: Path) -> None:
    from agy_host.config_writes import unset_value

    target = tmp_path / "config.toml"
    assert unset_value("model", path=target) == (target, False), "no file: nothing to remove, nothing created"
    assert not target.exists()
    text = 'model = "m"\n[turn]\ntimeout_minutes = 3\n[permissions]\npolicy = "auto"\nrules_default = "ask"\n'
    target.write_text(text)
    assert unset_value("turn.timeout_minutes", path=target) == (target, True)
    assert unset_value("permissions.policy", path=target) == (target, True)
    assert unset_value("permissions.nothing", path=target) == (target, False)
    assert unset_value("model.sub", path=target) == (target, False), "a value is not a table"
    left = tomllib.loads(target.read_text())
    assert left == {"model": "m", "permissions": {"rules_default": "ask"}}, "the emptied [turn] went too"


def test_unset_value_refuses_a_file_that_is_not_toml_and_writes_through_a_symlink(tmp_path: Path) -> None:
    from agy_host.config import ConfigError
    from agy_host.config_writes import unset_value

    real = tmp_path / "dotfiles" / "config.toml"
    real.parent.mkdir()
    real.write_text('model = "m"\n')
    link = tmp_path / "config.toml"
    link.symlink_to(real)
    assert unset_value("model", path=link)[1] is True
    assert link.is_symlink() and real.read_text().strip() == ""
    real.write_text("not = [toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        unset_value("model", path=link)
    assert real.read_text() == "not = [toml", "never clobbered"
