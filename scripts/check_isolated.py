"""Check an environment that holds agy-host's wheels and nothing of the source tree.

Run by ``nox -s isolated`` inside a fresh venv where only the wheels of core
and one engine plugin were installed::

    python scripts/check_isolated.py --engine acp --dist agy-host --dist agy-host-acp

It checks that:

* the installed ``agy_host`` (and the engine's package) come from the venv's
  site-packages, not from the repository (so the wheels are complete);
* exactly the expected ``agy-host*`` distributions are installed;
* ``agy-host --version`` runs and prints the installed core version;
* ``agy-host plugins --format json`` lists the one engine and nothing else
  (no other engine, no plugin from another distribution, no load error);
* one ``agy-host run --format json`` turn completes on whatever agent the
  host falls back to here (its bundled sandbox agent when no ACP agent is
  installed), with ``HOME`` and the XDG folders in a temporary folder.

Exits non-zero with every failed check listed.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata as md
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent


def _run(
    argv: list[str], env: dict[str, str] | None = None, cwd: str | None = None
) -> subprocess.CompletedProcess[str]:
    print(f"$ {' '.join(argv)}", flush=True)
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=300, env=env, cwd=cwd, stdin=subprocess.DEVNULL, check=False
    )


@contextlib.contextmanager
def _model_for(engine: str, env: dict[str, str], tmp: Path) -> Iterator[None]:
    """The harness engine runs Google's real harness, which needs a model: the
    installed core's scripted model API answers it (``echo``)."""
    if engine != "harness":
        yield
        return
    from agy_host.testing.models.api import ModelApiProcess

    with ModelApiProcess(tmp / "model", {"turns": [[[{"echo": True}]]]}) as model:
        env.update(GOOGLE_GEMINI_BASE_URL=model.url, GEMINI_API_KEY="isolated-check")
        yield


def _isolated_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGY_HOST_") and k != "PYTHONPATH"}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
    )
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", required=True, help="the one engine that must be listed")
    parser.add_argument("--dist", action="append", required=True, help="an expected agy-host* distribution")
    parser.add_argument("--package", action="append", default=[], help="an import package that must come from a wheel")
    parser.add_argument("--skip-run", action="store_true", help="do not run a turn")
    args = parser.parse_args()
    expected = set(args.dist)
    problems: list[str] = []

    cli = shutil.which("agy-host", path=str(Path(sys.executable).parent)) or shutil.which("agy-host")
    if cli is None:
        print("FAIL: no agy-host console script in this environment")
        return 1

    # 1. the code comes from the installed wheels
    for package in ["agy_host", *args.package]:
        spec = importlib.util.find_spec(package)
        origin = Path(spec.origin).resolve() if spec and spec.origin else None
        if origin is None:
            problems.append(f"{package} is not importable")
        elif origin.is_relative_to(REPO_ROOT) and ".nox" not in origin.parts:
            problems.append(f"{package} is imported from the source tree ({origin}), not from a wheel")
        else:
            print(f"ok: {package} from {origin.parent}")

    # 2. exactly the expected distributions
    installed = {
        d.metadata["Name"].lower() for d in md.distributions() if d.metadata["Name"].lower().startswith("agy-host")
    }
    if installed != {d.lower() for d in expected}:
        problems.append(f"agy-host distributions installed: {sorted(installed)}; expected {sorted(expected)}")
    else:
        print(f"ok: distributions {sorted(installed)}")

    with tempfile.TemporaryDirectory(prefix="agy-isolated-") as tmp:
        env = _isolated_env(Path(tmp) / "home")
        project = Path(tmp) / "project"
        project.mkdir()

        # 3. --version
        out = _run([cli, "--version"], env=env, cwd=str(project))
        core_version = md.version("agy-host")
        if out.returncode != 0 or core_version not in out.stdout:
            problems.append(f"agy-host --version: exit {out.returncode}, {out.stdout.strip()!r} (want {core_version})")
        else:
            print(f"ok: {out.stdout.strip()}")

        # 4. plugins: the one engine and nothing else
        out = _run([cli, "plugins", "--format", "json"], env=env, cwd=str(project))
        report: dict[str, Any] = {}
        if out.returncode != 0:
            problems.append(f"agy-host plugins --format json: exit {out.returncode}\n{out.stdout}{out.stderr}")
        else:
            try:
                report = json.loads(out.stdout)
            except ValueError:
                problems.append(f"agy-host plugins --format json printed no JSON:\n{out.stdout}")
        if report:
            engines = report.get("engines")
            names = sorted(str(e.get("name")) for e in engines) if isinstance(engines, list) else None
            if names != [args.engine]:
                problems.append(f"engines listed: {names}; expected exactly [{args.engine!r}]\n{out.stdout}")
            else:
                print(f"ok: engines {names}")
            for entry in engines or []:
                if str(entry.get("distribution", "")).lower() not in {d.lower() for d in expected}:
                    problems.append(f"engine {entry.get('name')!r} comes from {entry.get('distribution')!r}")
            for plugin in report.get("plugins") or []:
                dist = str(plugin.get("distribution", "")).lower()
                if dist and dist not in {d.lower() for d in expected}:
                    problems.append(f"plugin {plugin.get('name')!r} from unexpected distribution {dist!r}")
            if report.get("errors"):
                problems.append(f"plugin load errors: {report['errors']}")

        # 5. one turn, end to end, from the wheels
        if not args.skip_run:
            with _model_for(args.engine, env, Path(tmp)):
                out = _run(
                    [cli, "run", "--format", "json", "--session", "isolated", "ping from the isolated check"],
                    env=env,
                    cwd=str(project),
                )
            events = []
            for line in out.stdout.splitlines():
                try:
                    events.append(json.loads(line))
                except ValueError:
                    continue
            done = events[-1] if events else {}
            if out.returncode != 0 or done.get("type") != "done" or done.get("exit_code") != 0:
                problems.append(
                    f"agy-host run: exit {out.returncode}\n--- stdout ---\n{out.stdout}\n--- stderr ---\n{out.stderr}"
                )
            else:
                engine = next((e.get("engine") for e in events if e.get("type") == "turn_start"), None)
                print(f"ok: one turn on engine {engine!r}, stop_reason {done.get('stop_reason')!r}")

    if problems:
        print("\nFAILED:")
        for p in problems:
            print(f"- {p}")
        return 1
    print("\nisolated install: all checks passed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
