"""What the parity suite needs to drive one engine the way a user does.

The suite (``test_parity.py``) is written once, in engine-agnostic terms: a
:class:`Script` says what the agent does turn by turn in *abstract* steps
(say, stream a cumulative resend, sleep, hang, call a bridge tool, ask for
permission, report usage, fail); the user side is the real ``agy-host`` CLI
in a subprocess with ``--format json``. A :class:`Rig` per engine knows the
one thing that differs: how to turn a script into that engine's fake agent
and point the engine at it. Both rigs point their engine at a fake playing
*Antigravity*, through the same variables a user would set
(``AGY_ACP_BIN`` for the ACP server, ``AGY_BIN`` for the agy CLI), so the
engine takes its Antigravity paths (model slugs, modes, usage) rather than
a generic agent's.

An :class:`Agent` reads back what the fake received, normalised across the
dialects (the prompts as text, which conversation each start resumed, the
model of each turn), so the suite can assert on the wire without knowing
which wire it is.
"""

from __future__ import annotations

import abc
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

# Antigravity's catalog as the fake agy lists it (``agy models``); the ACP rig
# gives its fake the same models, as the ACP server's ``model`` option.
from agy_host.testing.agy_cli.agent import MODELS
from agy_host.testing.isolation import install_plugin, isolated_env
from agy_host.testing.store import edit_bindings, read_bindings

#: The environment variable that names the engine(s) to run (comma separated).
ENGINE_ENV = "AGY_HOST_PARITY_ENGINE"
#: ``1``: run the suite's warm subset with warm agents on (``--warm``): every
#: command after a session's first runs on the agent the keeper kept.
WARM_ENV = "AGY_HOST_PARITY_WARM"
#: The throw-away second engine the suite switches to (items 9 and 12).
OTHER_ENGINE = "parity-other"

Step = dict[str, Any]
#: Between the parts of a prompt that stream-json sends inline (agy's stdin
#: takes one text) and ACP sends as separate blocks.
INLINE_SEPARATOR = "\n\n---\n\n"


@dataclass
class Script:
    """What the agent does, turn by turn of its conversation (the last list
    repeats), in abstract steps:

    ``{"say": text}``                 one message
    ``{"resend": [a, a + b, ...]}``   one message streamed as cumulative resends
    ``{"sleep": s}`` ``{"hang": True}`` ``{"tick": {"every": s, "text": t}}``
    ``{"echo": True}``                say the prompt back
    ``{"mcp_call": {...}}``           call a bridge tool (the fakes' common step)
    ``{"usage": {"input": n, "output": m}}``   report this turn's usage
    ``{"permission": True}``          ask to run a command that needs permission;
                                      allowed -> "PERMITTED", denied -> "DENIED"
    ``{"fail": message}``             end the turn with the agent's own error
    ``{"crash": {"code": n, "stderr": t}}``  exit mid-turn
    """

    turns: list[list[Step]]
    #: False: the agent is not signed in (answers every start with its auth error).
    signed_in: bool = True
    #: False: the agent's binary cannot be started.
    installed: bool = True
    #: False: the agent reports no usage at all (the ACP server never does
    #: unless a ``usage`` step says so; agy's wire then carries no counts).
    reports_usage: bool = True


class Run:
    """One finished ``agy-host`` command: its ``--format json`` events."""

    def __init__(self, args: Sequence[str], returncode: int, stdout: str, stderr: str, seconds: float) -> None:
        self.args = list(args)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.seconds = seconds
        self.events: list[dict[str, Any]] = []
        for line in stdout.splitlines():
            if line.strip().startswith("{"):
                try:
                    self.events.append(json.loads(line))
                except ValueError:
                    pass

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind]

    @property
    def text(self) -> str:
        return "".join(e["delta"] for e in self.of("text"))

    @property
    def done(self) -> dict[str, Any]:
        [done] = self.of("done") or [{}]
        return done

    @property
    def end(self) -> dict[str, Any]:
        """The last ``turn_end`` (a run may carry follow-up turns)."""
        ends = self.of("turn_end")
        return ends[-1] if ends else {}

    def json(self) -> Any:
        return json.loads(self.stdout)

    def __repr__(self) -> str:
        return (
            f"agy-host {shlex.join(self.args)} -> exit {self.returncode} in {self.seconds:.1f}s\n"
            f"--- stdout ---\n{self.stdout[-4000:]}\n--- stderr ---\n{self.stderr[-3000:]}"
        )


# ---------------------------------------------------------------------------
# the user's side: an isolated home and the real CLI
# ---------------------------------------------------------------------------

KIT_MODULE = '''
"""Installed only for the parity suite: host tools for bridge round trips,
and a second engine to switch to (it answers in-process and logs every
request it got to $PARITY_OTHER_LOG)."""
import contextlib
import itertools
import json
import os

import trio

from agy_host import hookimpl
from agy_host.engine.base import Engine
from agy_host.contract.events import OutcomeActivity, TextActivity
from agy_host.contract.prompt import prompt_text
from agy_host.contract.tools import HostTool, ToolResult
from agy_host.engine.driver import DriverSnapshot, TurnHandle


async def echo(args):
    return ToolResult(text="echo " + json.dumps(args, sort_keys=True))


async def slow(args):
    await trio.sleep(float(args.get("seconds", 1)))
    return ToolResult(text="slow done after " + str(args.get("seconds")))


@hookimpl
def agy_host_register_tools(register):
    schema = {"type": "object", "properties": {}}
    register(HostTool(name="host_echo", description="echo the arguments", input_schema=schema, call=echo))
    register(HostTool(name="slow_tool", description="take a while", input_schema=schema, call=slow))


class OtherDriver:
    engine_name = "parity-other"

    def __init__(self, engine, nursery):
        self.engine = engine
        self.nursery = nursery

    async def run(self, request):
        handle = TurnHandle()
        cid = request.conversation_id or "other-" + os.urandom(4).hex()
        text = prompt_text(request.prompt)
        log = self.engine.ctx.env.get("PARITY_OTHER_LOG")
        if log:
            with open(log, "a") as f:
                f.write(json.dumps({"conversation_id": request.conversation_id, "prompt": text}) + "\\n")
        answer = "other engine answer: " + text.splitlines()[-1]
        handle.emit(TextActivity(delta=answer))
        handle.finish(OutcomeActivity(status="ok", stop_reason="stop", response=answer, conversation_id=cid))
        return handle

    def reentry(self):
        return None

    def kick_idle(self):
        pass

    def snapshot(self):
        return DriverSnapshot(engine="parity-other", state="ready", stats={"turns": 0}, lifecycle=[])

    async def aclose(self):
        pass


class OtherEngine(Engine):
    ENGINE_NAME = "parity-other"
    DESCRIPTION = "the parity suite's second engine"
    # Without a suffix its bindings would share stream-json's bare keys.
    STORE_SUFFIX = "@parity-other"

    @contextlib.asynccontextmanager
    async def _open(self):
        async with trio.open_nursery() as nursery:
            yield OtherDriver(self, nursery)

    def open_driver(self):
        return self._open()
'''


def install_kit(site: Path) -> None:
    """The kit as a real installed distribution on ``PYTHONPATH``: the host
    finds its tools and its engine through entry points, as any plugin's."""
    entry_points = {"agy_host": {"agy_parity_kit": "agy_parity_kit"}}
    entry_points["agy_host.engines"] = {OTHER_ENGINE: "agy_parity_kit:OtherEngine"}
    install_plugin(site, "agy_parity_kit", KIT_MODULE, entry_points=entry_points)


#: Small timers for every run (minutes in the config file; the suite's own
#: runs override them where a test is about a timer).
BASE_CONFIG = {
    "turn": {"timeout_minutes": 1.0, "inactivity_minutes": 0.5, "permission_timeout_seconds": 5.0},
    "acp": {"cancel_grace_seconds": 1.0, "kill_grace_seconds": 0.3, "initialize_timeout_seconds": 15.0},
    "stream_json": {"kill_grace_seconds": 0.3, "exit_grace_seconds": 2.0},
    "bridge": {"escalate_after_seconds": 20.0},
}


def _toml(table: Mapping[str, Mapping[str, Any]]) -> str:
    lines: list[str] = []
    for section, values in table.items():
        lines.append(f"[{section}]")
        lines.extend(f"{key} = {json.dumps(value)}" for key, value in values.items())
        lines.append("")
    return "\n".join(lines)


class Home:
    """A private HOME with XDG dirs and config, where ``agy-host`` runs;
    ``warm``: with warm agents on (5 minutes), its keeper stopped by :meth:`close`."""

    def __init__(self, root: Path, engine: str, *, warm: bool = False) -> None:
        self.root = root
        self.engine = engine
        self.warm = warm
        self.home = root / "home"
        self.cwd = root / "project"
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.site = root / "site"
        install_kit(self.site)
        self.other_log = root / "other-engine.log"
        self.env = isolated_env(
            self.home,
            AGY_HOST_ENGINE=engine,
            AGY_HOST_TTY="none",
            PYTHONPATH=os.pathsep.join([str(self.site), *filter(None, [os.environ.get("PYTHONPATH")])]),
            PARITY_OTHER_LOG=str(self.other_log),
            AGY_HOST_KEEP_ALIVE_MINUTES="5" if warm else "0",
        )
        self.config: dict[str, dict[str, Any]] = {k: dict(v) for k, v in BASE_CONFIG.items()}
        self.write_config()

    def close(self) -> None:
        """Stop this home's keeper and its warm agents (nothing runs on after a test)."""
        if self.warm:
            from warm_kit import stop_keeper

            stop_keeper(self.argv(), self.env)

    @property
    def config_dir(self) -> Path:
        return self.home / ".config" / "agy-host"

    def configure(self, **sections: Mapping[str, Any]) -> None:
        """Merge ``section={key: value}`` into config.toml."""
        for name, values in sections.items():
            self.config.setdefault(name, {}).update(values)
        self.write_config()

    def write_config(self) -> None:
        self.config_dir.mkdir(parents=True, exist_ok=True)
        (self.config_dir / "config.toml").write_text(_toml(self.config))

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "agy_host.cli.main", *args]

    def environ(self, agent: Agent | None, extra: Mapping[str, str] | None) -> dict[str, str]:
        env = dict(self.env)
        if agent is not None:
            env.update(agent.env)
        env.update(extra or {})
        return env

    def cli(
        self,
        *args: str,
        agent: Agent | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 60.0,
    ) -> Run:
        """``agy-host ARGS`` to the end (the agent's own extra arguments first)."""
        full = [*args[:1], *(agent.args if agent else []), *args[1:]]
        started = time.monotonic()
        proc = subprocess.run(
            self.argv(*full),
            env=self.environ(agent, env),
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        return Run(full, proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started)

    def rebind(self, session: str, conversation_id: str) -> None:
        """Point ``session``'s binding (whatever the engine's key) at another
        agent conversation, as if the agent had lost the one it had."""
        state = self.home / ".local" / "state" / "agy-host"
        keys = [k for k in read_bindings(state) if k == session or k.startswith(f"{session}@")]
        assert keys, f"no binding for {session!r} in {state}: {sorted(read_bindings(state))}"

        def point(bindings: dict[str, dict[str, Any]]) -> None:
            for key in keys:
                if key in bindings:
                    bindings[key]["conversation_id"] = conversation_id

        edit_bindings(state, point)

    def run(self, session: str, prompt: str, *args: str, agent: Agent | None = None, **kw: Any) -> Run:
        """One turn: ``agy-host run --format json --session SESSION ARGS PROMPT``."""
        return self.cli("run", "--format", "json", "--session", session, *args, prompt, agent=agent, **kw)

    def interrupt(
        self,
        args: Sequence[str],
        *,
        agent: Agent,
        when: Any,
        timeout: float = 60.0,
    ) -> Run:
        """Start ``agy-host ARGS``, press Ctrl-C (SIGINT) once ``when(lines_so_far)``
        is true, and wait for the command to end."""
        full = [*args[:1], *agent.args, *args[1:]]
        started = time.monotonic()
        proc = subprocess.Popen(
            self.argv(*full),
            env=self.environ(agent, None),
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        os.set_blocking(fd, False)
        seen = b""
        sent = False
        try:
            deadline = started + timeout
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    seen += os.read(fd, 65536)
                except BlockingIOError:
                    pass
                if when(seen.decode(errors="replace")):
                    proc.send_signal(signal.SIGINT)
                    sent = True
                    break
                time.sleep(0.02)
            os.set_blocking(fd, True)
            out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert sent, f"the condition for Ctrl-C never held; output so far:\n{seen!r}"
        return Run(full, proc.returncode, seen.decode(errors="replace") + out, err, time.monotonic() - started)

    def other_requests(self) -> list[dict[str, Any]]:
        """What the second engine was asked, in order."""
        if not self.other_log.exists():
            return []
        return [json.loads(line) for line in self.other_log.read_text().splitlines() if line.strip()]


# ---------------------------------------------------------------------------
# the agents and the rigs
# ---------------------------------------------------------------------------


@dataclass
class Agent(abc.ABC):
    """One fake agent, pointed at by :attr:`env` / :attr:`args`."""

    env: dict[str, str]
    args: list[str] = field(default_factory=list)
    #: What the agent says when it refuses a start that is not signed in.
    auth_message: str = ""

    @abc.abstractmethod
    def prompts(self) -> list[str]:
        """The text of every prompt the agent received, in order; ACP's blocks
        (text, and resources such as the digest) are joined the way the
        stream-json engine inlines them (:data:`INLINE_SEPARATOR`), so one
        prompt reads the same from either wire."""

    @abc.abstractmethod
    def user_texts(self) -> list[str]:
        """The text each prompt opened with, the one an agent reads a slash
        command from: ACP's first block (when it is text), agy's stdin line,
        the harness's user input."""

    @abc.abstractmethod
    def resumed(self) -> list[str]:
        """The conversation id each agent start resumed (``session/load``,
        ``--conversation``), in order."""

    @abc.abstractmethod
    def models(self) -> list[str]:
        """The model each prompt ran on, as Antigravity's slug
        (``gemini-3.8-flash-low``), ``""`` for the agent's default."""

    @abc.abstractmethod
    def permission_answers(self) -> list[str]:
        """How each permission the agent needed was settled: ``allowed``,
        ``denied``, ``cancelled``."""


class Rig(abc.ABC):
    """How to point one engine at a fake agent that plays a :class:`Script`."""

    engine: ClassVar[str]

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.count = 0

    @abc.abstractmethod
    def agent(self, script: Script) -> Agent:
        """A fresh fake agent playing ``script``."""

    def wrapper(self, name: str, command: list[str]) -> Path:
        """An executable named ``name`` (in a folder of its own) that runs
        ``command``, dropping the arguments the engine passes (they are
        recorded by the fake's own log where they matter)."""
        self.count += 1
        folder = self.workdir / f"bin-{self.count}"
        folder.mkdir(parents=True)
        path = folder / name
        path.write_text(f"#!/bin/sh\nexec {shlex.join(command)}\n")
        path.chmod(0o755)
        return path


# -- ACP ----------------------------------------------------------------------


def _acp_catalog() -> dict[str, Any]:
    current = MODELS[0][0]
    options = [{"value": m[0], "name": m[1], "description": m[1]} for m in MODELS]
    modes = [
        {"value": "default", "name": "Default"},
        {"value": "auto_edit", "name": "Auto Edit"},
        {"value": "yolo", "name": "YOLO"},
        {"value": "accept_edits", "name": "Accept Edits"},
    ]
    return {
        "models": {"availableModels": [{"modelId": m[0], "name": m[1]} for m in MODELS], "currentModelId": current},
        "config_options": [
            {
                "id": "model",
                "name": "Model",
                "category": "model",
                "type": "select",
                "currentValue": current,
                "options": options,
            },
            {
                "id": "mode",
                "name": "Mode",
                "category": "mode",
                "type": "select",
                "currentValue": "default",
                "options": modes,
            },
        ],
    }


class AcpAgent(Agent):
    def __init__(self, fake: Any, env: dict[str, str], args: list[str], auth_message: str) -> None:
        super().__init__(env=env, args=args, auth_message=auth_message)
        self.fake = fake

    def prompts(self) -> list[str]:
        out = []
        for msg in self.fake.requests("session/prompt"):
            parts = []
            for block in msg["params"]["prompt"]:
                if block.get("type") == "text":
                    parts.append(block["text"])
                elif block.get("type") == "resource":
                    parts.append(block["resource"].get("text", ""))
            out.append(INLINE_SEPARATOR.join(parts))
        return out

    def user_texts(self) -> list[str]:
        firsts = [(m["params"]["prompt"] or [{}])[0] for m in self.fake.requests("session/prompt")]
        return [str(b.get("text", "")) if b.get("type") == "text" else "" for b in firsts]

    def resumed(self) -> list[str]:
        return [m["params"]["sessionId"] for m in self.fake.requests("session/load")]

    def models(self) -> list[str]:
        """Per prompt: the last model set before it (each process starts on the default)."""
        out: list[str] = []
        current = ""
        for msg in self.fake.received():
            method = msg.get("method")
            if method == "initialize":
                current = ""
            elif method == "session/set_config_option" and msg["params"].get("configId") == "model":
                current = str(msg["params"]["value"])
            elif method == "session/prompt":
                out.append(current)
        return out

    def permission_answers(self) -> list[str]:
        answers = []
        for note in self.fake.events("request-answer"):
            if note.get("method") != "session/request_permission":
                continue
            first = (note.get("matched") or ["error"])[0]
            answers.append({"allow": "allowed", "deny": "denied"}.get(first, "cancelled"))
        return answers


class AcpRig(Rig):
    """The ACP engine, pointed at the fake ACP agent as Antigravity's ACP
    server (``AGY_ACP_BIN``); prompts are counted across agent processes
    (``prompt_counter``), so a restarted agent plays the conversation's next
    turn, as agy's conversations do."""

    engine: ClassVar[str] = "acp"

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir)
        self.fakes: list[Any] = []

    def sent_frames(self) -> list[dict[str, Any]]:
        """Every JSON-RPC frame agy-host sent to this rig's agents (for the
        schema check that runs after each ACP test)."""
        return [m for fake in self.fakes for m in fake.received() if "jsonrpc" in m]

    def translate(self, steps: list[Step]) -> list[Step]:
        out: list[Step] = []
        said = ""
        for step in steps:
            ((kind, value),) = step.items()
            if kind == "say":
                out.append({"chunk": value})
                said += value
            elif kind == "resend":
                # the first piece is news; each later one resends the whole answer
                # so far (the turn's, on ACP), not only this message
                for i, piece in enumerate(value):
                    out.append({"chunk": piece if i == 0 else said + piece})
                said += value[-1]
            elif kind in ("sleep", "hang", "mcp_call"):
                out.append(step)
            elif kind == "tick":
                every, text = float(value.get("every", 0.1)), str(value.get("text", "tick"))
                out.append({"repeat": {"steps": [{"sleep": every}, {"chunk": text}]}})
            elif kind == "echo":
                out.append({"echo": {"resources": True}})
            elif kind == "usage":
                total = int(value["input"]) + int(value["output"])
                usage = {"inputTokens": value["input"], "outputTokens": value["output"], "totalTokens": total}
                out.append({"prompt_usage": usage})
            elif kind == "permission":
                tool_call = {"toolCallId": "parity-perm-1", "title": "Run ls", "kind": "execute", "status": "pending"}
                branches = {
                    "allow": [{"chunk": "PERMITTED"}],
                    "reject": [{"chunk": "DENIED"}],
                    "cancelled": [{"chunk": "DENIED"}],
                    "error": [{"chunk": "DENIED"}],
                }
                out.append({"permission": {"tool_call": tool_call, "branches": branches}})
            elif kind == "fail":
                out.append({"error": {"code": -32603, "message": value}})
            elif kind == "crash":
                out.append({"crash": value})
            else:
                raise ValueError(f"unknown abstract step {kind!r}")
        return out

    def agent(self, script: Script) -> AcpAgent:
        from agy_host.testing.agents import fake_acp_agent_command

        self.count += 1
        agents = self.workdir / "agents"
        scenario: dict[str, Any] = {
            "agent_info": {"name": "antigravity", "title": "Antigravity (fake)", "version": "1.3.0"},
            "session_id": "generate",
            "prompts": [self.translate(turn) for turn in script.turns],
            "prompt_counter": str(agents / f"prompt-counter-{self.count}"),
            **_acp_catalog(),
        }
        auth = "fake agy: not signed in; run `agy-host acp-auth` (parity)"
        if not script.signed_in:
            scenario |= {"auth_required": True, "auth_message": auth, "authenticate": "fails"}
        fake = fake_acp_agent_command(scenario, workdir=agents)
        self.fakes.append(fake)
        binary = self.wrapper("agy", fake.command)
        if not script.installed:
            # An Antigravity binary that exists but cannot start: a spawn failure.
            # (A missing AGY_ACP_BIN is refused before any spawn, naming the path.)
            binary = self.workdir / "not-installed" / "agy"
            binary.parent.mkdir(parents=True, exist_ok=True)
            binary.write_text("#!/nonexistent/parity/interpreter\n")
            binary.chmod(0o755)
        # AGY_ACP_BIN is what a user sets; without --agent the engine resolves it as Antigravity.
        return AcpAgent(fake, {"AGY_ACP_BIN": str(binary)}, [], auth)


# -- stream-json -------------------------------------------------------------------


class StreamJsonAgent(Agent):
    def __init__(self, fake: Any, env: dict[str, str], auth_message: str) -> None:
        super().__init__(env=env, args=[], auth_message=auth_message)
        self.fake = fake

    def prompts(self) -> list[str]:
        return [str(m.get("message", {}).get("content", "")) for m in self.fake.received()]

    def user_texts(self) -> list[str]:
        return self.prompts()  # one line per prompt: the whole of it is the user's

    def _flag(self, argv: list[str], name: str) -> str:
        from agy_host.testing.agy_cli.agent import parse_flags

        flags, _ = parse_flags(argv)
        values = flags.get(name) or [""]
        return values[-1]

    def resumed(self) -> list[str]:
        return [c for c in (self._flag(a, "conversation") for a in self.fake.argvs()) if c]

    def models(self) -> list[str]:
        """Per prompt: the model and effort of the process that got it."""
        out: list[str] = []
        current = ""
        for entry in self.fake.entries():
            if entry.get("_fake") == "argv":
                model, effort = self._flag(entry["argv"], "model"), self._flag(entry["argv"], "effort")
                current = f"{model}-{effort}" if model and effort and not model.endswith(f"-{effort}") else model
            elif "_fake" not in entry:
                out.append(current)
        return out

    def permission_answers(self) -> list[str]:
        """agy decides at start-up (``--dangerously-skip-permissions`` or not)
        and never asks: the answer for each prompt is the flag of the process
        that got it."""
        answers = []
        skip = False
        for entry in self.fake.entries():
            if entry.get("_fake") == "argv":
                skip = "--dangerously-skip-permissions" in entry["argv"]
            elif "_fake" not in entry:
                answers.append("allowed" if skip else "denied")
        return answers


class StreamJsonRig(Rig):
    """The stream-json engine, pointed at the fake agy CLI (``AGY_BIN``)."""

    engine: ClassVar[str] = "stream-json"

    def translate(self, steps: list[Step], *, usage_reported: bool = True) -> list[Step]:
        out: list[Step] = []
        said: list[str] = []
        custom_response = False
        for step in steps:
            ((kind, value),) = step.items()
            if kind == "say" and not usage_reported:
                # a step without usage: the message as agy's wire has it, minus the counts
                fields = {"state": "DONE", "step_type": "agent_response", "text_delta": value}
                out.append({"step": fields})
                said.append(value)
                custom_response = True
            elif kind == "say":
                out.append({"say": [value]})
                said.append(value)
            elif kind == "resend":
                # agy resends within one step: the step's text so far
                out.append({"say": list(value)})
                said.append(value[-1])
                custom_response = True
            elif kind in ("sleep", "hang", "tick", "echo", "mcp_call"):
                out.append(step)
            elif kind == "usage":
                # agy reports usage on the step that used it: the message before
                usage = {"input_tokens": value["input"], "output_tokens": value["output"]}
                if out and "say" in out[-1]:
                    out[-1] = {**out[-1], "usage": usage}
                else:
                    out.append({"say": [""], "usage": usage})
            elif kind == "permission":
                out.append({"tool": {"name": "run_command", "params": {"CommandLine": "ls"}, "output": "a.txt"}})
                out.append({"say": ["TOOL-STEP-DONE"]})
            elif kind == "fail":
                out.append({"result": {"status": "ERROR", "error": value}})
            elif kind == "crash":
                out.append({"exit": value})
            else:
                raise ValueError(f"unknown abstract step {kind!r}")
        if custom_response:
            result: dict[str, Any] = {"response": "".join(said)}
            if not usage_reported:
                result["usage"] = None
            out.append({"result": result})
        return out

    def agent(self, script: Script) -> StreamJsonAgent:
        from agy_host.testing.agy_cli.agent import make_fake_agy

        turns = [self.translate(turn, usage_reported=script.reports_usage) for turn in script.turns]
        scenario: dict[str, Any] = {"turns": turns, "models": MODELS}
        if not script.signed_in:
            scenario["signed_in"] = False
        fake = make_fake_agy(self.workdir / "agy", scenario)
        binary = str(fake.bin) if script.installed else str(self.workdir / "not-installed" / "agy")
        auth = "Run 'agy' to log in, then retry."
        return StreamJsonAgent(fake, {"AGY_BIN": binary}, auth)


# -- harness -------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
#: Tools the bridge answers itself: on the harness they are MCP tools (the
#: harness's lazy ``call_mcp_tool``); every other host tool is declared in-process.
BRIDGE_ONLY = {"activate_skill", "bridge_poll_result"}
#: What the scripted model API answers a request with a wrong key.
BAD_KEY_MESSAGE = "API key not valid. Please pass a valid API key."
_DENIED_OUTPUT = ("denied", "rejected", "not allowed")


def harness_binary() -> str:
    """The real localharness: ``$ANTIGRAVITY_HARNESS_PATH``, else the repository's
    cache, provisioned from the pinned wheel on first use."""
    given = os.environ.get("ANTIGRAVITY_HARNESS_PATH", "").strip()
    if given:
        return given
    cache = REPO / ".cache" / "harness"
    binary = cache / "current" / "localharness"
    if not binary.is_file():
        proc = subprocess.run(
            [sys.executable, "-m", "agy_host_harness.install", "--dir", str(cache), "--if-missing"],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"provisioning the pinned harness failed:\n{proc.stdout}\n{proc.stderr}")
    return str(binary)


class HarnessAgent(Agent):
    """What the real harness was told (the engine's frame recording) and what
    it asked the scripted model (the model API's request log)."""

    def __init__(self, model: Any, record: Path, env: dict[str, str], auth_message: str) -> None:
        super().__init__(env=env, args=[], auth_message=auth_message)
        self.model = model
        self.record = record

    def _frames(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines() if line.strip()]

    def _sent(self) -> list[dict[str, Any]]:
        return [f["frame"] for f in self._frames() if f["dir"] == "out"]

    def prompts(self) -> list[str]:
        """Each user input as text; a new conversation's first one is led by
        the system block its config carried (sent once, at its start)."""
        out: list[str] = []
        system = ""
        for frame in self._sent():
            config = frame.get("config")
            if config is not None:
                system = ""
                if config.get("sessionContinuationMode") == "CREATE_ONLY":
                    sections = config.get("systemInstructions", {}).get("appended", {}).get("appendedSections", [])
                    system = "".join(str(s.get("content", "")) for s in sections)
            elif "userInput" in frame:
                parts = [str(p["text"]) for p in frame["userInput"]["parts"] if "text" in p]
                out.append(INLINE_SEPARATOR.join([system, *parts] if system else parts))
                system = ""
        return out

    def user_texts(self) -> list[str]:
        return [
            INLINE_SEPARATOR.join(str(p["text"]) for p in f["userInput"]["parts"] if "text" in p)
            for f in self._sent()
            if "userInput" in f
        ]

    def resumed(self) -> list[str]:
        return [
            str(f["config"]["cascadeId"])
            for f in self._sent()
            if "config" in f and f["config"].get("sessionContinuationMode") == "RESUME"
        ]

    def models(self) -> list[str]:
        out: list[str] = []
        current = ""
        for frame in self._sent():
            if "config" in frame:
                model = frame["config"]["models"][0]
                level = model.get("geminiApiEndpoint", {}).get("options", {}).get("thinkingLevel")
                current = f"{model['name']}-{level}" if level else str(model["name"])
            elif "userInput" in frame:
                out.append(current)
        return out

    def permission_answers(self) -> list[str]:
        """How each command the model asked for was settled, from the
        function responses the harness sent the model (once per call)."""
        seen: dict[str, str] = {}
        for request in self.model.requests():
            for content in request.get("body", {}).get("contents", []):
                for part in content.get("parts", []):
                    response = part.get("functionResponse") if isinstance(part, dict) else None
                    if not response or response.get("name") != "run_command":
                        continue
                    text = json.dumps(response.get("response", {})).lower()
                    denied = any(word in text for word in _DENIED_OUTPUT)
                    seen.setdefault(str(response.get("id")), "denied" if denied else "allowed")
        return list(seen.values())


class HarnessRig(Rig):
    """The harness engine on the real ``localharness`` (the pinned wheel's),
    its model replaced by the kit's scripted model API: a script's turns are
    the model's replies, one list per user request; a bridge tool call ends a
    model reply and the next one reports the tool's result."""

    engine: ClassVar[str] = "harness"

    def translate(self, steps: list[Step]) -> list[list[Step]]:
        replies: list[list[Step]] = [[]]
        for step in steps:
            ((kind, value),) = step.items()
            reply = replies[-1]
            if kind == "say":
                reply.append({"text": value})
            elif kind == "resend":
                # the harness streams deltas it computes itself: the model sends the new text
                pieces = [value[0]] + [value[i][len(value[i - 1]) :] for i in range(1, len(value))]
                reply.append({"text": pieces})
            elif kind in ("sleep", "hang"):
                reply.append(step)
            elif kind == "tick":
                every, text = float(value.get("every", 0.1)), str(value.get("text", "tick"))
                reply.extend(e for _ in range(3000) for e in ({"sleep": every}, {"text": text}))
            elif kind == "echo":
                reply.append({"echo": True})
            elif kind == "usage":
                reply.append({"usage": {"input": value["input"], "output": value["output"]}})
            elif kind == "mcp_call":
                tool, args = str(value["tool"]), dict(value.get("arguments", {}))
                if tool in BRIDGE_ONLY:
                    call = {
                        "name": "call_mcp_tool",
                        "args": {"ServerName": "agy-host-bridge", "ToolName": tool, "Arguments": args},
                    }
                else:
                    call = {"name": tool, "args": args}
                reply.append({"call": call})
                replies.append([{"tool_result": True}])
            elif kind == "permission":
                reply.append(
                    {"call": {"name": "run_command", "args": {"CommandLine": "ls", "WaitMsBeforeAsync": 5000}}}
                )
                replies.append([{"verdict": True}])
            elif kind == "fail":
                replies[-1] = [{"error": {"status": 400, "message": value}}]
            else:
                raise ValueError(f"the harness rig has no form for abstract step {kind!r}")
        return replies

    def agent(self, script: Script) -> HarnessAgent:
        from agy_host.testing.models.api import ModelApiProcess

        self.count += 1
        folder = self.workdir / f"model-{self.count}"
        turns = [self.translate(turn) for turn in script.turns]
        if not script.reports_usage:
            turns = [[[e for e in reply if "usage" not in e] for reply in turn] for turn in turns]
        model = ModelApiProcess(folder, {"turns": turns}, api_key=None if script.signed_in else "the-right-key")
        binary = harness_binary()
        if not script.installed:
            binary = str(self.workdir / "not-installed" / "localharness")
            Path(binary).parent.mkdir(parents=True, exist_ok=True)
            Path(binary).write_text("#!/nonexistent/parity/interpreter\n")
            Path(binary).chmod(0o755)
        record = folder / "frames.jsonl"
        env = {
            "ANTIGRAVITY_HARNESS_PATH": binary,
            "GOOGLE_GEMINI_BASE_URL": model.url,
            "GEMINI_API_KEY": "parity-key",
            "AGY_HOST_HARNESS_MODELS": ",".join(m[0] for m in MODELS),
            "AGY_HOST_HARNESS_RECORD": str(record),
        }
        self.models.append(model)
        return HarnessAgent(model, record, env, BAD_KEY_MESSAGE)

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir)
        self.models: list[Any] = []

    def close(self) -> None:
        for model in self.models:
            model.close()


RIGS: dict[str, type[Rig]] = {rig.engine: rig for rig in (AcpRig, StreamJsonRig, HarnessRig)}


def installed_engines() -> list[str]:
    """Engines installed in this environment (entry points), ours first."""
    from importlib import metadata

    names = {ep.name for ep in metadata.entry_points(group="agy_host.engines")}
    return sorted(names & set(RIGS))
