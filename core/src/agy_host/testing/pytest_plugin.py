"""pytest fixtures for agy-host and its plugins (registered under ``pytest11``).

Every pytest run of anyone who installed agy-host loads this module, so it
only *defines* fixtures: no hooks, nothing autouse, no heavy imports (the
fake agents run in subprocesses; config helpers are imported when a fixture
is used). Disable it with ``-p no:agy_host``.

Fixtures:

* ``agy_host_home``: an isolated ``HOME`` and XDG dirs, ``AGY_*`` unset.
* ``fake_acp_agent``: factory ``(scenario="happy", **options) -> FakeAgent``.
* ``replay_agent``: factory ``(path, handshake=None) -> FakeAgent``.
* ``recordings_dir``: the repository's ``tests/fixtures/recorded``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from agy_host.testing.agents import FakeAgent

RECORDINGS_SUBDIR = Path("tests") / "fixtures" / "recorded"


class AgyHostHome:
    """Paths of an isolated agy-host environment."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.config_home = home / ".config"
        self.state_home = home / ".local" / "state"
        self.cache_home = home / ".cache"

    @property
    def config_path(self) -> Path:
        from agy_host import config

        return config.config_path()

    @property
    def state_dir(self) -> Path:
        from agy_host import config

        return config.state_dir()

    def write_config(self, content: Mapping[str, Any] | str) -> Path:
        """Write ``config.toml`` (a mapping is serialised with tomli-w; a str is written as is)."""
        path = self.config_path
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content, "utf-8")
        else:
            import tomli_w

            path.write_text(tomli_w.dumps(dict(content)), "utf-8")
        return path


@pytest.fixture
def agy_host_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AgyHostHome:
    """Point HOME and the XDG base dirs into ``tmp_path`` and unset every
    ``AGY_*`` variable, so a test can neither read nor damage the developer's
    real config, sessions or agent state."""
    env = AgyHostHome(tmp_path / "home")
    for d in (env.config_home, env.state_home, env.cache_home):
        d.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(env.home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(env.config_home))
    monkeypatch.setenv("XDG_STATE_HOME", str(env.state_home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(env.cache_home))
    for name in list(os.environ):
        if name.startswith("AGY_"):
            monkeypatch.delenv(name)
    return env


@pytest.fixture
def fake_acp_agent(tmp_path: Path) -> Callable[..., FakeAgent]:
    """Factory for the scripted fake ACP agent: ``fake_acp_agent("permission",
    cancel="unsupported")``; the scenario may be a built-in name, a file, or a
    dict; keyword options override scenario keys."""
    from agy_host.testing.agents import fake_acp_agent_command

    workdir = tmp_path / "fake-agents"

    def make(scenario: str | Path | Mapping[str, Any] = "happy", **options: Any) -> FakeAgent:
        return fake_acp_agent_command(scenario, workdir=workdir, **options)

    return make


@pytest.fixture
def replay_agent(tmp_path: Path) -> Callable[..., FakeAgent]:
    """Factory for the replay agent serving one recording file."""
    from agy_host.testing.agents import replay_agent_command

    workdir = tmp_path / "fake-agents"

    def make(path: str | Path, handshake: str | Path | None = None) -> FakeAgent:
        return replay_agent_command(path, workdir=workdir, handshake=handshake)

    return make


def find_recordings_dir(start: Path) -> Path | None:
    """``tests/fixtures/recorded`` in ``start`` or the nearest parent that has one."""
    for base in (start, *start.parents):
        candidate = base / RECORDINGS_SUBDIR
        if candidate.is_dir():
            return candidate
    return None


@pytest.fixture(scope="session")
def recordings_dir(request: pytest.FixtureRequest) -> Path:
    """The vendored recordings of this repository (skips outside a checkout)."""
    found = find_recordings_dir(Path(request.config.rootpath))
    if found is None:
        pytest.skip(
            f"no {RECORDINGS_SUBDIR} above pytest's rootdir {request.config.rootpath}: not an agy-host checkout"
        )
    return found
