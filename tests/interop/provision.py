"""Provision real third-party ACP agents for the interop suite.

Agents nobody here wrote (the Gemini CLI, from npm, is in
:mod:`interop.provision_gemini`), installed from PyPI into private venvs under a
cache folder (``$AGY_HOST_INTEROP_CACHE``, default ``<repo>/.cache/interop``):

* the official ACP Python SDK (``agent-client-protocol`` 0.12.1): its example
  agents ``examples/echo_agent.py`` and ``examples/agent.py`` ship only in the
  sdist, so the sdist is downloaded with pip, checked against its known
  sha256, and the two files are extracted next to the venv;
* ``fast-agent-mcp`` (0.10.48), which needs Python >= 3.13 (on 3.11 pip
  silently picks 0.2.36, which has no ACP): it is installed into a venv of a
  Python >= 3.13 found on this machine, and its version is checked.

Each venv is installed against a constraints file of the exact set tested
here (``constraints/``), with ``uv`` when one is found (seconds) or ``pip``
(about a minute for fast-agent on 2 cores). A marker file records what was
installed; a second call with the same inputs returns at once.

When provisioning is impossible the functions raise :class:`Unavailable`
naming exactly what is missing (no Python >= 3.13, the registry unreachable);
the tests turn that into a skip. Any other failure raises
:class:`ProvisionError` with the installer's output: that is a bug to fix,
not a reason to skip.

Run it alone to provision and time it::

    python tests/interop/provision.py            # prints what it did and how long it took
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
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
CONSTRAINTS = HERE / "constraints"

CACHE_ENV = "AGY_HOST_INTEROP_CACHE"
#: Point at a Python >= 3.13 explicitly (otherwise one is searched for).
PY313_ENV = "AGY_HOST_INTEROP_PYTHON313"
#: Force the installer: "uv" or "pip" (default: uv when found, else pip).
INSTALLER_ENV = "AGY_HOST_INTEROP_INSTALLER"

SDK_DIST = "agent-client-protocol"
SDK_VERSION = "0.12.1"
SDK_SDIST = f"agent_client_protocol-{SDK_VERSION}.tar.gz"
SDK_SDIST_SHA256 = "9963ccb590ed96d7dc542c9c023e90676fc76b1c6562e21a9ee112f4fbcb0095"
SDK_EXAMPLES = ("echo_agent.py", "agent.py")

FAST_AGENT_DIST = "fast-agent-mcp"
FAST_AGENT_VERSION = "0.10.48"
FAST_AGENT_MIN = (0, 10)
FAST_AGENT_PYTHON_MIN = (3, 13)

#: Bump when the layout of a provisioned folder changes.
LAYOUT = 1

__all__ = [
    "AgentLaunch",
    "FastAgent",
    "ProvisionError",
    "ProvisionReport",
    "SdkAgents",
    "Unavailable",
    "cache_dir",
    "find_python",
    "provision_fast_agent",
    "provision_sdk",
    "reports",
]


class Unavailable(Exception):
    """Provisioning is impossible here; the message says what is missing."""


class ProvisionError(RuntimeError):
    """Provisioning failed for a reason that is not a missing prerequisite."""


@dataclass(frozen=True)
class ProvisionReport:
    agent: str
    seconds: float
    cached: bool
    installer: str
    versions: dict[str, str]


_REPORTS: list[ProvisionReport] = []


def reports() -> list[ProvisionReport]:
    """What was provisioned in this process, and how long it took."""
    return list(_REPORTS)


@dataclass(frozen=True)
class AgentLaunch:
    """One agent process to start.

    ``marker`` is a string unique to this launch that appears in ``argv``, so
    a test can find the process (and any leftover) in ``/proc``.
    """

    name: str
    argv: list[str]
    marker: str
    #: What the agent advertises in ``initialize`` (``agentCapabilities.loadSession``).
    supports_load: bool
    home: Path | None = None


@dataclass(frozen=True)
class SdkAgents:
    """The ACP Python SDK's example agents, ready to run."""

    root: Path
    python: Path
    echo_agent: Path
    example_agent: Path
    versions: dict[str, str] = field(default_factory=dict)

    def command(self, which: str) -> list[str]:
        """The command line of ``"echo"`` (``echo_agent.py``) or ``"example"`` (``agent.py``)."""
        script = {"echo": self.echo_agent, "example": self.example_agent}[which]
        return [str(self.python), str(script)]

    def launch(self, which: str) -> AgentLaunch:
        # The examples do not read argv: a trailing flag only marks the process.
        marker = f"--agy-interop-marker={uuid.uuid4().hex}"
        return AgentLaunch(name=f"sdk-{which}", argv=[*self.command(which), marker], marker=marker, supports_load=False)


@dataclass(frozen=True)
class FastAgent:
    """fast-agent-mcp's ACP server with the ``passthrough`` model (no LLM)."""

    root: Path
    python: Path
    executable: Path
    versions: dict[str, str] = field(default_factory=dict)

    def command(self, home: Path, model: str = "passthrough") -> list[str]:
        # --home keeps its sessions in a folder of ours; --no-home breaks
        # session/new (field notes). --no-update-check keeps it off the network.
        # model: one of fast-agent's offline models: "passthrough" (echoes,
        # ***CALL_TOOL), "slow" (passthrough after a 3 s sleep), "silent"...
        return [str(self.executable), "--no-update-check", "acp", "--model", model, "--home", str(home)]

    def launch(self, parent: Path, model: str = "passthrough") -> AgentLaunch:
        home = parent / f"fast-agent-home-{uuid.uuid4().hex}"
        home.mkdir(parents=True)
        argv = self.command(home, model)
        return AgentLaunch(name="fast-agent", argv=argv, marker=str(home), supports_load=True, home=home)


# ---------------------------------------------------------------------------
# Cache, lock, marker
# ---------------------------------------------------------------------------


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser().resolve() if env else REPO_ROOT / ".cache" / "interop"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _read_marker(root: Path) -> dict[str, object] | None:
    try:
        data = json.loads((root / "provisioned.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_marker(root: Path, data: dict[str, object]) -> None:
    tmp = root / "provisioned.json.tmp"
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(root / "provisioned.json")


def _runs(python: Path) -> bool:
    try:
        return subprocess.run([str(python), "-c", "pass"], capture_output=True, timeout=60, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# ---------------------------------------------------------------------------
# Interpreters
# ---------------------------------------------------------------------------


def _version_of(python: str) -> tuple[tuple[int, int], str] | None:
    """``((major, minor), sys.executable)`` of a working interpreter, else None
    (a pyenv shim for a version that is not selected fails here)."""
    code = "import sys; print(sys.version_info[0], sys.version_info[1], sys.executable)"
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    try:
        major, minor, exe = out.stdout.strip().split(" ", 2)
        return (int(major), int(minor)), exe
    except ValueError:
        return None


def _python_candidates(minimum: tuple[int, int]) -> list[str]:
    found: list[str] = []
    explicit = os.environ.get(PY313_ENV)
    if explicit:
        found.append(explicit)
    if sys.version_info[:2] >= minimum:
        found.append(sys.executable)
    minors = range(minimum[1], 20) if minimum[0] == 3 else range(0)
    for minor in minors:
        exe = shutil.which(f"python3.{minor}")
        if exe:
            found.append(exe)
    pyenv_root = Path(os.environ.get("PYENV_ROOT", "~/.pyenv")).expanduser()
    for minor in minors:
        found.extend(str(p) for p in sorted((pyenv_root / "versions").glob(f"3.{minor}.*/bin/python3.{minor}")))
        for prefix in ("/usr/local/bin", "/usr/bin"):
            found.append(f"{prefix}/python3.{minor}")
    return list(dict.fromkeys(found))


def find_python(minimum: tuple[int, int]) -> Path:
    """A working interpreter of at least ``minimum``; :class:`Unavailable` lists what was tried."""
    tried: list[str] = []
    for candidate in _python_candidates(minimum):
        if not (os.path.isabs(candidate) and os.path.exists(candidate)) and shutil.which(candidate) is None:
            continue
        got = _version_of(candidate)
        if got is None:
            tried.append(f"{candidate} (does not run)")
            continue
        version, exe = got
        if version >= minimum:
            return Path(exe)
        tried.append(f"{candidate} (is {version[0]}.{version[1]})")
    want = f"{minimum[0]}.{minimum[1]}"
    where = f"looked for python{want} and newer on PATH, under $PYENV_ROOT/versions and in /usr/local/bin, /usr/bin" + (
        "; found only " + ", ".join(tried) if tried else ""
    )
    raise Unavailable(f"no Python >= {want} interpreter found ({where}); set {PY313_ENV}=/path/to/python{want}")


# ---------------------------------------------------------------------------
# Installers
# ---------------------------------------------------------------------------


def _find_uv() -> str | None:
    for env in ("AGY_HOST_UV", "UV"):
        value = os.environ.get(env)
        if value and shutil.which(value):
            return shutil.which(value)
    sibling = Path(sys.executable).parent / "uv"
    if sibling.exists():
        return str(sibling)
    on_path = shutil.which("uv")
    if on_path:
        return on_path
    with contextlib.suppress(Exception):
        from uv import find_uv_bin  # type: ignore[import-not-found,unused-ignore]

        return str(find_uv_bin())
    return None


def _installer() -> tuple[str, str | None]:
    forced = os.environ.get(INSTALLER_ENV, "").strip().lower()
    uv = _find_uv()
    if forced == "pip":
        return "pip", None
    if forced == "uv" and uv is None:
        raise Unavailable(f"{INSTALLER_ENV}=uv but no uv executable was found")
    return ("uv", uv) if uv else ("pip", None)


def _index_url(kind: str) -> str:
    if kind == "uv":
        url = os.environ.get("UV_DEFAULT_INDEX") or os.environ.get("UV_INDEX_URL")
    else:
        url = os.environ.get("PIP_INDEX_URL")
    return (url or "https://pypi.org/simple").rstrip("/") + "/"


def _registry_reachable(kind: str, dist: str) -> str | None:
    """None when the index answers for ``dist``; otherwise why not."""
    url = _index_url(kind) + dist + "/"
    try:
        with urllib.request.urlopen(url, timeout=20) as resp:  # the configured package index
            resp.read(1)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        return f"the package registry is unreachable ({url}: {exc})"
    return None


def _run(cmd: Sequence[str], *, what: str, kind: str, dist: str, env: dict[str, str] | None = None) -> str:
    try:
        out = subprocess.run(
            list(cmd), capture_output=True, text=True, timeout=1800, check=False, env=env, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError as exc:
        raise Unavailable(f"cannot run {cmd[0]!r} to {what}: {exc}") from None
    except subprocess.TimeoutExpired:
        reason = _registry_reachable(kind, dist)
        if reason:
            raise Unavailable(f"{what}: {reason}") from None
        raise ProvisionError(f"{what}: timed out after 30 min: {' '.join(cmd)}") from None
    if out.returncode != 0:
        reason = _registry_reachable(kind, dist)
        if reason:
            raise Unavailable(f"{what}: {reason}")
        tail = "\n".join((out.stdout + "\n" + out.stderr).strip().splitlines()[-40:])
        raise ProvisionError(f"{what} failed (exit {out.returncode}): {' '.join(cmd)}\n{tail}")
    return out.stdout


def _clean_env() -> dict[str, str]:
    env = dict(os.environ)
    # A nox session exports VIRTUAL_ENV; the installs below name their target.
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    env["UV_PYTHON_DOWNLOADS"] = "never"
    return env


def _make_venv(kind: str, uv: str | None, python: Path, dest: Path, dist: str) -> Path:
    env = _clean_env()
    if kind == "uv":
        assert uv is not None
        # --seed: pip is needed in the venv for `pip download` of the sdist.
        _run(
            [uv, "venv", "--quiet", "--seed", "--python", str(python), str(dest)],
            what="create a venv",
            kind=kind,
            dist=dist,
            env=env,
        )
    else:
        _run([str(python), "-m", "venv", str(dest)], what="create a venv", kind=kind, dist=dist, env=env)
    return dest / "bin" / "python"


def _install(
    kind: str, uv: str | None, venv_python: Path, reqs: Sequence[str], *, constraints: Path, dist: str
) -> None:
    env = _clean_env()
    what = f"install {' '.join(reqs)}"
    if kind == "uv":
        assert uv is not None
        cmd = [
            uv,
            "pip",
            "install",
            "--quiet",
            "--python",
            str(venv_python),
            "--compile-bytecode",
            "-c",
            str(constraints),
        ]
    else:
        # pip compiles bytecode itself (PYTHONDONTWRITEBYTECODE is set on these
        # machines, so nothing would be compiled at import time).
        cmd = [
            str(venv_python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-c",
            str(constraints),
        ]
    _run([*cmd, *reqs], what=what, kind=kind, dist=dist, env=env)


def _installed_versions(venv_python: Path, dists: Sequence[str]) -> dict[str, str]:
    code = "import importlib.metadata as m, json, sys;print(json.dumps({d: m.version(d) for d in sys.argv[1:]}))"
    out = subprocess.run(
        [str(venv_python), "-c", code, *dists], capture_output=True, text=True, timeout=120, check=False
    )
    if out.returncode != 0:
        raise ProvisionError(f"cannot read installed versions from {venv_python}: {out.stderr.strip()}")
    versions: dict[str, str] = json.loads(out.stdout)
    return versions


def _version_tuple(text: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in text.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


# ---------------------------------------------------------------------------
# The ACP Python SDK and its example agents
# ---------------------------------------------------------------------------


def _sdk_key(python_version: tuple[int, int]) -> dict[str, object]:
    return {
        "layout": LAYOUT,
        "dist": f"{SDK_DIST}=={SDK_VERSION}",
        "sdist_sha256": SDK_SDIST_SHA256,
        "constraints_sha256": _sha256(CONSTRAINTS / "acp-sdk.txt"),
        "python": f"{python_version[0]}.{python_version[1]}",
    }


def provision_sdk(cache: Path | None = None) -> SdkAgents:
    """The SDK in a venv and its two example agents extracted from the sdist."""
    root = (cache or cache_dir()) / f"acp-sdk-{SDK_VERSION}"
    python_version = (sys.version_info[0], sys.version_info[1])
    key = _sdk_key(python_version)
    start = time.monotonic()
    with _locked(root.parent / f"{root.name}.lock"):
        venv_python = root / "venv" / "bin" / "python"
        agents = SdkAgents(
            root=root,
            python=venv_python,
            echo_agent=root / "examples" / "echo_agent.py",
            example_agent=root / "examples" / "agent.py",
        )
        marker = _read_marker(root)
        if (
            marker is not None
            and marker.get("key") == key
            and agents.echo_agent.is_file()
            and agents.example_agent.is_file()
            and _runs(venv_python)
        ):
            versions = dict(marker.get("versions", {}))  # type: ignore[call-overload]
            _REPORTS.append(
                ProvisionReport("acp-sdk", time.monotonic() - start, True, str(marker.get("installer")), versions)
            )
            return SdkAgents(agents.root, agents.python, agents.echo_agent, agents.example_agent, versions)

        kind, uv = _installer()
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        venv_python = _make_venv(kind, uv, Path(sys.executable), root / "venv", SDK_DIST)
        _install(
            kind,
            uv,
            venv_python,
            [f"{SDK_DIST}=={SDK_VERSION}"],
            constraints=CONSTRAINTS / "acp-sdk.txt",
            dist=SDK_DIST,
        )
        _extract_examples(venv_python, root / "examples")
        versions = _installed_versions(venv_python, [SDK_DIST, "pydantic"])
        if versions.get(SDK_DIST) != SDK_VERSION:
            raise ProvisionError(f"{SDK_DIST} {versions.get(SDK_DIST)} installed, expected {SDK_VERSION}")
        seconds = time.monotonic() - start
        _write_marker(root, {"key": key, "versions": versions, "installer": kind, "seconds": round(seconds, 1)})
        _REPORTS.append(ProvisionReport("acp-sdk", seconds, False, kind, versions))
        return SdkAgents(agents.root, venv_python, agents.echo_agent, agents.example_agent, versions)


def _extract_examples(venv_python: Path, dest: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="acp-sdist-") as tmp:
        # The examples are in the sdist only; pip verifies the index's hash,
        # and the sha256 below pins the exact file these tests were written for.
        _run(
            [
                str(venv_python), "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                "--no-deps", "--no-binary", ":all:", "--dest", tmp, f"{SDK_DIST}=={SDK_VERSION}",
            ],
            what=f"download the {SDK_DIST} {SDK_VERSION} sdist",
            kind="pip",
            dist=SDK_DIST,
            env=_clean_env(),
        )  # fmt: skip
        sdist = Path(tmp) / SDK_SDIST
        if not sdist.is_file():
            raise ProvisionError(f"pip download left no {SDK_SDIST} in {tmp}: {sorted(os.listdir(tmp))}")
        digest = _sha256(sdist)
        if digest != SDK_SDIST_SHA256:
            raise ProvisionError(f"{SDK_SDIST} has sha256 {digest}, expected {SDK_SDIST_SHA256}")
        dest.mkdir(parents=True, exist_ok=True)
        prefix = f"agent_client_protocol-{SDK_VERSION}/"
        wanted = {f"{prefix}examples/{name}": name for name in SDK_EXAMPLES} | {f"{prefix}LICENSE": "LICENSE"}
        with tarfile.open(sdist, "r:gz") as tar:
            for member in tar.getmembers():
                target = wanted.pop(member.name, None)
                if target is None or not member.isfile():
                    continue
                src = tar.extractfile(member)
                assert src is not None
                (dest / target).write_bytes(src.read())
        if wanted:
            raise ProvisionError(f"{SDK_SDIST} lacks {sorted(wanted)}")


# ---------------------------------------------------------------------------
# fast-agent-mcp
# ---------------------------------------------------------------------------


def provision_fast_agent(cache: Path | None = None) -> FastAgent:
    """fast-agent-mcp in a venv of a Python >= 3.13."""
    root = (cache or cache_dir()) / f"fast-agent-{FAST_AGENT_VERSION}"
    start = time.monotonic()
    python = find_python(FAST_AGENT_PYTHON_MIN)
    got = _version_of(str(python))
    assert got is not None
    key = {
        "layout": LAYOUT,
        "dist": f"{FAST_AGENT_DIST}=={FAST_AGENT_VERSION}",
        "constraints_sha256": _sha256(CONSTRAINTS / "fast-agent.txt"),
        "python": f"{got[0][0]}.{got[0][1]}",
    }
    with _locked(root.parent / f"{root.name}.lock"):
        venv_python = root / "venv" / "bin" / "python"
        executable = root / "venv" / "bin" / "fast-agent"
        marker = _read_marker(root)
        if marker is not None and marker.get("key") == key and executable.is_file() and _runs(venv_python):
            versions = dict(marker.get("versions", {}))  # type: ignore[call-overload]
            _REPORTS.append(
                ProvisionReport("fast-agent", time.monotonic() - start, True, str(marker.get("installer")), versions)
            )
            return FastAgent(root, venv_python, executable, versions)

        kind, uv = _installer()
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        venv_python = _make_venv(kind, uv, python, root / "venv", FAST_AGENT_DIST)
        _install(
            kind,
            uv,
            venv_python,
            [f"{FAST_AGENT_DIST}=={FAST_AGENT_VERSION}"],
            constraints=CONSTRAINTS / "fast-agent.txt",
            dist=FAST_AGENT_DIST,
        )
        versions = _installed_versions(venv_python, [FAST_AGENT_DIST, SDK_DIST])
        if _version_tuple(versions[FAST_AGENT_DIST])[:2] < FAST_AGENT_MIN:
            raise ProvisionError(
                f"{FAST_AGENT_DIST} {versions[FAST_AGENT_DIST]} installed into {venv_python}; "
                f"ACP needs >= {FAST_AGENT_MIN[0]}.{FAST_AGENT_MIN[1]}"
            )
        if not executable.is_file():
            raise ProvisionError(f"{FAST_AGENT_DIST} installed no {executable}")
        seconds = time.monotonic() - start
        _write_marker(root, {"key": key, "versions": versions, "installer": kind, "seconds": round(seconds, 1)})
        _REPORTS.append(ProvisionReport("fast-agent", seconds, False, kind, versions))
        return FastAgent(root, venv_python, executable, versions)


def main() -> int:
    print(f"interop cache: {cache_dir()}")
    status = 0
    if str(HERE.parent) not in sys.path:  # run as a script: the package's modules, one report list
        sys.path.insert(0, str(HERE.parent))
    from interop import provision
    from interop.provision_gemini import provision_gemini_cli

    provisioners: list[tuple[str, Callable[[], object]]] = [
        ("acp-sdk", provision.provision_sdk),
        ("fast-agent", provision.provision_fast_agent),
        ("gemini-cli", provision_gemini_cli),
    ]
    for name, fn in provisioners:
        try:
            fn()
        except provision.Unavailable as exc:
            print(f"{name}: unavailable: {exc}")
        except provision.ProvisionError as exc:
            print(f"{name}: FAILED: {exc}")
            status = 1
    for r in provision.reports():
        state = "cached" if r.cached else f"installed with {r.installer}"
        versions = ", ".join(f"{k} {v}" for k, v in sorted(r.versions.items()))
        print(f"{r.agent}: {state} in {r.seconds:.1f}s ({versions})")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
