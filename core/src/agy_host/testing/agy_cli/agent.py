"""A fake ``agy`` CLI for tests: the stream-json dialect, scripted by a scenario.

Run ``python -m agy_host.testing.agy_cli.agent [agy flags]``; tests use the
wrapper script :func:`make_fake_agy` writes (the ``fake_agy`` fixture) as
``AGY_BIN``. Flags are parsed as agy's Go ``flag`` package does (``--f v``,
``--f=v``; exit 2 on a bad one) and honoured: ``--model``/``--effort`` are
checked against the catalog (exit 1, agy's recorded wording),
``--dangerously-skip-permissions`` lets tools that need permission run (else
they are denied), ``--conversation``/``--continue`` resume (step indices,
turns and usage keep counting, in ``--fake-state``), ``--print-timeout`` cuts
a slow turn as the scenario's ``build`` does, ``--mode plan`` with
``--disable-slash-commands`` warns. ``agy models`` prints ``id<TAB>name`` rows.

Fake options (before or among agy's; env ``AGY_FAKE_SCENARIO`` / ``_LOG`` /
``_STATE``): ``--fake-scenario NAME|PATH|JSON``, ``--fake-log PATH`` (every
stdin line verbatim, plus ``{"_fake": "argv"|"stdin-eof"|"exit"|"sigterm"}``
notes), ``--fake-state DIR``, ``--fake-set KEY=JSON``.

Scenario keys: ``turns`` (a list of step lists, one per turn of the
conversation, so a resumed conversation goes on with the next; the last
repeats), ``build`` (``"1.2.17"``: denials as DONE + ``denied_actions``, print
timeout as an empty SUCCESS; ``"1.1.24"``: TOOL_ERROR denials, ``timeout
waiting for response`` and exit 1), ``signed_in``, ``conversation_id``
(``"generate"``), ``unknown_conversation`` (``fail``: ``--conversation`` of
one not on disk exits 1; ``new``: a new conversation, named in ``init``),
``sleep_scale``, ``sigterm`` (``exit`` | ``ignore``),
``models`` (``[[id, name], ...]``), ``models_mode`` (``ok`` | ``fail`` | ``hang``).

Steps (one-key objects)::

    {"say": "text" | ["piece", ...]}   one agent_response step: ACTIVE frames, the last DONE with usage
    {"think": "text"}                  an agent_response frame with thought_text
    {"tool": {name, params, output, error, needs_permission}}   ACTIVE, then DONE / ERROR
    {"step": {...}} / {"line": {...}} / {"raw": "text"}         any step_update / any object / a non-JSON line
    {"say_bytes": "caf\\xff"}          an agent_response delta holding raw bytes: each ``\\xNN`` is that
                                       byte, so a delta can carry invalid UTF-8 (the said text keeps U+FFFD)
    {"split": {...}}                   a step_update written in two pieces, 0.1 s apart
    {"stderr": "text"}  {"sleep": s}  {"hang": true}  {"tick": {"every": s, "text": t}}
    {"echo": true}                     say the prompt back
    {"error_message": "text"}          an error_message step
    {"quota": "34m13s"}                quota reached: error_message step, stderr statements, result ERROR, exit 3
    {"mcp_call": {tool, arguments, server, timeout, poll, prefix, error_prefix, ...}}
                                       call a tool on an MCP server from the CLI's global MCP config
                                       (``$HOME/.gemini/config/mcp_config.json``, read at the call, as agy
                                       watches it): the enabled ``agy-host-bridge-<pid>`` entry of this
                                       process's parent, else the only enabled entry whose name starts
                                       with ``server``; the result is said as agent text (``prefix`` +
                                       text, ``error_prefix`` for an error), like the fake ACP agent's
                                       step of the same name. No tool step is shown for it: what agy
                                       shows for an MCP call is not recorded anywhere.
    {"result": {...}}                  end the turn with these result fields
    {"exit": N | {code, stderr}}       exit now, without a result
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

VALUE_FLAGS = {"add-dir", "agent", "conversation", "effort", "input-format", "json-schema", "log-file", "mode"}
VALUE_FLAGS |= {"model", "output-format", "print", "print-timeout", "project", "prompt-interactive"}
BOOL_FLAGS = {"continue", "dangerously-skip-permissions", "disable-slash-commands", "new-project", "sandbox", "version"}
ALIASES = {"p": "print", "prompt": "print", "c": "continue", "i": "prompt-interactive"}
NEEDS_PERMISSION = {"run_command": "command", "send_command_input": "command", "write_to_file": "write_file"}
NEEDS_PERMISSION |= {"replace_file_content": "write_file", "multi_replace_file_content": "write_file"}
TOOLS = ["ask_question", "grep_search", "list_dir", "run_command", "view_file", "write_to_file"]
MODELS = [
    *[[f"gemini-3.8-flash-{t}", f"Gemini 3.8 Flash ({t.title()})"] for t in ("high", "medium", "low")],
    *[[f"gemini-3.7-flash-{t}", f"Gemini 3.7 Flash ({t.title()})"] for t in ("high", "medium", "low")],
    *[[f"gemini-3.1-pro-{t}", f"Gemini 3.1 Pro ({t.title()})"] for t in ("high", "low")],
    ["claude-sonnet-4-6", "Claude Sonnet 4.6 (Thinking)"],
    ["gpt-oss-120b-medium", "GPT-OSS 120B (Medium)"],
]
_TOOLS = [
    {"tool": {"name": "view_file", "params": {"AbsolutePath": "/w/a.txt"}, "output": "3 lines, 44 bytes"}},
    {"tool": {"name": "write_to_file", "params": {"TargetFile": "/w/new.txt", "CodeContent": "hi\n"}}},
    {"tool": {"name": "run_command", "params": {"CommandLine": "ls"}, "output": "a.txt\r\n"}},
    {"say": "DONE"},
]
BUILTIN: dict[str, dict[str, Any]] = {
    "happy": {"turns": [[{"say": ["HE", "LLO"]}]]},
    "echo": {"turns": [[{"echo": True}]]},
    "slow": {"turns": [[{"hang": True}]]},
    "tick": {"turns": [[{"say": ["T0"]}, {"tick": {"every": 0.05, "text": "tick"}}]]},
    "park": {"turns": [[{"say": ["P1"]}, {"sleep": 1.0}, {"say": ["P2"]}]]},
    "crash": {"turns": [[{"say": ["PARTIAL"]}, {"exit": {"code": 1, "stderr": "fake-agy: crashing mid-turn"}}]]},
    "quota": {"turns": [[{"quota": "34m13s"}]]},
    "tools": {"turns": [_TOOLS]},
}
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)(h|ms|m|s))+$")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


class UsageError(Exception):
    pass


class _Stop(Exception):
    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__()
        self.result = result


class _PrintTimeout(Exception):
    pass


#: Stands for a ``say_bytes`` step's raw bytes in its encoded frame.
_RAW_MARK = "\u0001raw-bytes\u0001"


def _escaped_bytes(text: str) -> bytes:
    """``text`` as UTF-8 with each ``\\xNN`` escape turned into that byte."""
    return re.sub(rb"\\x([0-9a-fA-F]{2})", lambda m: bytes([int(m.group(1), 16)]), text.encode("utf-8"))


def parse_duration(text: str) -> float:
    if text == "0" or not _DURATION.match(text):
        raise UsageError(f'invalid value "{text}" for flag -print-timeout: parse error')
    return sum(float(n) * _UNITS[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s)", text))


def parse_flags(args: Sequence[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Go ``flag`` rules: flags until the first positional argument."""
    flags: dict[str, list[str]] = {}
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] not in ("-", "--"):
        name, eq, value = args[i].lstrip("-").partition("=")
        name = ALIASES.get(name, name)
        if name in BOOL_FLAGS:
            flags.setdefault(name, []).append(value or "true")
        elif name in VALUE_FLAGS:
            if not eq:
                i += 1
                if i >= len(args):
                    raise UsageError(f"flag needs an argument: -{name}")
                value = args[i]
            flags.setdefault(name, []).append(value)
        else:
            raise UsageError(f"flag provided but not defined: -{name}")
        i += 1
    return flags, list(args[i + 1 if i < len(args) and args[i] == "--" else i :])


class FakeAgy:
    def __init__(self, flags: dict[str, list[str]], scenario: dict[str, Any], log: Any, state: Path | None) -> None:
        from agy_host.testing import _wire

        self.wire = _wire
        self.out = _wire.Output()
        self.flags = flags
        self.sc = scenario
        self.log = log
        self.state = state
        self.build = tuple(int(p) for p in str(scenario.get("build", "1.2.17")).split(".") if p.isdigit())
        self.skip = "dangerously-skip-permissions" in flags
        self.print_timeout = parse_duration(self.flag("print-timeout") or "5m")
        self.conv = ""
        self.steps = 0
        self.num_turns = 0
        self.total = dict.fromkeys(("input_tokens", "output_tokens", "thinking_tokens", "cache_read_tokens"), 0)
        self.prompt = ""
        self.said: list[str] = []
        self.denied: list[dict[str, str]] = []
        self.deadline = 0.0

    def flag(self, name: str) -> str:
        values = self.flags.get(name)
        return values[-1] if values else ""

    # -- output -----------------------------------------------------------------

    def step(self, fields: dict[str, Any], index: int | None = None) -> None:
        if index is None:
            index, self.steps = self.steps, self.steps + 1
        self.out.send(
            {"event": "step_update", "step_update": {"conversation_id": self.conv, "step_index": index, **fields}}
        )

    def usage(self) -> dict[str, int]:
        return {**self.total, "total_tokens": self.total["input_tokens"] + self.total["output_tokens"]}

    def result(self, **fields: Any) -> dict[str, Any]:
        body = {"conversation_id": self.conv, "status": "SUCCESS", "response": "", "duration_seconds": 0.1}
        body |= {"num_turns": self.num_turns, "usage": self.usage()}
        return {"event": "result", "result": {**body, **fields}}

    def fail(self, error: str, code: int, stderr: Sequence[str] = ()) -> NoReturn:
        """A failed run: stderr statements, a lone result ERROR, the exit code."""
        for line in stderr:
            self.wire.stderr(line)
        zero = dict.fromkeys((*self.total, "total_tokens"), 0)
        self.out.send(self.result(status="ERROR", error=error, usage=zero if not self.num_turns else self.usage()))
        self.exit(code)

    def exit(self, code: int) -> NoReturn:
        self.save()
        self.log.event("exit", code=code)
        os._exit(code)

    # -- start-up -------------------------------------------------------------------

    def check_model(self) -> None:
        model, effort = self.flag("model"), self.flag("effort")
        if effort and effort not in ("low", "medium", "high"):
            self.fail(f'invalid effort "{effort}" (use low, medium or high)', 1, [f'error: invalid effort "{effort}"'])
        if not model:
            return
        models = self.sc.get("models", MODELS)
        by = {m[0]: m for m in models} | {m[1]: m for m in models}
        head = f'invalid model selection (--model "{model}" --effort "{effort}"): '
        entry = by.get(model)
        reason = ""
        if entry is not None:
            tier = next((t for t in ("low", "medium", "high") if entry[0].endswith("-" + t)), None)
            if effort and tier and effort != tier:
                reason = f"--model {model} conflicts with --effort={effort}"
            elif effort and not tier:
                reason = f"model {model} does not take --effort"
        elif effort and f"{model}-{effort}" in by:
            return
        elif any(m[0].startswith(model + "-") for m in models):
            reason = f"model {model} needs --effort (low|medium|high)"
        else:
            names = "\n".join(f"  {m[1]}" for m in models)
            reason = f"model {model} is not recognized as a known model or custom model in settings"
            reason += f"\nAvailable models:\n{names}"
        if reason:
            stderr = [f"error: {head}{reason.splitlines()[0]}"] if self.build >= (1, 2) else []
            self.fail(head + reason, 1, stderr)

    def conversation(self) -> None:
        wanted = self.flag("conversation")
        if not wanted and "continue" in self.flags and self.state and (self.state / "last").exists():
            wanted = (self.state / "last").read_text().strip()
        if wanted:
            path = self.state / f"{wanted}.json" if self.state else None
            if path is not None and not path.exists():
                if self.sc.get("unknown_conversation") == "new":
                    self.conv = str(uuid.uuid4())  # starts another one and says so only in init
                    return
                self.fail(f"conversation {wanted} not found", 1, [f"error: conversation {wanted} not found"])
            if path is not None:
                saved = json.loads(path.read_text())
                self.steps, self.num_turns, self.total = saved["steps"], saved["num_turns"], saved["usage"]
            self.conv = wanted
            return
        fixed = self.sc.get("conversation_id", "generate")
        self.conv = str(uuid.uuid4()) if fixed == "generate" else str(fixed)

    def save(self) -> None:
        if self.state is None or not self.conv:
            return
        self.state.mkdir(parents=True, exist_ok=True)
        data = {"steps": self.steps, "num_turns": self.num_turns, "usage": self.total}
        (self.state / f"{self.conv}.json").write_text(json.dumps(data))
        (self.state / "last").write_text(self.conv)

    def start(self) -> None:
        if not self.sc.get("signed_in", True):
            said = [
                "You are not logged into Antigravity.",
                "Error: authentication required. Run 'agy' to log in, then retry.",
            ]
            self.fail("authentication failed or timed out", 1, said)
        self.check_model()
        if self.flag("input-format") == "stream-json" and self.flag("output-format") != "stream-json":
            self.fail("--input-format stream-json requires --output-format stream-json", 1)
        self.conversation()
        if self.flag("mode") == "plan" and "disable-slash-commands" in self.flags:
            self.wire.stderr("warning: --mode plan has no effect while slash command expansion is disabled.")
        init: dict[str, Any] = {"cwd": os.getcwd(), "tools": TOOLS}
        if self.flag("model"):
            init = {"model": self.flag("model"), **init}
        init["permission_mode"] = "always-proceed" if self.skip else "request-review"
        self.out.send({"event": "init", "conversation_id": self.conv, "init": init})

    # -- one turn ---------------------------------------------------------------------

    def line(self, raw: bytes) -> None:
        try:
            msg = json.loads(raw)
        except ValueError:
            self.fail(f"invalid stream input: {raw[:80]!r}", 1)
        if not isinstance(msg, dict) or "event" not in msg:
            self.fail('stream input message is missing the "event" field', 1)
        content = msg.get("message", {}).get("content", "") if isinstance(msg.get("message"), dict) else ""
        if isinstance(content, str) and content.startswith("/") and "disable-slash-commands" not in self.flags:
            word = content.split()[0]
            self.fail(f"{word} is answered by the CLI itself and is unavailable with --input-format stream-json", 2)
        self.turn(str(content))

    def turn(self, content: str) -> None:
        self.num_turns += 1
        self.save()  # a killed turn still counts, as agy's does on resume
        turns = self.sc.get("turns") or [[{"say": "ok"}]]
        steps = turns[min(self.num_turns - 1, len(turns) - 1)]
        self.prompt, self.said, self.denied = content, [], []
        self.deadline = time.monotonic() + self.print_timeout
        self.step({"state": "DONE", "step_type": "user_input"})
        try:
            for step in steps:
                self.run(step)
            result = self.result(response="".join(self.said))
        except _Stop as stop:
            result = stop.result
        except _PrintTimeout:
            if self.build < (1, 2):
                self.out.send(self.result(status="ERROR", error="timeout waiting for response"))
                self.exit(1)
            after = self.flag("print-timeout") or "5m0s"
            self.wire.stderr(f"[agy] print timeout after {after} with turn in progress; returning partial output")
            zero = dict.fromkeys((*self.total, "total_tokens"), 0)
            result = self.result(duration_seconds=0, usage=zero)
        if self.denied:
            result["result"].setdefault("denied_actions", self.denied)
        self.out.send(result)
        self.save()

    def sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds * float(self.sc.get("sleep_scale", 1.0))
        while (now := time.monotonic()) < end:
            if now >= self.deadline:
                raise _PrintTimeout
            time.sleep(max(0.0, min(end, self.deadline) - now))
        if time.monotonic() >= self.deadline:
            raise _PrintTimeout

    def say(self, pieces: Sequence[str], usage: dict[str, int] | None = None) -> None:
        index, self.steps = self.steps, self.steps + 1
        for piece in pieces[:-1]:
            self.step({"state": "ACTIVE", "step_type": "agent_response", "text_delta": piece}, index)
        text = pieces[-1] if pieces else ""
        out_tokens = max(1, len("".join(pieces)) // 4)
        used = usage or {"input_tokens": 1000 + 10 * self.num_turns, "output_tokens": out_tokens}
        for key in self.total:
            self.total[key] += int(used.get(key, 0))
        used = {**dict.fromkeys(self.total, 0), **used}
        used["total_tokens"] = used["input_tokens"] + used["output_tokens"]
        fields = {"state": "DONE", "step_type": "agent_response", "duration_seconds": 0.5, "usage": used}
        self.step({**fields, **({"text_delta": text} if text else {})}, index)
        self.said.extend(pieces)

    def say_bytes(self, raw: bytes) -> None:
        """One agent_response delta whose text is ``raw`` byte for byte (valid JSON around it)."""
        index, self.steps = self.steps, self.steps + 1
        fields = {"state": "DONE", "step_type": "agent_response", "text_delta": _RAW_MARK}
        frame = self.wire.encode(
            {"event": "step_update", "step_update": {"conversation_id": self.conv, "step_index": index, **fields}}
        )
        self.out.write(frame.replace(self.wire.encode(_RAW_MARK)[1:-1], raw) + b"\n")
        self.said.append(raw.decode("utf-8", "replace"))

    def tool(self, spec: dict[str, Any]) -> None:
        name, params = spec.get("name", "tool"), spec.get("params", {})
        info: dict[str, Any] = {"name": name, "parameters": params}
        index, self.steps = self.steps, self.steps + 1
        self.step({"state": "ACTIVE", "step_type": "tool", "tool_name": name, "tool_info": info}, index)
        done = {"step_type": "tool", "tool_name": name, "duration_seconds": 0.01}
        action = NEEDS_PERMISSION.get(name) if spec.get("needs_permission", True) else None
        if action and not self.skip:
            if self.build >= (1, 2):
                self.denied.append({"action": action, "display_name": name.title().replace("_", "")})
                self.step({**done, "state": "DONE", "tool_info": info}, index)
            else:
                what = params.get("CommandLine") or params.get("TargetFile") or name
                msg = f'permission check failed for {action} "{what}": user denied permission to run {action}'
                self.step(
                    {**done, "state": "ERROR", "tool_info": {**info, "error": {"type": "TOOL_ERROR", "message": msg}}},
                    index,
                )
        elif "error" in spec:
            err = {"type": "TOOL_ERROR", "message": spec["error"]}
            self.step({**done, "state": "ERROR", "tool_info": {**info, "error": err}}, index)
        else:
            out = {"output": spec["output"]} if "output" in spec else {}
            self.step({**done, "state": "DONE", "tool_info": {**info, **out}}, index)

    def mcp_call(self, spec: dict[str, Any]) -> None:
        import threading

        import msgspec

        from agy_host.testing import _mcp as mcp
        from agy_host.testing.acp.scenario import McpCall

        step = msgspec.convert(spec, McpCall)
        try:
            path = Path(os.environ.get("HOME") or Path.home()) / ".gemini" / "config" / "mcp_config.json"
            server = mcp.pick_cli_server(path, step.server or "agy-host-bridge-", os.getppid(), event=self.log.event)
            scale = float(self.sc.get("sleep_scale", 1.0))
            text, is_error, _ = mcp.call_tool(
                server, step, cancel=threading.Event(), event=self.log.event, sleep_scale=scale
            )
        except mcp.McpCallFailed as exc:
            text, is_error = str(exc), True
            self.log.event("mcp-call", tool=step.tool, is_error=True, polls=0, text=text)
        self.say([(step.error_prefix if is_error else step.prefix) + text])

    def run(self, step: dict[str, Any]) -> None:
        kind, value = next(iter(step.items()))  # one step per object (``say`` may add ``usage``)
        if kind == "say":
            self.say([value] if isinstance(value, str) else list(value), step.get("usage"))
        elif kind == "think":
            self.step({"state": "ACTIVE", "step_type": "agent_response", "thought_text": value})
        elif kind == "tool":
            self.tool(value)
        elif kind == "step":
            self.step(value, value.get("step_index"))
            if value.get("step_type") == "agent_response" and isinstance(value.get("text_delta"), str):
                self.said.append(value["text_delta"])
        elif kind == "line":
            self.out.send(value)
        elif kind == "raw":
            self.out.raw_line(value)
        elif kind == "say_bytes":
            self.say_bytes(_escaped_bytes(value))
        elif kind == "split":
            index, self.steps = self.steps, self.steps + 1
            fields = {"conversation_id": self.conv, "step_index": index, **value}
            data = json.dumps({"event": "step_update", "step_update": fields})
            half = len(data) // 2
            self.out.write(data[:half].encode())
            time.sleep(0.1)
            self.out.write(data[half:].encode() + b"\n")
            self.said.append(value.get("text_delta", ""))
        elif kind == "stderr":
            self.wire.stderr(value)
        elif kind == "sleep":
            self.sleep(float(value))
        elif kind == "hang":
            self.sleep(1e9)
        elif kind == "tick":
            while True:
                self.sleep(float(value.get("every", 0.05)))
                self.say([value.get("text", "tick")])
        elif kind == "echo":
            self.say([self.prompt])
        elif kind == "error_message":
            self.step({"state": "DONE", "step_type": "error_message", "error_message": value})
        elif kind == "quota":
            self.step({"state": "DONE", "step_type": "error_message"})
            text = "Individual quota reached. Please upgrade your subscription to increase your limits."
            text += f" Resets in {value}."
            detail: dict[str, Any] = {"short_error": "RESOURCE_EXHAUSTED (code 429): quota", "error_code": 429}
            detail |= {"status": "RESOURCE_EXHAUSTED", "code_kind": "http", "retryable": True, "error_id": "fake"}
            self.fail(text, 3, [f"error: {text}", "AGY_ERROR: " + json.dumps(detail)])
        elif kind == "mcp_call":
            self.mcp_call(value)
        elif kind == "result":
            raise _Stop(self.result(**value))
        elif kind == "exit":
            spec = value if isinstance(value, dict) else {"code": value}
            if spec.get("stderr"):
                self.wire.stderr(spec["stderr"])
            self.exit(int(spec.get("code", 1)))
        else:
            raise UsageError(f"unknown fake step {kind!r}")


def load_scenario(spec: str, sets: Sequence[str]) -> dict[str, Any]:
    if spec in BUILTIN:
        scenario = dict(BUILTIN[spec])
    elif spec.lstrip().startswith("{"):
        scenario = json.loads(spec)
    else:
        scenario = json.loads(Path(spec).read_text("utf-8"))
    for item in sets:
        key, _, value = item.partition("=")
        try:
            scenario[key] = json.loads(value)
        except ValueError:
            scenario[key] = value
    return scenario


def main(argv: Sequence[str] | None = None) -> int:
    from agy_host.testing import _wire

    args = list(sys.argv[1:] if argv is None else argv)
    fake: dict[str, list[str]] = {"scenario": [], "log": [], "state": [], "set": []}
    rest: list[str] = []
    while args:
        arg = args.pop(0)
        name, eq, value = arg.partition("=")
        if name.startswith("--fake-") and name[7:] in fake:
            fake[name[7:]].append(value if eq else args.pop(0))
        else:
            rest.append(arg)
    env = os.environ
    log = _wire.MessageLog((fake["log"] or [env.get("AGY_FAKE_LOG", "")])[-1] or None)
    log.event("argv", argv=rest, cwd=os.getcwd(), pid=os.getpid())
    scenario = load_scenario((fake["scenario"] or [env.get("AGY_FAKE_SCENARIO", "happy")])[-1], fake["set"])
    state = (fake["state"] or [env.get("AGY_FAKE_STATE", "")])[-1]
    try:
        flags, positional = parse_flags(rest)
        agy = FakeAgy(flags, scenario, log, Path(state) if state else None)
    except UsageError as exc:
        _wire.stderr(f"{exc}\nUsage of agy:\n" + "\n".join(f"  --{f}" for f in sorted(VALUE_FLAGS | BOOL_FLAGS)))
        log.event("exit", code=2)
        return 2

    def on_term(signum: int, _frame: Any) -> None:
        log.event("sigterm", mode=scenario.get("sigterm", "exit"))
        if scenario.get("sigterm") != "ignore":
            agy.save()  # what the killed turn used stays counted, as agy's conversation keeps it
            os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    if "version" in flags:
        print(scenario.get("build", "1.2.17"), flush=True)
        return 0
    if positional[:1] == ["models"]:
        mode = scenario.get("models_mode", "ok")
        if mode == "hang":
            time.sleep(3600)
        if mode == "fail":
            _wire.stderr("error: could not fetch the model list")
            return 1
        print("\n".join(f"{m[0]}\t{m[1]}" for m in scenario.get("models", MODELS)), flush=True)
        return 0
    agy.start()
    if agy.flag("print"):
        agy.turn(agy.flag("print"))
        agy.exit(0)
    for raw in _wire.stdin_lines():
        try:
            json.loads(raw)
            log.received(raw, parsed=True)
        except ValueError:
            log.received(raw, parsed=False)
        if raw.strip():
            agy.line(raw.strip())
    log.event("stdin-eof")
    agy.exit(0)


# ---------------------------------------------------------------------------
# the handle tests use (stdlib only: the pytest plugin imports it)
# ---------------------------------------------------------------------------


@dataclass
class FakeAgyBin:
    """A wrapper script to use as ``AGY_BIN``, and what the fake recorded."""

    bin: Path
    log_path: Path
    state_dir: Path

    @property
    def env(self) -> dict[str, str]:
        return {"AGY_BIN": str(self.bin)}

    def entries(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text("utf-8").split("\n") if line.strip()]

    def argvs(self) -> list[list[str]]:
        """The agy arguments of every start, in order."""
        return [e["argv"] for e in self.entries() if e.get("_fake") == "argv"]

    def received(self) -> list[dict[str, Any]]:
        return [e for e in self.entries() if "_fake" not in e]

    def events(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.entries() if e.get("_fake") == name]


def make_fake_agy(workdir: Path, scenario: str | dict[str, Any] = "happy", **settings: Any) -> FakeAgyBin:
    """Write the wrapper into ``workdir``; a dict scenario is passed inline as JSON."""
    workdir.mkdir(parents=True, exist_ok=True)
    n = len(list(workdir.glob("agy-*")))
    spec = json.dumps(scenario) if isinstance(scenario, dict) else scenario
    log, state, wrapper = workdir / f"fake-agy-{n}.log", workdir / f"fake-agy-state-{n}", workdir / f"agy-{n}"
    cmd = [sys.executable, "-m", "agy_host.testing.agy_cli.agent", "--fake-scenario", spec, "--fake-log", str(log)]
    cmd += ["--fake-state", str(state)]
    for key, value in settings.items():
        cmd += ["--fake-set", f"{key}={json.dumps(value)}"]
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.join(cmd)} "$@"\n')
    wrapper.chmod(0o755)
    return FakeAgyBin(bin=wrapper, log_path=log, state_dir=state)


if __name__ == "__main__":
    sys.exit(main())
