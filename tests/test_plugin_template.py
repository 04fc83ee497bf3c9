"""The plugin template (``docs/examples/plugin-template``) is a working
distribution: installed with pip into a fresh virtualenv next to the local
``core`` and ACP engine, agy-host loads it through its entry point and the
template's own test passes there.

The virtualenv is built once per test session (``python -m venv`` + pip with
the local paths) in a temporary directory, from a copy of the template, so the
source tree is never written to; the template's test then runs in it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = REPO_ROOT / "docs" / "examples" / "plugin-template"

pytestmark = pytest.mark.slow


@dataclass
class Venv:
    root: Path
    template: Path

    @property
    def python(self) -> Path:
        return self.root / "venv" / "bin" / "python"

    @property
    def agy_host(self) -> Path:
        return self.root / "venv" / "bin" / "agy-host"

    def env(self, home: Path) -> dict[str, str]:
        skip = ("AGY_", "PYTEST_", "XDG_", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")
        env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
        env.update(
            HOME=str(home),
            XDG_CONFIG_HOME=str(home / ".config"),
            XDG_STATE_HOME=str(home / ".local" / "state"),
            XDG_CACHE_HOME=str(home / ".cache"),
            PATH=f"{self.python.parent}{os.pathsep}{env.get('PATH', '')}",
        )
        return env


def _run(argv: list[str], *, timeout: float = 300, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, **kw)  # type: ignore[call-overload, no-any-return]


def _pip(venv: Venv) -> list[str]:
    """This interpreter's pip aimed at the new venv (``pip --python``, so the
    venv needs no pip of its own: ensurepip alone takes seconds), or the
    venv's own pip when this interpreter has none (a uv-made venv)."""
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip", "--python", str(venv.python)]
    return [str(venv.python), "-m", "pip"]


@pytest.fixture(scope="session")
def template_venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    root = tmp_path_factory.mktemp("plugin-template")
    template = root / "agy-host-myplugin"
    shutil.copytree(TEMPLATE, template, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", ".pytest_cache"))
    venv = Venv(root=root, template=template)
    own_pip = importlib.util.find_spec("pip") is None
    made = _run([sys.executable, "-m", "venv", *([] if own_pip else ["--without-pip"]), str(root / "venv")])
    assert made.returncode == 0, made.stderr
    env = venv.env(root / "home")
    pip = [*_pip(venv), "install", "--quiet", "--no-input"]
    # The build backend once, then every local distribution built against it.
    backend = _run([*pip, "hatchling>=1.25"], env=env)
    assert backend.returncode == 0, f"pip install hatchling failed:\n{backend.stderr[-3000:]}"
    local = [str(REPO_ROOT / "core"), str(REPO_ROOT / "plugins" / "acp_engine"), f"{template}[test]"]
    installed = _run([*pip, "--no-build-isolation", *local], env=env)
    assert installed.returncode == 0, f"pip install failed:\n{installed.stdout[-3000:]}\n{installed.stderr[-3000:]}"
    return venv


def test_the_templates_own_test_passes_in_a_fresh_venv(template_venv: Venv, tmp_path: Path) -> None:
    proc = _run(
        [str(template_venv.python), "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider"],
        cwd=template_venv.template,
        env=template_venv.env(tmp_path / "home"),
    )
    assert proc.returncode == 0, f"{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
    assert re.search(r"\b2 passed\b", proc.stdout), proc.stdout


def test_only_the_template_and_the_acp_engine_are_installed(template_venv: Venv, tmp_path: Path) -> None:
    proc = _run([str(template_venv.agy_host), "plugins", "--format", "json"], env=template_venv.env(tmp_path / "home"))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    plugins = {p["name"]: p for p in doc["plugins"]}
    assert set(plugins) == {"acp", "myplugin"}, plugins
    assert plugins["myplugin"]["distribution"] == "agy-host-myplugin"
    assert plugins["myplugin"]["version"] == "0.1.0"
    assert plugins["myplugin"]["hooks"] == ["agy_host_prompt_parts"]
    assert [e["name"] for e in doc["engines"]] == ["acp"]
    assert doc["errors"] == []


def test_the_readme_names_every_placeholder_of_the_pyproject() -> None:
    project = tomllib.loads((TEMPLATE / "pyproject.toml").read_text("utf-8"))
    readme = (TEMPLATE / "README.md").read_text("utf-8")
    name = project["project"]["name"]
    [(entry, target)] = project["project"]["entry-points"]["agy_host"].items()
    package = target.split(".")[0]
    assert (name, entry, package) == ("agy-host-myplugin", "myplugin", "agy_host_myplugin")
    for placeholder in (name, entry, package):
        assert f"| `{placeholder}` |" in readme, f"README.md's placeholder table misses {placeholder}"
    assert (TEMPLATE / "src" / package / "py.typed").is_file()
