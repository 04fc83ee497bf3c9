"""Provision the Gemini CLI (``@google/gemini-cli``, npm) for the interop suite.

The Gemini CLI is a real ACP agent that asks ``session/request_permission``
before its shell and edit tools, with ``allow_always`` among its options
("Allow for this session"). It calls the Gemini API itself, so the tests
point it at the kit's scripted model (``agy_host.testing.models.api``) with
``GOOGLE_GEMINI_BASE_URL``: no network, no key.

It is installed with ``npm ci`` from the lock file committed beside this
module (``constraints/gemini-cli/``, exactly the set tested), with install
scripts off (its optional native modules, a pty and a keychain, are not
used in ACP mode), into ``<cache>/gemini-cli-<version>``. A marker records
what was installed; a second call with the same lock returns at once.

Without ``node`` >= 20 and ``npm`` this raises :class:`Unavailable` (the
tests skip, saying so); an install that fails with the registry reachable is
a :class:`ProvisionError`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from interop.provision import (
    _REPORTS,
    CONSTRAINTS,
    AgentLaunch,
    ProvisionError,
    ProvisionReport,
    Unavailable,
    _locked,
    _read_marker,
    _sha256,
    _write_marker,
    cache_dir,
)

GEMINI_DIST = "@google/gemini-cli"
GEMINI_VERSION = "0.61.0"
NODE_MIN = 20
LOCK_DIR = CONSTRAINTS / "gemini-cli"
#: The model the tests name: an explicit ``--model`` turns the CLI's model
#: router off (with it, each prompt first asks a "flash-lite" classifier for a
#: JSON verdict the scripted model does not give, and retries for minutes).
MODEL = "gemini-2.5-pro"
NPM_REGISTRY = "https://registry.npmjs.org/"


@dataclass(frozen=True)
class GeminiCli:
    """The Gemini CLI's ACP mode (``gemini --acp``), ready to run."""

    root: Path
    node: str
    script: Path
    versions: dict[str, str] = field(default_factory=dict)

    def command(self) -> list[str]:
        return [self.node, str(self.script), "--acp", "--model", MODEL]

    def launch(self, parent: Path) -> AgentLaunch:
        """A launch with its own ``HOME`` (settings: API-key auth; nothing of
        the caller's ``~/.gemini`` is read). The model endpoint comes from the
        environment the host passes (``GOOGLE_GEMINI_BASE_URL``, ``GEMINI_API_KEY``)."""
        home = parent / f"gemini-home-{uuid.uuid4().hex}"
        settings = home / ".gemini" / "settings.json"
        settings.parent.mkdir(parents=True)
        settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}), "utf-8")
        argv = ["env", f"HOME={home}", *self.command()]  # the home's path marks the process
        return AgentLaunch(name="gemini-cli", argv=argv, marker=str(home), supports_load=True, home=home)


def _node() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        raise Unavailable("node and npm are needed for the Gemini CLI (not on PATH)")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=False).stdout
    try:
        major = int(version.strip().lstrip("v").split(".")[0])
    except ValueError:
        raise Unavailable(f"cannot read node's version ({version!r})") from None
    if major < NODE_MIN:
        raise Unavailable(f"the Gemini CLI needs node >= {NODE_MIN}; {node} is {version.strip()}")
    return node


def provision_gemini_cli(cache: Path | None = None) -> GeminiCli:
    """The pinned Gemini CLI, installed from the committed lock file."""
    root = (cache or cache_dir()) / f"gemini-cli-{GEMINI_VERSION}"
    start = time.monotonic()
    node = _node()
    key = {"dist": f"{GEMINI_DIST}@{GEMINI_VERSION}", "lock_sha256": _sha256(LOCK_DIR / "package-lock.json")}
    script = root / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"
    with _locked(root.parent / f"{root.name}.lock"):
        marker = _read_marker(root)
        if marker is not None and marker.get("key") == key and script.is_file():
            seconds = time.monotonic() - start
            _REPORTS.append(ProvisionReport("gemini-cli", seconds, True, "npm", {GEMINI_DIST: GEMINI_VERSION}))
            return GeminiCli(root, node, script, {GEMINI_DIST: GEMINI_VERSION})
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(LOCK_DIR / name, root / name)
        argv = ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--registry", NPM_REGISTRY]
        try:
            done = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=900, check=False)
        except subprocess.TimeoutExpired:
            raise Unavailable(f"npm ci of {GEMINI_DIST} took over 15 min (is {NPM_REGISTRY} reachable?)") from None
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-30:])
            if any(word in tail for word in ("ENOTFOUND", "ECONNREFUSED", "ETIMEDOUT", "EAI_AGAIN")):
                raise Unavailable(f"the npm registry is unreachable:\n{tail}")
            raise ProvisionError(f"npm ci of {GEMINI_DIST} failed (exit {done.returncode}):\n{tail}")
        if not script.is_file():
            raise ProvisionError(f"npm ci installed no {script}")
        seconds = time.monotonic() - start
        _write_marker(root, {"key": key, "versions": {GEMINI_DIST: GEMINI_VERSION}, "seconds": round(seconds, 1)})
        _REPORTS.append(ProvisionReport("gemini-cli", seconds, False, "npm", {GEMINI_DIST: GEMINI_VERSION}))
        return GeminiCli(root, node, script, {GEMINI_DIST: GEMINI_VERSION})


__all__ = ["MODEL", "GeminiCli", "provision_gemini_cli"]
