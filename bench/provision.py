"""Install the peers the benchmarks compare against, into ``.cache/bench/``.

* ``acp-sdk-0.12.1/``: a venv with the official ACP Python SDK
  (``agent-client-protocol==0.12.1``), installed against
  ``bench/peers/acp-sdk.txt`` (the exact set measured here), with ``uv`` when
  one is found, else ``pip``.
* ``antigravity-sdk-0.1.22/``: a venv with Google's ``google-antigravity``
  0.1.22 and all its dependencies (the harness engine's peer).
* ``acpx-0.19.1/``: ``npm install`` of ``bench/peers/package.json`` and its lock
  (``acpx@0.19.1`` pinned: a plain ``npm i acpx`` on Node 20 resolves to
  0.1.15, which lacks most of what is measured). acpx asks for Node >= 22.13
  but runs on Node 20; npm's EBADENGINE warning is expected.

A marker file (``provisioned.json``) records what was installed from which
inputs; a second call with the same inputs returns at once. A peer that cannot
be installed here (no ``node``, registry unreachable) is reported as
unavailable with the reason, and the benchmarks skip that peer's rows, naming
the reason in the table.

Run alone to provision (the nox ``bench`` session does this first)::

    python -m bench.provision
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
PEERS = HERE / "peers"
CACHE_ENV = "AGY_HOST_BENCH_CACHE"

SDK_DIST = "agent-client-protocol"
SDK_VERSION = "0.12.1"
ACPX_VERSION = "0.19.1"
#: Bump when the layout of a provisioned folder changes.
LAYOUT = 1


class Unavailable(Exception):
    """A peer cannot be installed on this machine; the message says why."""


@dataclass(frozen=True)
class Peer:
    name: str
    root: Path
    #: The executable to run: the venv's python, or acpx's JS entry point.
    executable: Path
    version: str
    cached: bool
    seconds: float


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser().resolve() if env else REPO_ROOT / ".cache" / "bench"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _sha256(*paths: Path) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(path.read_bytes())
    return h.hexdigest()


def _read_marker(root: Path) -> dict[str, object] | None:
    try:
        data = json.loads((root / "provisioned.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_marker(root: Path, data: dict[str, object]) -> None:
    tmp = root / "provisioned.json.tmp"
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", "utf-8")
    tmp.replace(root / "provisioned.json")


def _clean_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)  # nox exports it; the installs below name their target
    env.pop("PYTHONPATH", None)
    env["UV_PYTHON_DOWNLOADS"] = "never"
    return env


def _run(cmd: Sequence[str], *, what: str, cwd: Path | None = None) -> str:
    try:
        out = subprocess.run(
            list(cmd),
            capture_output=True,
            text=True,
            timeout=1200,
            check=False,
            env=_clean_env(),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError as exc:
        raise Unavailable(f"cannot run {cmd[0]!r} to {what}: {exc}") from None
    except subprocess.TimeoutExpired:
        raise Unavailable(f"{what}: no answer within 20 min (is the package registry reachable?)") from None
    if out.returncode != 0:
        tail = "\n".join((out.stdout + "\n" + out.stderr).strip().splitlines()[-25:])
        raise Unavailable(f"{what} failed (exit {out.returncode}): {' '.join(cmd)}\n{tail}")
    return out.stdout


def _find_uv() -> str | None:
    for env in ("AGY_HOST_UV", "UV"):
        value = os.environ.get(env)
        if value and shutil.which(value):
            return shutil.which(value)
    sibling = Path(sys.executable).parent / "uv"
    if sibling.exists():
        return str(sibling)
    return shutil.which("uv")


def _runs(cmd: Sequence[str]) -> bool:
    try:
        return subprocess.run(list(cmd), capture_output=True, timeout=60, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# ---------------------------------------------------------------------------
# The ACP Python SDK
# ---------------------------------------------------------------------------


def provision_sdk(cache: Path | None = None) -> Peer:
    root = (cache or cache_dir()) / f"acp-sdk-{SDK_VERSION}"
    constraints = PEERS / "acp-sdk.txt"
    key = {
        "layout": LAYOUT,
        "bytecode": True,
        "dist": f"{SDK_DIST}=={SDK_VERSION}",
        "constraints_sha256": _sha256(constraints),
        "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
    }
    start = time.monotonic()
    with _locked(root.parent / f"{root.name}.lock"):
        python = root / "venv" / "bin" / "python"
        marker = _read_marker(root)
        if marker is not None and marker.get("key") == key and _runs([str(python), "-c", "import acp"]):
            return Peer("acp-sdk", root, python, SDK_VERSION, True, time.monotonic() - start)
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        uv = _find_uv()
        requirement = f"{SDK_DIST}=={SDK_VERSION}"
        constraint_args = ["-c", str(constraints), requirement]
        if uv:
            _run([uv, "venv", "--quiet", "--python", sys.executable, str(root / "venv")], what="create a venv")
            _run(
                [uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", str(python), *constraint_args],
                what=f"install {requirement}",
            )
        else:
            _run([sys.executable, "-m", "venv", str(root / "venv")], what="create a venv")
            _run(
                [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *constraint_args],
                what=f"install {requirement}",
            )
        got = _run(
            [str(python), "-c", f"import importlib.metadata as m; print(m.version({SDK_DIST!r}))"],
            what="read the installed version",
        ).strip()
        if got != SDK_VERSION:
            raise Unavailable(f"{SDK_DIST} {got} was installed, expected {SDK_VERSION}")
        seconds = time.monotonic() - start
        _write_marker(root, {"key": key, "installer": "uv" if uv else "pip", "seconds": round(seconds, 1)})
        return Peer("acp-sdk", root, python, SDK_VERSION, False, seconds)


# ---------------------------------------------------------------------------
# acpx (npm)
# ---------------------------------------------------------------------------


def _acpx_entry(root: Path) -> Path:
    """acpx's JS entry point (``bin.acpx`` of its package.json), run with ``node`` directly
    so the measured process is node itself, not a shell shim."""
    package = root / "node_modules" / "acpx"
    data = json.loads((package / "package.json").read_text("utf-8"))
    bin_field = data.get("bin")
    rel = bin_field.get("acpx") if isinstance(bin_field, dict) else bin_field
    if not isinstance(rel, str):
        raise Unavailable(f"acpx's package.json has no bin entry: {bin_field!r}")
    return (package / rel).resolve()


def node() -> str:
    exe = shutil.which("node")
    if exe is None:
        raise Unavailable("no `node` on PATH (acpx is a Node program; install Node 20+)")
    return exe


def provision_acpx(cache: Path | None = None) -> Peer:
    root = (cache or cache_dir()) / f"acpx-{ACPX_VERSION}"
    node_exe = node()
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable("no `npm` on PATH (needed to install acpx)")
    node_version = subprocess.run([node_exe, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    key = {
        "layout": LAYOUT,
        "acpx": ACPX_VERSION,
        "lock_sha256": _sha256(PEERS / "package.json", PEERS / "package-lock.json"),
        "node": node_version.split(".")[0],
    }
    start = time.monotonic()
    with _locked(root.parent / f"{root.name}.lock"):
        marker = _read_marker(root)
        if marker is not None and marker.get("key") == key:
            try:
                entry = _acpx_entry(root)
            except (OSError, ValueError, Unavailable):
                entry = None
            if entry is not None and _runs([node_exe, str(entry), "--version"]):
                return Peer("acpx", root, entry, ACPX_VERSION, True, time.monotonic() - start)
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        shutil.copy2(PEERS / "package.json", root / "package.json")
        shutil.copy2(PEERS / "package-lock.json", root / "package-lock.json")
        # `npm install` with the lock rather than `npm ci`: npm leaves other
        # platforms' optional packages out of a lock and then `ci` refuses it.
        _run(
            [npm, "install", "--no-audit", "--no-fund", "--loglevel=error"],
            what=f"npm install (acpx@{ACPX_VERSION})",
            cwd=root,
        )
        entry = _acpx_entry(root)
        got = _run([node_exe, str(entry), "--version"], what="run acpx --version").strip()
        if ACPX_VERSION not in got:
            raise Unavailable(f"acpx --version says {got!r}, expected {ACPX_VERSION}")
        seconds = time.monotonic() - start
        _write_marker(root, {"key": key, "seconds": round(seconds, 1)})
        return Peer("acpx", root, entry, ACPX_VERSION, False, seconds)


# ---------------------------------------------------------------------------
# Google's Antigravity SDK (the harness engine's peer)
# ---------------------------------------------------------------------------

ANTIGRAVITY_DIST = "google-antigravity"
ANTIGRAVITY_VERSION = "0.1.22"


def provision_antigravity_sdk(cache: Path | None = None) -> Peer:
    """``google-antigravity`` with all of its dependencies (about 220 MB), in
    its own venv: the SDK as its users install it, binary included."""
    root = (cache or cache_dir()) / f"antigravity-sdk-{ANTIGRAVITY_VERSION}"
    key = {
        "layout": LAYOUT,
        "dist": f"{ANTIGRAVITY_DIST}=={ANTIGRAVITY_VERSION}",
        "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
    }
    start = time.monotonic()
    with _locked(root.parent / f"{root.name}.lock"):
        python = root / "venv" / "bin" / "python"
        marker = _read_marker(root)
        probe = [str(python), "-c", "import google.antigravity"]
        if marker is not None and marker.get("key") == key and _runs(probe):
            return Peer("antigravity-sdk", root, python, ANTIGRAVITY_VERSION, True, time.monotonic() - start)
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        uv = _find_uv()
        requirement = f"{ANTIGRAVITY_DIST}=={ANTIGRAVITY_VERSION}"
        if uv:
            _run([uv, "venv", "--quiet", "--python", sys.executable, str(root / "venv")], what="create a venv")
            _run(
                [uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", str(python), requirement],
                what=f"install {requirement}",
            )
        else:
            _run([sys.executable, "-m", "venv", str(root / "venv")], what="create a venv")
            _run(
                [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", requirement],
                what=f"install {requirement}",
            )
        if not _runs(probe):
            raise Unavailable(f"{requirement} was installed but does not import")
        seconds = time.monotonic() - start
        _write_marker(root, {"key": key, "installer": "uv" if uv else "pip", "seconds": round(seconds, 1)})
        return Peer("antigravity-sdk", root, python, ANTIGRAVITY_VERSION, False, seconds)


def provision_all(cache: Path | None = None) -> dict[str, Peer | Unavailable]:
    """Every peer, or why it is unavailable."""
    out: dict[str, Peer | Unavailable] = {}
    for name, fn in (
        ("acp-sdk", provision_sdk),
        ("acpx", provision_acpx),
        ("antigravity-sdk", provision_antigravity_sdk),
    ):
        try:
            out[name] = fn(cache)
        except Unavailable as exc:
            out[name] = exc
    return out


def main() -> int:
    print(f"bench cache: {cache_dir()}")
    for name, got in provision_all().items():
        if isinstance(got, Unavailable):
            print(f"{name}: unavailable: {got}")
        else:
            state = "cached" if got.cached else "installed"
            print(f"{name} {got.version}: {state} in {got.seconds:.1f}s ({got.executable})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
