"""Development sessions for the agy-host workspace.

    nox                      # tests, lint, typecheck, parity (what `bash .ci/run` runs)
    nox -s tests -- -k acp   # arguments after -- go to pytest
    nox -s interop           # only the real third-party ACP agents
    nox -s parity            # the parity suite, once per engine, each engine alone
    nox -s parity -- --report   # ... and rewrite docs/parity.md (checklist item x engine)
    AGY_HOST_LIVE=1 nox -s parity-live   # the checklist against the real, signed-in agents (spends turns)
    nox -s isolated          # wheels of core + one engine in a fresh venv, one turn on a fake agent
    nox -l                   # list every session

The distributions are found on disk: ``core/`` and every ``plugins/*`` with a
``pyproject.toml``; engines are the plugins that declare an
``agy_host.engines`` entry point. Adding a plugin folder needs no edit here.

Virtualenvs are made with uv when it is available (much faster installs) and
virtualenv otherwise; they are reused between runs (``nox.options.reuse_venv``)
except by ``isolated``, which must start from nothing. Nox keeps one venv per
session: with uv the repeated installs cost seconds, not minutes.
"""

from __future__ import annotations

import os
import shutil
import tomllib
from pathlib import Path

import nox

nox.needs_version = ">=2024.4.15"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["tests", "lint", "typecheck", "parity"]
nox.options.reuse_venv = "yes"

ROOT = Path(__file__).resolve().parent
CORE = ROOT / "core"

#: Tool versions are pinned so a new release cannot turn CI red on its own.
RUFF = "ruff==0.17.6"
MYPY = "mypy==2.4.1"
# pip: uv-made venvs have none, and the docs tests pip-install the tutorial plugin
TEST_DEPS = ["pip", "pytest>=8.2", "pytest-trio>=0.8", "hypothesis>=6.100", "jsonschema>=4.22"]


def _plugins() -> list[Path]:
    root = ROOT / "plugins"
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if (p / "pyproject.toml").is_file())


def _project(path: Path) -> dict[str, object]:
    with open(path / "pyproject.toml", "rb") as f:
        project: dict[str, object] = tomllib.load(f).get("project", {})
    return project


def _engines() -> dict[str, Path]:
    """Engine name -> the plugin folder that provides it."""
    found: dict[str, Path] = {}
    for plugin in _plugins():
        entry_points = _project(plugin).get("entry-points", {})
        group = entry_points.get("agy_host.engines", {}) if isinstance(entry_points, dict) else {}
        for name in group:
            found[str(name)] = plugin
    return found


ENGINES = _engines()


def _rel(path: Path) -> str:
    return f"./{path.relative_to(ROOT)}"


def _test_paths() -> list[str]:
    paths = [p for p in [CORE / "tests", *(plugin / "tests" for plugin in _plugins()), ROOT / "tests"] if p.is_dir()]
    return [str(p.relative_to(ROOT)) for p in paths]


#: The parity suite runs in its own sessions, once per engine with that engine
#: installed alone; collecting it in ``tests`` too would run it a second time
#: (about a minute and a half per engine) against both engines at once.
PARITY_SUITE = ROOT / "tests" / "parity"
#: What a parity session installs next to core and its engine: the suite
#: drives host tools through the bridge, and tool cards through the renderer.
PARITY_COMPANIONS = ("bridge_mcp", "diff_render")


def _uv() -> str | None:
    """The uv nox itself uses, so the interop provisioning can use it too."""
    try:
        from nox.virtualenv import find_uv

        has_uv, uv, _ = find_uv()
    except Exception:
        return shutil.which("uv")
    if not has_uv:
        return None
    return shutil.which(uv) or uv


def _install_workspace(session: nox.Session, *extra: str, plugins: list[Path] | None = None) -> None:
    """core and the plugins, editable, in one resolver call."""
    editables: list[str] = ["-e", _rel(CORE)]
    for plugin in _plugins() if plugins is None else plugins:
        editables += ["-e", _rel(plugin)]
    session.install(*editables, *extra)


def _pytest_env() -> dict[str, str]:
    env: dict[str, str] = {}
    uv = _uv()
    if uv:
        env["AGY_HOST_UV"] = uv
    return env


@nox.session
def tests(session: nox.Session) -> None:
    """Unit tests of every distribution, plus tests/ (conformance, interop)."""
    _install_workspace(session, *TEST_DEPS)
    paths = _test_paths()
    session.log(f"pytest over: {' '.join(paths)}")
    # Exit code 5 is "no tests collected": reported by pytest itself, not an error here.
    ignore = [f"--ignore={PARITY_SUITE.relative_to(ROOT)}"] if PARITY_SUITE.is_dir() else []
    session.run("pytest", *paths, *ignore, *session.posargs, env=_pytest_env(), success_codes=[0, 5])


@nox.session
def interop(session: nox.Session) -> None:
    """Only the real third-party ACP agents (provisioned into .cache/interop)."""
    _install_workspace(session, *TEST_DEPS)
    session.run("pytest", "tests/interop", "-m", "interop", *session.posargs, env=_pytest_env())


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.install(RUFF)
    targets = [t for t in ("core", "plugins", "tests", "scripts", "bench", "noxfile.py") if (ROOT / t).exists()]
    session.run("ruff", "check", *targets)
    session.run("ruff", "format", "--check", *targets)


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict (config: root pyproject.toml) over core/src and each plugins/*/src."""
    # The test dependencies too: agy_host.testing (core's pytest plugin) imports pytest.
    _install_workspace(session, MYPY, *TEST_DEPS)
    sources = [
        str(p.relative_to(ROOT)) for p in [CORE / "src", *(plugin / "src" for plugin in _plugins())] if p.is_dir()
    ]
    # The typed program of docs/examples: the public API as its users check theirs.
    examples = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "docs" / "examples").glob("*.py"))]
    session.run("mypy", *sources, *examples, *session.posargs)


_ENGINE_PARAMS = sorted(ENGINES) or ["(none)"]


@nox.session
@nox.parametrize("engine", _ENGINE_PARAMS)
def parity(session: nox.Session, engine: str) -> None:
    """The parity suite (tests/parity) against one engine, installed alone
    (with the bridge and the diff renderer; never the other engine), then its
    warm subset (``--warm``: items 1, 2, 7, 8, 14, 19, 20 with warm agents on;
    a quarter to a half of the cold run's time). ``-- --report`` also rewrites
    docs/parity.md from every engine's (cold) results."""
    if engine not in ENGINES:
        session.skip("no engine plugin found: no plugins/*/pyproject.toml declares an agy_host.engines entry point")
    if not PARITY_SUITE.is_dir():
        session.error(f"{PARITY_SUITE} is missing: the parity suite cannot run for {engine!r}")
    companions = [ROOT / "plugins" / name for name in PARITY_COMPANIONS]
    missing = [str(c) for c in companions if not (c / "pyproject.toml").is_file()]
    if missing:
        session.error(f"the parity suite needs {', '.join(missing)}")
    _install_workspace(session, *TEST_DEPS, plugins=[ENGINES[engine], *companions])
    # The point of the session: this engine alone (a reused venv must not have gained another).
    session.run("python", "-c", _ONLY_ENGINE, engine, silent=True)
    env = {**_pytest_env(), "AGY_HOST_PARITY_ENGINE": engine}
    suite = str(PARITY_SUITE.relative_to(ROOT))
    session.run("pytest", suite, "--engine", engine, *session.posargs, env=env)
    # The same checks with warm agents: a session's later commands on the agent the keeper kept.
    warm_args = [a for a in session.posargs if a != "--report"]
    # (exit 5: a -k that selects no warm item)
    session.run("pytest", suite, "--engine", engine, "--warm", *warm_args, env=env, success_codes=[0, 5])


#: What the live check drives: both of Antigravity's engines (the real ACP
#: server and the real agy CLI), and any ACP agent named by AGY_HOST_LIVE_AGENT.
LIVE_ENGINES = ("acp", "stream-json")


@nox.session(name="parity-live")
def parity_live(session: nox.Session) -> None:
    """The parity checklist against real, signed-in agents (tests/parity/test_live.py):
    Antigravity's ACP server and the agy CLI as the engines find them, and
    ``$AGY_HOST_LIVE_AGENT``. Spends real turns: only with AGY_HOST_LIVE=1, never
    among the default sessions. It says how many turns before it starts, stops at
    the first quota error, and skips (exit 0) with nothing signed in to run against.
    ``-- --live-target acp`` runs one target, ``-- -k test_02`` one item."""
    if os.environ.get("AGY_HOST_LIVE") != "1":
        session.skip(
            "live check skipped: AGY_HOST_LIVE=1 is not set (it runs the parity checklist against your real, "
            "signed-in agents and spends turns; see docs/parity.md)"
        )
    missing = [name for name in LIVE_ENGINES if name not in ENGINES]
    if missing:
        session.error(f"the live check needs the {', '.join(missing)} engine plugin(s)")
    companions = [ROOT / "plugins" / name for name in PARITY_COMPANIONS]
    _install_workspace(session, *TEST_DEPS, plugins=[*(ENGINES[name] for name in LIVE_ENGINES), *companions])
    session.run("pytest", str(PARITY_SUITE.relative_to(ROOT)), "--live", *session.posargs, env=_pytest_env())


_ONLY_ENGINE = """
import sys
from importlib.metadata import entry_points
found = sorted(ep.name for ep in entry_points(group="agy_host.engines"))
sys.exit(0 if found == [sys.argv[1]] else f"engines installed: {found}; expected only {sys.argv[1]!r}")
"""


def _fake_agents(session: nox.Session, where: Path) -> dict[str, str]:
    """Executables that stand in for Antigravity (both of its CLI binaries, and
    the real harness binary from the cache when it is there),
    run by the session's own interpreter from the installed core wheel
    (``agy_host.testing``), so ``isolated`` completes a real turn on either
    engine without the real agent. The ACP wrapper drops agy's arguments."""
    python = str((Path(session.bin) / "python").absolute())
    where.mkdir(parents=True, exist_ok=True)
    acp, cli = where / "agy-acp" / "agy", where / "agy-cli" / "agy"
    for path, command in (
        (acp, f"exec {python} -m agy_host.testing.acp.agent --scenario happy\n"),
        (cli, f'exec {python} -m agy_host.testing.agy_cli.agent --fake-scenario happy "$@"\n'),
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n" + command)
        path.chmod(0o755)
    env = {"AGY_ACP_BIN": str(acp), "AGY_BIN": str(cli)}
    harness = ROOT / ".cache" / "harness" / "current" / "localharness"
    if harness.is_file():  # the real one (the scripted model is started by the check itself)
        env["ANTIGRAVITY_HARNESS_PATH"] = str(harness)
    return env


@nox.session(reuse_venv=False)
@nox.parametrize("engine", _ENGINE_PARAMS)
def isolated(session: nox.Session, engine: str) -> None:
    """Wheels of core and one engine, installed into a fresh venv with nothing
    else: the CLI runs, ``plugins`` lists that engine and nothing more."""
    if engine not in ENGINES:
        session.skip("no engine plugin found: no plugins/*/pyproject.toml declares an agy_host.engines entry point")
    plugin = ENGINES[engine]
    wheels = Path(session.create_tmp()) / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    wheels.mkdir(parents=True)
    uv = _uv()
    for source in (CORE, plugin):
        if uv:
            session.run(uv, "build", "--wheel", "--out-dir", str(wheels), str(source), external=True)
        else:
            session.run("python", "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(wheels), str(source))
    built = sorted(str(w) for w in wheels.glob("*.whl"))
    session.log(f"built: {', '.join(os.path.basename(w) for w in built)}")
    if len(built) != 2:
        session.error(f"expected 2 wheels in {wheels}, found {built}")
    session.install(*built)
    plugin_project = _project(plugin)
    package = next(iter((plugin / "src").glob("*/__init__.py"))).parent.name
    tmp = Path(session.create_tmp()).resolve()
    session.chdir(tmp)  # away from the source tree
    session.run(
        "python",
        str(ROOT / "scripts" / "check_isolated.py"),
        "--engine",
        engine,
        "--dist",
        "agy-host",
        "--dist",
        str(plugin_project["name"]),
        "--package",
        package,
        env=_fake_agents(session, tmp / "fake-agents"),
    )


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks side by side with the peers (``bench/``; results: docs/performance.md).

    The peers are installed into ``.cache/bench`` first (the ACP Python SDK in
    its own venv, ``acpx@0.19.1`` with npm); arguments after ``--`` go to the
    runner, e.g. ``nox -s bench -- --only B1 -r 7`` or ``-- --quick``.
    Timings live here, never in the unit tests. The harness's own tests
    (fast, not timing-based) run first.
    """
    _install_workspace(session, *TEST_DEPS)
    env = {**_pytest_env(), "PYTHONPATH": str(ROOT)}
    session.run("pytest", "bench/tests", "-q", "-p", "no:cacheprovider", env=env)
    session.run("python", "-m", "bench.provision", env=env)
    out = ROOT / ".cache" / "bench"
    session.run(
        "python",
        "-m",
        "bench",
        "--markdown",
        str(out / "last-results.md"),
        "--json",
        str(out / "last-results.json"),
        *session.posargs,
        env=env,
    )
