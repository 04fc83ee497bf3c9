"""Live rigs: the parity checklist against real, signed-in agents.

Beside the fake rigs of :mod:`parity.rigs`, which point each engine at a fake
Antigravity playing a script, these point the engines at what a user runs:

``acp``          Antigravity's ACP server, found by the ACP engine's own
                 resolution (``AGY_ACP_BIN``, ``acp.bin``, ``PATH``, the
                 install dir);
``stream-json``  the ``agy`` CLI, found by the stream-json engine's own
                 resolution (``AGY_BIN``, ``stream_json.bin``, ``PATH``);
``agent``        any ACP agent command named by ``$AGY_HOST_LIVE_AGENT``
                 (``gemini --acp``), on the ACP engine.

A target runs only when it is found and signed in. The ACP targets are checked
with ``initialize`` and ``session/new``, which spend no tokens; agy has no
such check, so its sign-in costs one short turn, said before it is spent.
Nothing runs without ``AGY_HOST_LIVE=1``.

The user's HOME stays (the agents keep their sign-in there); agy-host's own
config and state are private to the run: ``AGY_HOST_CONFIG`` and
``XDG_STATE_HOME`` point into the test's folder. The agents keep what they
always keep: the conversations land in the account's history, and the
stream-json engine registers its bridge in agy's MCP config for the turn, as
it does for any user.

A run whose agent reports a quota or rate limit raises :class:`QuotaStop`;
the suite's conftest turns it into ``pytest.exit``: the first one ends the
live check with one clear line.
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parity.rigs import Agent, Home, Run

#: Set to 1 to let the live check spend turns.
LIVE_ENV = "AGY_HOST_LIVE"
#: An ACP agent command to check as well (``gemini --acp``).
AGENT_ENV = "AGY_HOST_LIVE_AGENT"
TARGETS = ("acp", "stream-json", "agent")

#: Real agents start slower and answer later than the fakes: a cold ACP
#: server takes seconds to answer ``initialize`` and up to 15 s for its first
#: ``session/new`` (agy-dialects.md A.2).
LIVE_CONFIG: dict[str, dict[str, Any]] = {
    "turn": {"timeout_minutes": 5.0, "inactivity_minutes": 2.0, "permission_timeout_seconds": 10.0},
    "acp": {"cancel_grace_seconds": 2.0, "initialize_timeout_seconds": 90.0, "session_timeout_seconds": 60.0},
    "stream_json": {"exit_grace_seconds": 5.0},
}
#: How long one live command may take before the test gives up on it.
COMMAND_SECONDS = 420.0

#: What agents say when a quota or a rate limit stops them: agy's "Individual
#: quota reached" and ``RESOURCE_EXHAUSTED (code 429)``, its credits message,
#: HTTP 429 "Too Many Requests", "rate limit" (agy-dialects.md B.6).
QUOTA = re.compile(
    r"quota|rate[ -]?limit|RESOURCE_EXHAUSTED|too many requests|\b429\b|credits balance|exhausted your",
    re.IGNORECASE,
)


#: The live check's part of docs/parity.md, written there by the report
#: (``write_report``) after the tables; the numbers are the live suite's own
#: (``tests/test_parity_live.py`` checks them against what a run announces).
LIVE_SECTION = """\
## Before a release: the live check

The engine columns above are proven on fakes: each engine drives a scripted
Antigravity (`tests/parity/rigs.py`), or, for the harness, the real
`localharness` against a scripted model. Before a release, run the same
checklist against the real, signed-in agents:

```bash
AGY_HOST_LIVE=1 nox -s parity-live                          # every target found and signed in
AGY_HOST_LIVE=1 AGY_HOST_LIVE_AGENT="gemini --acp" nox -s parity-live   # ... and another ACP agent
AGY_HOST_LIVE=1 nox -s parity-live -- --live-target acp -k test_02      # one target, one item
AGY_HOST_LIVE=1 nox -s parity-live -- --report              # ... and add a live table to this page
```

**What to install.** `pip install nox`; the session installs agy-host, both
Antigravity engines, the bridge and the diff renderer into its own venv. Then
the agents, found the way the engines find them:

* `acp`: Antigravity's ACP server, `agy-host acp install` (about 330 MB to
  download, about 1 GB unpacked), or `AGY_ACP_BIN`, `acp.bin`, `PATH`;
* `stream-json`: the `agy` CLI
  (https://antigravity.google/product/antigravity-cli) on `PATH`, or
  `AGY_BIN`, `stream_json.bin`;
* `agent` (optional): any ACP agent command in `AGY_HOST_LIVE_AGENT`.

**How to sign in.** The ACP server: `agy-host acp-auth --method
oauth-personal` (or another method: `agy-host acp-auth` lists them), then
`agy-host acp status`. The CLI: run `agy` once in a terminal. Another agent:
`agy-host acp-auth --agent "<command>"`. The ACP targets are checked with
`initialize` and `session/new`, which spend nothing; agy has no such check, so
its sign-in costs one short turn, said before it is spent.

**What it costs.** 21 tests, 33 agent turns per target: 66 for both Antigravity
engines plus 1 for agy's sign-in, 33 more with `AGY_HOST_LIVE_AGENT`. Most are
one-line prompts; items 6 and 17 cut a long answer off at a deadline, and 7
and 17 abort one. The run prints the count for the tests it selected before
the first one starts, and stops at the first quota or rate-limit error
(`live check stopped at ...`, exit 2). Items 5 and 18 wait on purpose (about
45 s and 90 s). The conversations land in the account's history; agy-host's
own config and state live in the test's folder; the stream-json engine
registers its bridge in agy's MCP config during its turns, as for any user.

**When it does nothing.** Without `AGY_HOST_LIVE=1`, with no agent found, or
none signed in, it prints one `live check skipped: ...` line saying why and
exits 0. It is not among the default sessions, and `bash .ci/run` never runs it.

**What runs live.** Every item but 16, asserted on what the agent answered
and what agy-host reported (a real agent's side of the wire is not recorded):
the prompt asks for what the fakes were scripted to do (say a code word back,
call a bridge tool, run `ls`). Item 6 checks the deadline only (a real agent
cannot be made to fall silent); 14 checks whichever of "mapped" and "absent"
the agent does; 10 compares Antigravity's catalog across both engines; 11 is
skipped for an agent that offers a single model. Item 16 stays on the fakes:
spawn, auth and protocol failures need fault injection, and a healthy,
signed-in agent cannot be made to fail that way without breaking the user's
install or sign-in.
"""


class QuotaStop(Exception):
    """The agent reported a quota or rate limit: stop the whole live check."""


def quota_message(*texts: str | None) -> str | None:
    """The first line of ``texts`` that names a quota or rate limit."""
    for text in texts:
        for line in (text or "").splitlines():
            if QUOTA.search(line):
                return line.strip()
    return None


def check_quota(run: Run) -> None:
    """Raise :class:`QuotaStop` when a failed command failed on a quota."""
    if run.returncode == 0:
        return
    found = quota_message(run.end.get("error"), run.done.get("error"), run.stderr[-4000:])
    if found:
        raise QuotaStop(found)


@dataclass
class Target:
    """One real agent the live check runs against."""

    name: str
    engine: str
    #: What it is, for the report: the binary or the command, and where it was found.
    label: str
    #: What points the engine at it (``AGY_ACP_BIN``, ``AGY_BIN``, ``AGY_HOST_AGENT``).
    env: dict[str, str]
    #: Antigravity itself (its catalog is compared across engines).
    antigravity: bool


@dataclass
class Discovery:
    targets: list[Target] = field(default_factory=list)
    #: Why each other target does not run, one line each.
    missing: list[str] = field(default_factory=list)
    #: Turns spent checking sign-in (agy has no token-free check).
    sign_in_turns: int = 0


class LiveAgent(Agent):
    """A real agent: what it received cannot be read back, only what it said."""

    def __init__(self, target: Target) -> None:
        super().__init__(env=dict(target.env), args=[], auth_message="")

    def _unobservable(self) -> list[str]:
        raise NotImplementedError("a real agent's side of the wire is not recorded; assert on what it answered")

    def prompts(self) -> list[str]:
        return self._unobservable()

    def user_texts(self) -> list[str]:
        return self._unobservable()

    def resumed(self) -> list[str]:
        return self._unobservable()

    def models(self) -> list[str]:
        return self._unobservable()

    def permission_answers(self) -> list[str]:
        return self._unobservable()


class LiveHome(Home):
    """The user's HOME (where the agents keep their sign-in), agy-host's own
    config and state private to the test, real-agent timers; every command
    that fails on a quota raises :class:`QuotaStop`."""

    def __init__(self, root: Path, target: Target) -> None:
        super().__init__(root, target.engine)
        self.target = target
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AGY_HOST_", "PYTEST"))}
        env.update(
            AGY_HOST_CONFIG=str(self.config_dir / "config.toml"),
            XDG_STATE_HOME=str(root / "state"),
            AGY_HOST_ENGINE=target.engine,
            AGY_HOST_TTY="none",
            AGY_HOST_KEEP_ALIVE_MINUTES="0",
            PYTHONPATH=self.env["PYTHONPATH"],
            PARITY_OTHER_LOG=str(self.other_log),
        )
        self.env = env
        self.config = {k: dict(v) for k, v in LIVE_CONFIG.items()}
        self.write_config()

    @property
    def config_dir(self) -> Path:
        return self.root / "config"

    def cli(
        self,
        *args: str,
        agent: Agent | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = COMMAND_SECONDS,
    ) -> Run:
        run = super().cli(*args, agent=agent, env=env, timeout=timeout)
        check_quota(run)
        return run

    def interrupt(self, args: Sequence[str], *, agent: Agent, when: Any, timeout: float = COMMAND_SECONDS) -> Run:
        run = super().interrupt(args, agent=agent, when=when, timeout=timeout)
        check_quota(run)
        return run


# ---------------------------------------------------------------------------
# finding the targets
# ---------------------------------------------------------------------------


def discover(env: Mapping[str, str], only: Sequence[str] = ()) -> Discovery:
    """The signed-in real agents here, each found the way its engine finds it."""
    from agy_host import config

    warnings: list[str] = []
    cfg = config.load(env=env, warn=warnings.append)
    found = Discovery()
    wanted = [t for t in TARGETS if not only or t in only]
    for name in wanted:
        probe = {"acp": _antigravity_acp, "stream-json": _agy_cli, "agent": _named_agent}[name]
        target, why = probe(cfg, env, found)
        if target is not None:
            found.targets.append(target)
        else:
            found.missing.append(f"{name}: {why}")
    return found


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _signed_in(spec: Any, cfg: Any, env: Mapping[str, str]) -> str:
    """``""`` when ``session/new`` works on ``spec`` (no tokens spent), else why not."""
    import trio

    from agy_host_acp.probe import check_agent

    check = trio.run(check_agent, spec, cfg, env)
    if check.auth == "signed-in":
        return ""
    if check.auth == "sign-in-required":
        return f"not signed in ({check.auth_detail[:160]})"
    return f"does not start ({check.error[:200]})"


def _antigravity_acp(cfg: Any, env: Mapping[str, str], _found: Discovery) -> tuple[Target | None, str]:
    if not _installed("agy_host_acp"):
        return None, "the ACP engine (agy-host-acp) is not installed"
    from agy_host_acp.profiles import agy_spec, resolve_agy_binary

    binary, tried, source = resolve_agy_binary(cfg, env)
    if binary is None:
        paths = "; ".join(f"{p.source}: {p.path} ({p.result})" for p in tried)
        return None, f"Antigravity's ACP server not found (tried {paths}); `agy-host acp install`"
    problem = _signed_in(agy_spec(binary, tried, source, env), cfg, env)
    if problem:
        return None, f"{binary} {problem}; `agy-host acp-auth`"
    label = f"Antigravity's ACP server {binary} ({source})"
    return Target("acp", "acp", label, {"AGY_ACP_BIN": str(binary)}, antigravity=True), ""


def _named_agent(cfg: Any, env: Mapping[str, str], _found: Discovery) -> tuple[Target | None, str]:
    command = env.get(AGENT_ENV, "").strip()
    if not command:
        return None, f"${AGENT_ENV} is not set"
    if not _installed("agy_host_acp"):
        return None, "the ACP engine (agy-host-acp) is not installed"
    from agy_host_acp.profiles import AgentNotFound, resolve_agent

    try:
        spec = resolve_agent(cfg, env, command)
    except AgentNotFound as exc:
        return None, str(exc)
    problem = _signed_in(spec, cfg, env)
    if problem:
        return None, f"{command} {problem}; `agy-host acp-auth --agent {shlex.quote(command)}`"
    return Target("agent", "acp", f"{AGENT_ENV}={command}", {"AGY_HOST_AGENT": command}, antigravity=False), ""


#: The stream-json sign-in check's prompt: the shortest real turn.
PONG = "Reply with exactly one word: pong"


def _agy_cli(cfg: Any, env: Mapping[str, str], found: Discovery) -> tuple[Target | None, str]:
    if not _installed("agy_host_stream_json"):
        return None, "the stream-json engine (agy-host-stream-json) is not installed"
    from agy_host_stream_json.config import SECTION, narrow, resolve_bin

    binary = resolve_bin(narrow(cfg.section(SECTION), lambda _w: None), env)
    if not binary.found:
        return None, f"agy not found ({binary.source}: {binary.value})"
    target = Target("stream-json", "stream-json", f"agy {binary.command} ({binary.source})", {}, antigravity=True)
    target.env["AGY_BIN"] = binary.command
    # agy has no sign-in check that spends nothing: one short turn, counted.
    found.sign_in_turns += 1
    with tempfile.TemporaryDirectory(prefix="agy-host-live-") as tmp:
        home = LiveHome(Path(tmp), target)
        run = home.run("sign-in-check", PONG, agent=LiveAgent(target))
    if run.end.get("error_kind") == "auth":
        return None, f"{binary.command} is not signed in: run `agy` once to sign in"
    return target, ""


__all__ = [
    "AGENT_ENV",
    "LIVE_ENV",
    "LIVE_SECTION",
    "PONG",
    "TARGETS",
    "Discovery",
    "LiveAgent",
    "LiveHome",
    "QuotaStop",
    "Target",
    "check_quota",
    "discover",
    "quota_message",
]
