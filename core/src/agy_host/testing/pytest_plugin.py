"""pytest fixtures for agy-host and its plugins (registered under ``pytest11``).

Every pytest run of anyone who installed agy-host loads this module, so it
only *defines* fixtures: no hooks, nothing autouse, no heavy imports (the
fake agents run in subprocesses; config helpers are imported when a fixture
is used). Disable it with ``-p no:agy_host``.

Fixtures:

* ``agy_host_home``: an isolated ``HOME`` and XDG dirs, ``AGY_*`` unset, warm agents off.
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
    # cold unless a test asks: a named session would leave a keeper behind
    monkeypatch.setenv("AGY_HOST_KEEP_ALIVE_MINUTES", "0")
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


@pytest.fixture
def fake_agy(tmp_path: Path) -> Callable[..., Any]:
    """Factory for the fake ``agy`` CLI (stream-json dialect):
    ``fake_agy("tools", build="1.1.24") -> FakeAgyBin``; put its ``env``
    (``AGY_BIN``) into the engine's environment. The scenario may be a
    built-in name, a file, or a dict; keyword options override scenario keys."""
    from agy_host.testing.agy_cli.agent import make_fake_agy

    workdir = tmp_path / "fake-agy"

    def make(scenario: str | Mapping[str, Any] = "happy", **options: Any) -> Any:
        spec = dict(scenario) if isinstance(scenario, Mapping) else scenario
        return make_fake_agy(workdir, spec, **options)

    return make


# ---------------------------------------------------------------------------
# For plugin authors: the real CLI in a subprocess, and the engine contract.
# ---------------------------------------------------------------------------


class CliResult:
    """What one ``agy-host`` subprocess did (see the ``agy_host_cli`` fixture)."""

    def __init__(self, args: list[str], returncode: int, stdout: str, stderr: str) -> None:
        self.args = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr

    def json(self) -> Any:
        """stdout as one JSON document (``--format json`` of most commands)."""
        import json

        return json.loads(self.stdout)

    def json_lines(self) -> list[Any]:
        """stdout as JSON lines (``agy-host run --format json``)."""
        import json

        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    def __repr__(self) -> str:
        return (
            f"CliResult(agy-host {' '.join(self.args)!r} -> exit {self.returncode})\n"
            f"--- stdout ---\n{self.stdout[-3000:]}\n--- stderr ---\n{self.stderr[-3000:]}"
        )


@pytest.fixture
def agy_host_cli(agy_host_home: AgyHostHome) -> Callable[..., CliResult]:
    """Run the real ``agy-host`` CLI in a subprocess (this interpreter,
    ``-m agy_host.cli.main``) inside the isolated ``agy_host_home``; installed
    plugins load through their entry points as they do for users::

        result = agy_host_cli("run", "--engine", "acp", "--agent", agent.command_line, "hi")
        assert result.returncode == 0, result

    Keyword arguments: ``env`` (extra variables), ``input`` (stdin text;
    stdin is empty otherwise), ``cwd``, ``timeout`` (seconds, default 120).
    ``AGY_HOST_TTY=none`` is set so nothing asks on a terminal."""
    import subprocess
    import sys

    def run(
        *args: str,
        env: Mapping[str, str] | None = None,
        input: str | None = None,
        cwd: str | Path | None = None,
        timeout: float = 120.0,
    ) -> CliResult:
        full = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        full["AGY_HOST_TTY"] = "none"
        full.update(env or {})
        proc = subprocess.run(
            [sys.executable, "-m", "agy_host.cli.main", *args],
            env=full,
            cwd=cwd,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return CliResult(list(args), proc.returncode, proc.stdout, proc.stderr)

    return run


@pytest.fixture
def engine_harness() -> Any:
    """The engine under test for :class:`agy_host.testing.contract.EngineContract`.

    This default only explains itself: an engine's own ``conftest.py``
    overrides it with a fixture of the same name returning an
    :class:`~agy_host.testing.contract.EngineHarness`."""
    pytest.fail(
        "the engine contract suite needs an `engine_harness` fixture: define one in your conftest.py that "
        "returns an agy_host.testing.contract.EngineHarness (see docs/plugins/engines.md)",
        pytrace=False,
    )
