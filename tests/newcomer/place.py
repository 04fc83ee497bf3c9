"""A newcomer's machine: a HOME, a project folder, the agy-host a doc's
``pip install`` line installed, and the agents' commands on ``PATH``.

What the docs tell a person to install is what the place has: the
workspace's other distributions are hidden from the ``agy-host`` it runs
(:func:`agy_host.testing.isolation.hide_distribution`), so ``pip install
./core ./plugins/acp_engine`` means the ACP engine alone, as on a fresh
venv. A doc's command line runs as written, through ``bash -c``, in the
project, with no terminal (a new session: no ``/dev/tty`` either), or in a
real terminal (a tmux pane) where the doc says a person answers.

Agents are installed the way their makers ship them and found on ``PATH``
(``gemini`` is npm's link to the CLI's script; ``fast-agent`` is the
venv's console script). Only their model endpoint and credentials are
replaced, by the kit's scripted model API: environment variables and the
agent's own settings file, never the command the doc shows.

Nothing outlives a place: :meth:`Place.close` stops its keeper (when
warm agents were on) and fails on any process still running with its
HOME.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from doc_blocks import REPO_ROOT
from tmux_kit import TMUX, Pane
from warm_kit import stop_keeper

from agy_host.testing.isolation import hide_distribution, isolated_env
from agy_host.testing.models.api import ModelApiProcess

#: A command here takes seconds; this only keeps a hung one from hanging the suite.
COMMAND_TIMEOUT = 90.0
#: The bin folder of the environment under test: its ``agy-host`` and its ``python``.
VENV_BIN = Path(sys.executable).parent


def workspace() -> dict[str, str]:
    """``./core``, ``./plugins/NAME`` -> the distribution name its pyproject.toml gives."""
    found: dict[str, str] = {}
    for folder in [REPO_ROOT / "core", *sorted((REPO_ROOT / "plugins").iterdir())]:
        project = folder / "pyproject.toml"
        if project.is_file():
            with open(project, "rb") as f:
                found[f"./{folder.relative_to(REPO_ROOT)}"] = str(tomllib.load(f)["project"]["name"])
    return found


@dataclass
class Ran:
    """One command line's run: what it printed and how it ended."""

    line: str
    returncode: int
    stdout: str
    stderr: str

    def __str__(self) -> str:
        return (
            f"$ {self.line}\nexit {self.returncode}\n--- stdout ---\n{self.stdout[-6000:]}"
            f"\n--- stderr ---\n{self.stderr[-4000:]}"
        )


@dataclass
class Started:
    """A command line running in the background."""

    line: str
    proc: subprocess.Popen[bytes]
    out: Path
    err: Path

    def stderr(self) -> str:
        """What it wrote to stderr so far."""
        return self.err.read_text(errors="replace")

    def finish(self, timeout: float = COMMAND_TIMEOUT) -> Ran:
        """Wait for it to end (killed, and an error, after ``timeout``)."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            raise AssertionError(f"did not end in {timeout:.0f}s\n{self.ran()}") from None
        return self.ran()

    def interrupt(self) -> None:
        """Ctrl-C, as a terminal sends it: to the command's process group."""
        os.killpg(self.proc.pid, signal.SIGINT)

    def ran(self) -> Ran:
        code = self.proc.returncode if self.proc.returncode is not None else -1
        return Ran(self.line, code, self.out.read_text(errors="replace"), self.stderr())


class Place:
    """One newcomer's HOME and project, with what ``installed`` names (the
    folders of a doc's ``pip install`` line) and nothing else of the workspace."""

    def __init__(self, tmp: Path, installed: Sequence[str], *, warm: bool = False) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        self.project = tmp / "project"
        self.bin = tmp / "bin"
        for folder in (self.project, self.bin):
            folder.mkdir(parents=True, exist_ok=True)
        dists = workspace()
        unknown = set(installed) - set(dists)
        assert not unknown, f"not a folder of the workspace: {sorted(unknown)}"
        site = tmp / "site"
        site.mkdir(exist_ok=True)
        for folder, dist in dists.items():
            if folder not in installed:
                hide_distribution(site, dist)
        self.env = isolated_env(
            self.home, PATH=os.pathsep.join([str(self.bin), str(VENV_BIN), os.environ.get("PATH", "")])
        )
        self.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH", "")]))
        self.warm = warm
        if warm:  # a newcomer's default: a named session's agent stays warm
            del self.env["AGY_HOST_KEEP_ALIVE_MINUTES"]
        self.models: list[ModelApiProcess] = []
        self.panes: list[Pane] = []

    # -- the agents, with the scripted model in place of theirs -----------------

    def model(self, script: dict[str, object]) -> ModelApiProcess:
        api = ModelApiProcess(self.tmp / f"model-{len(self.models)}", script)
        self.models.append(api)
        return api

    def link(self, name: str, target: Path) -> None:
        """``name`` on PATH, as its installer links it."""
        (self.bin / name).symlink_to(target)

    def gemini(self, script: Path, model: ModelApiProcess) -> None:
        """The Gemini CLI, npm's link on PATH; its settings choose API-key
        sign-in and a model (an explicit model keeps its model router off:
        the router asks a classifier the scripted model does not play), and
        trust the project, as its user answers ``gemini`` once (it starts MCP
        servers, the bridge among them, only in a trusted folder)."""
        self.link("gemini", script)
        settings = self.home / ".gemini" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        chosen = {"security": {"auth": {"selectedType": "gemini-api-key"}}, "model": {"name": "gemini-2.5-pro"}}
        settings.write_text(json.dumps(chosen))
        (settings.parent / "trustedFolders.json").write_text(json.dumps({str(self.project): "TRUST_FOLDER"}))
        self.env.update(GEMINI_API_KEY="scripted", GOOGLE_GEMINI_BASE_URL=model.url)

    def fast_agent(self, executable: Path, model: ModelApiProcess) -> None:
        """fast-agent's console script on PATH, its model the scripted one
        behind its generic OpenAI-compatible provider."""
        self.link("fast-agent", executable)
        self.env.update(FAST_AGENT_MODEL="generic.scripted", GENERIC_BASE_URL=f"{model.url}/v1")

    def harness(self, binary: str, model: ModelApiProcess) -> None:
        """The harness binary where ``agy-host harness install`` would put
        it (the variable Google's SDK reads), and the endpoint set as the
        docs set it."""
        self.env.update(ANTIGRAVITY_HARNESS_PATH=binary, GEMINI_API_KEY="scripted")
        self.ok(f"agy-host config set harness.base_url {model.url}")

    # -- running what the docs show ---------------------------------------------

    def run(self, line: str, *, timeout: float = COMMAND_TIMEOUT) -> Ran:
        """``line`` as written, by bash, in the project, with no terminal."""
        return self.start(line).finish(timeout)

    def ok(self, line: str) -> Ran:
        """:meth:`run`, which must exit 0."""
        ran = self.run(line)
        assert ran.returncode == 0, ran
        return ran

    def start(self, line: str) -> Started:
        """``line`` as written, by bash, in the project, with no terminal (a
        new session: no ``/dev/tty`` either), in the background; its output
        goes to files a test can read while it runs."""
        n = len(list(self.tmp.glob("out-*")))
        out, err = self.tmp / f"out-{n}.txt", self.tmp / f"err-{n}.txt"
        with open(out, "wb") as stdout, open(err, "wb") as stderr:
            proc = subprocess.Popen(
                ["bash", "-c", line],
                cwd=self.project,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
            )
        return Started(line, proc, out, err)

    def pane(self, line: str) -> Pane:
        """``line`` in a real terminal (a tmux pane) a test reads and types
        into; the pane shows ``[exit N]`` when it ended. Its environment is
        the place's, as for :meth:`run` (plus the terminal's ``TERM``): not
        the tmux server's, which has this test process's variables."""
        if TMUX is None:
            pytest.skip("tmux is not installed: this example has a person answer at a terminal")
        script = self.tmp / f"pane-{time.monotonic_ns()}.sh"
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in self.env.items() if k.isidentifier())
        script.write_text(
            'if [ -z "$NEWCOMER_PANE" ]; then exec env -i NEWCOMER_PANE=1 TERM="$TERM" bash "$0"; fi\n'
            f'unset NEWCOMER_PANE\n{exports}cd {shlex.quote(str(self.project))}\n{line}\necho "[exit $?]"\n'
        )
        pane = Pane(["bash", str(script)])
        self.panes.append(pane)
        return pane

    @staticmethod
    def shows(pane: Pane, pattern: str, timeout: float = 60.0) -> str:
        """The pane's screen once ``pattern`` is on it; an error at once when
        its command ended first (it shows ``[exit N]``), with the screen."""
        shown = pane.wait_for(rf"(?:{pattern})|\[exit \d+\]", timeout=timeout)
        assert re.search(pattern, shown), f"the command ended before {pattern!r} showed:\n{shown}"
        return shown

    # -- nothing left behind ------------------------------------------------------

    def close(self) -> None:
        for pane in self.panes:
            pane.close()
        for api in self.models:
            api.close()
        if self.warm:
            stop_keeper([str(VENV_BIN / "agy-host")], self.env)
        left = leftovers(self.home)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert not left, f"processes of this place still ran after it: {describe(left)}"


def missing(program: str) -> str | None:
    """Why a doc line that pipes into ``program`` cannot run here (``None``: it can)."""
    if shutil.which(program) is None:
        return f"{program} is not installed: the docs' `| {program}` lines were not run"
    return None


def leftovers(home: Path, seconds: float = 5.0) -> list[int]:
    """Processes still running with ``HOME=home`` after ``seconds`` (an agent
    or keeper ends moments after its command: give it the time)."""
    mark = f"HOME={home}".encode() + b"\0"
    deadline = time.monotonic() + seconds
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                environ = (entry / "environ").read_bytes()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if b"\0" + mark in b"\0" + environ and state != "Z":
                found.append(int(entry.name))
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def describe(pids: list[int]) -> str:
    shown = []
    for pid in pids:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            argv = [b"?"]
        shown.append(f"{pid} {shlex.join(a.decode(errors='replace') for a in argv if a)}")
    return "; ".join(shown)


__all__ = ["COMMAND_TIMEOUT", "VENV_BIN", "Place", "Ran", "Started", "describe", "leftovers", "missing", "workspace"]
