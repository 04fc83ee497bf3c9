"""A real ACP agent executable for tests, scripted by a scenario.

Run it as ``python -m agy_host.testing.acp.agent [options]``. It speaks
newline-delimited JSON-RPC 2.0 on stdin/stdout like any ACP agent, so a test
exercises the host's real spawn, framing, timers and kill paths; only what
the agent *says* is scripted. It imports the standard library and msgspec
only, so spawning it is cheap.

Options (each also from the environment)::

    --scenario NAME|PATH   built-in name (``--list``) or a .json/.toml file
                           (env AGY_FAKE_ACP_SCENARIO; default "happy")
    --log PATH             append every received message as a JSON line
                           (env AGY_FAKE_ACP_LOG)
    --set KEY=VALUE        override any scenario key; VALUE is JSON if it
                           parses, else a string (env AGY_FAKE_ACP_<KEY>)
    --cancel MODE, --slow-death-ms N, --session-id ID, --sleep-scale F
                           shorthands for --set
    --list                 print the built-in scenarios and exit
    --print-scenario       print the effective scenario as JSON and exit

The log is written with one unbuffered append per line before the message is
acted on, so whatever the agent answered is on disk even after a SIGKILL.
Lines: each received frame verbatim; ``{"_unparsed": text}`` for a non-JSON
line; ``{"_fake": event, ...}`` for what the agent did with it
(``permission-answer``, ``cancel``, ``sigterm``, ``stdin-eof``...).

Scenario format (JSON object, or the same as TOML)::

    extends            built-in scenario to start from
    agent_info         {name, title, version}        initialize's agentInfo
    protocol_version   1
    auth_methods       [{id, name, description}]
    prompt_capabilities {image, audio, embeddedContext}
    load_session       true                          agentCapabilities.loadSession
    slash_commands     {NAME: [steps]}               a prompt whose first block is text
                                                     starting with /NAME plays these
                                                     steps instead (a command)
    agent_capabilities {}                            merged over agentCapabilities
                                                     (sessionCapabilities resume, list,
                                                     delete, fork turn session/resume,
                                                     list, delete, fork on; a fork is
                                                     "<id>-fork-<8 hex>")
    listed_sessions    []                            what session/list answers, with
                                                     the live sessions
    session_id         "fake-session-0001" | "generate" (a UUID per session/new)
    initialize         ok | hang | exit (with exit_code, stderr line) |
                       garbage-first (a non-JSON stdout line, then the answer)
    auth_required      false: session/new and session/load answer -32000
                       "Authentication required", data.message = auth_message,
                       until an ``authenticate`` succeeds
    authenticate       ok | fails | hang;  auth_url: print agy's sign-in line
                       ("Open the following link to authenticate the ACP
                       server: <url>") on stdout first
    logout             none (not offered: -32601) | ok (advertised in
                       agentCapabilities.auth.logout; answers {} and signs
                       out) | fails (advertised; answers -32603)
    load               ok | fails (-32000 unknown session) | replay (sends
                       load_history as user/agent chunks before the answer) |
                       replay-after (answers first, then replays, as the
                       Gemini CLI does; replay_delay_ms after the answer).
                       FORGOTTEN_CONVERSATION is refused by load and resume
                       whatever this says (an agent that lost it)
    cancel             graceful: session/cancel (notification or request)
                         ends running prompts with stopReason "cancelled"
                         (a request is answered {} after that)
                       unsupported: a request gets -32601, a notification is
                         ignored (agy RC01)
                       ignore: a request gets {}, nothing stops
    sigterm            exit | ignore | slow-death (with slow_death_ms;
                       slow_death_ms > 0 alone also turns it on)
    models, modes, config_options   returned by session/new and load (null
                       omits the key); session/set_config_option {configId,
                       value} updates and returns {configOptions}; unknown
                       configId -> -32602; session/set_mode updates the mode
    stderr_lines       written to stderr at start
    stdin_eof          exit (status 0) | ignore
    sleep_scale        factor on every sleep step
    flood_count, flood_text   defaults of the flood step
    request_id_start   first id of agent-to-client requests (0 like agy)
    prompts            [[steps of prompt 1], [steps of prompt 2], ...]; the
                       last list repeats; ``prompt`` = one list for all
    prompt_counter     "" | PATH: count prompts in this file across processes
                       (a restarted agent plays the next list, not the first)
    session_updates    [update, ...] sent right after the answer to
                       session/new, load and resume, in the same write (the
                       way agents advertise their commands)

Other methods: ``session/close`` -> {}; anything else -> -32601 with
``data.method``; a non-JSON line -> -32700; requests on an unknown session
-> -32602.

Steps (one-key objects, run in order; ``<session>`` in any string is
replaced by the session id)::

    {"chunk": "text"}                agent_message_chunk
    {"thought": "text"}              agent_thought_chunk
    {"sleep": 0.5}                   seconds (times sleep_scale; a cancel wakes it)
    {"tool_call": {...}}             session/update tool_call, fields passed through
    {"tool_call_update": {...}}      same for tool_call_update
    {"update": {...}}                any update object, verbatim
    {"usage": {used, size, cost}}    usage_update
    {"plan": [{content, priority, status}, ...]}   plan (the whole list)
    {"commands": [{name, description, input: {hint}}, ...]}
                                     available_commands_update
    {"notify": {method, params}}     any notification
    {"permission": {tool_call, options, branches}}
                                     session/request_permission (allow/deny by
                                     default), waits for the answer; branches
                                     maps optionId | kind | allow | reject |
                                     cancelled | error | * to more steps
    {"request": {method, params, branches}}   any agent-to-client request;
                                     an elicitation/create answer branches on
                                     its action (accept, decline, cancel) and
                                     is logged as "elicitation-answer"
    {"prompt_usage": {...}}          "usage" in the prompt response
    {"prompt_meta": {...}}           "_meta" in the prompt response
    {"stop": "end_turn"}             answer the prompt (default at the end)
    {"error": {code, message, data}} answer the prompt with an error
    {"crash": 3} / {"crash": {code, stderr}}   exit without answering
    {"hang": true}                   never answer (until a graceful cancel)
    {"raw_stdout": "line"}           a non-JSON stdout line
    {"stderr": "text"} / {"stderr_flood_bytes": N}
    {"flood": N} / {"flood": {count, text}} / {"flood": true}
                                     N agent_message_chunk frames in big writes
    {"echo": true} / {"echo": "prefix"} / {"echo": {prefix, resources}}
                                     one chunk: prefix + the prompt's text blocks
    {"repeat": {steps, times}}       times null = until cancelled
    {"mcp_call": {tool, arguments, server, protocol_version, timeout, poll,
                  prefix, error_prefix, ...}}
                                     call an MCP tool on a server the client
                                     gave in mcpServers (initialize, tools/list,
                                     tools/call over HTTP, polling "STILL
                                     RUNNING" answers); the result becomes one
                                     chunk: prefix + text (error_prefix for an
                                     error); a cancel or the timeout hangs up
"""

from __future__ import annotations

import argparse
import itertools
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

import msgspec

from agy_host.testing import _wire
from agy_host.testing.acp._prompt import Pending, PromptRun
from agy_host.testing.acp._sessions import AUTH_REQUIRED, INVALID_PARAMS, METHOD_NOT_FOUND, SessionMethods, _Session
from agy_host.testing.acp.scenario import Scenario, ScenarioError, load_scenario, parse_value

INVALID_REQUEST = -32600
PARSE_ERROR = -32700
SIGNIN_LINE = "Open the following link to authenticate the ACP server: "


class FakeAcpAgent(SessionMethods):
    """The protocol side: one instance per process, fed by the stdin reader."""

    def __init__(self, scenario: Scenario, out: _wire.Output, log: _wire.MessageLog) -> None:
        self.scenario = scenario
        self.out = out
        self.log = log
        self.authenticated = not scenario.auth_required
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._runs: list[PromptRun] = []
        self._pending: dict[Any, Pending] = {}
        self._request_ids = itertools.count(scenario.request_id_start)
        self._prompt_index = 0

    # -- bookkeeping used by prompt runs ----------------------------------

    def take_prompt_index(self) -> int:
        with self._lock:
            if self.scenario.prompt_counter:
                return self._take_counted_index(self.scenario.prompt_counter)
            index = self._prompt_index
            self._prompt_index += 1
            return index

    @staticmethod
    def _take_counted_index(path: str) -> int:
        """The next index from a counter file shared by every process of this
        agent command, so a restarted agent goes on with the next prompt list
        (as the fake agy's turns do) instead of starting over."""
        try:
            with open(path, encoding="utf-8") as f:
                index = int(f.read().strip() or 0)
        except (OSError, ValueError):
            index = 0
        with open(path, "w", encoding="utf-8") as f:
            f.write(str(index + 1))
        return index

    def open_request(self, run: PromptRun, method: str) -> tuple[int, Pending]:
        with self._lock:
            msg_id = next(self._request_ids)
            pending = Pending(run, method)
            self._pending[msg_id] = pending
            return msg_id, pending

    def close_request(self, msg_id: Any) -> None:
        with self._lock:
            self._pending.pop(msg_id, None)

    def mcp_servers(self, session_id: str) -> list[Any]:
        with self._lock:
            session = self._sessions.get(session_id)
            return list(session.mcp_servers) if session is not None else []

    def prompt_done(self, run: PromptRun) -> None:
        with self._lock:
            if run in self._runs:
                self._runs.remove(run)

    def crash(self, code: int, text: str = "") -> NoReturn:
        if text:
            _wire.stderr(text)
        self.log.event("crash", code=code)
        os._exit(code)

    # -- input -------------------------------------------------------------

    def handle_line(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            msg = _wire.decode(line)
        except msgspec.DecodeError:
            self.log.received(line, parsed=False)
            _wire.stderr(f"fake_acp_agent: not JSON, answered -32700: {line[:200]!r}")
            self.out.send(_wire.error_response(None, PARSE_ERROR, "Parse error"))
            return
        self.log.received(line, parsed=True)
        if not isinstance(msg, dict):
            self.out.send(_wire.error_response(None, INVALID_REQUEST, "Invalid Request"))
            return
        method = msg.get("method")
        if isinstance(method, str):
            params = msg.get("params")
            params = params if isinstance(params, dict) else {}
            if "id" in msg:
                self.on_request(msg["id"], method, params)
            else:
                self.on_notification(method, params)
        elif "id" in msg and ("result" in msg or "error" in msg):
            self.on_response(msg)
        else:
            self.out.send(_wire.error_response(msg.get("id"), INVALID_REQUEST, "Invalid Request"))

    def on_response(self, msg: dict[str, Any]) -> None:
        with self._lock:
            pending = self._pending.get(msg["id"])
        if pending is None:
            _wire.stderr(f"fake_acp_agent: response to an unknown request id {msg['id']!r}")
            self.log.event("unexpected-response", id=msg["id"])
            return
        pending.response = msg
        pending.done.set()

    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "session/cancel":
            mode = self.scenario.cancel
            self.log.event("cancel", via="notification", mode=mode)
            if mode == "graceful":
                self._cancel_runs(params.get("sessionId"))

    def on_request(self, msg_id: Any, method: str, params: dict[str, Any]) -> None:
        handler = _HANDLERS.get(method)
        if handler is None:
            self.out.send(_wire.error_response(msg_id, METHOD_NOT_FOUND, "Method not found", {"method": method}))
            return
        handler(self, msg_id, params)

    # -- methods -----------------------------------------------------------

    def _initialize(self, msg_id: Any, params: dict[str, Any]) -> None:
        sc = self.scenario
        if sc.initialize == "hang":
            self.log.event("initialize-hang")
            return
        if sc.initialize == "exit":
            self.crash(sc.exit_code, f"fake_acp_agent: exiting before initialize (status {sc.exit_code})")
        if sc.initialize == "garbage-first":
            self.out.raw_line("fake-acp: this line is not JSON {")
        capabilities: dict[str, Any] = {
            "loadSession": sc.load_session,
            "promptCapabilities": sc.prompt_capabilities,
            "mcpCapabilities": {"http": True, "sse": True},
            "sessionCapabilities": {},
        }
        if sc.logout != "none":
            capabilities["auth"] = {"logout": {}}
        capabilities.update(sc.agent_capabilities)
        result = {
            "protocolVersion": sc.protocol_version,
            "agentCapabilities": capabilities,
            "authMethods": sc.auth_methods,
            "agentInfo": sc.agent_info,
        }
        self.out.send(_wire.result_response(msg_id, result))

    def _authenticate(self, msg_id: Any, params: dict[str, Any]) -> None:
        sc = self.scenario
        if sc.authenticate == "hang":
            self.log.event("authenticate-hang")
            return
        if sc.auth_url:
            self.out.raw_line(SIGNIN_LINE + sc.auth_url)
        if sc.authenticate == "fails":
            self.out.send(
                _wire.error_response(
                    msg_id, AUTH_REQUIRED, "Authentication failed", {"message": "fake: sign-in failed"}
                )
            )
            return
        self.authenticated = True
        self.out.send(_wire.result_response(msg_id, {}))

    def _logout(self, msg_id: Any, params: dict[str, Any]) -> None:
        mode = self.scenario.logout
        self.log.event("logout", mode=mode)
        if mode == "none":
            self.out.send(_wire.error_response(msg_id, METHOD_NOT_FOUND, "Method not found", {"method": "logout"}))
        elif mode == "fails":
            self.out.send(_wire.error_response(msg_id, -32603, "Internal error", {"message": "fake: logout failed"}))
        else:
            self.authenticated = False
            self.out.send(_wire.result_response(msg_id, {}))

    def _session(self, msg_id: Any, params: dict[str, Any]) -> _Session | None:
        sid = params.get("sessionId")
        with self._lock:
            session = self._sessions.get(sid) if isinstance(sid, str) else None
            known = sorted(self._sessions)
        if session is None:
            self.out.send(
                _wire.error_response(
                    msg_id, INVALID_PARAMS, "Invalid params", {"message": f"unknown sessionId {sid!r}", "known": known}
                )
            )
        return session

    def _set_config_option(self, msg_id: Any, params: dict[str, Any]) -> None:
        session = self._session(msg_id, params)
        if session is None:
            return
        config_id = params.get("configId")
        value = params.get("value")
        options = session.config_options or []
        target = next((o for o in options if isinstance(o, dict) and o.get("id") == config_id), None)
        if target is None:
            known = [o.get("id") for o in options if isinstance(o, dict)]
            self.out.send(
                _wire.error_response(
                    msg_id,
                    INVALID_PARAMS,
                    "Invalid params",
                    {"message": f"unknown configId {config_id!r}", "known": known},
                )
            )
            return
        target["currentValue"] = value
        if config_id == "model" and session.models is not None:
            session.models["currentModelId"] = value
        if config_id == "mode" and session.modes is not None:
            session.modes["currentModeId"] = value
        self.out.send(_wire.result_response(msg_id, {"configOptions": options}))

    def _set_mode(self, msg_id: Any, params: dict[str, Any]) -> None:
        session = self._session(msg_id, params)
        if session is None:
            return
        mode = params.get("modeId")
        if session.modes is not None:
            session.modes["currentModeId"] = mode
        for option in session.config_options or []:
            if isinstance(option, dict) and option.get("id") == "mode":
                option["currentValue"] = mode
        self.out.send(_wire.result_response(msg_id, {}))

    def _prompt(self, msg_id: Any, params: dict[str, Any]) -> None:
        session = self._session(msg_id, params)
        if session is None:
            return
        run = PromptRun(self, session.id, msg_id, params)
        with self._lock:
            self._runs.append(run)
        run.thread.start()

    def _cancel_runs(self, session_id: Any) -> list[PromptRun]:
        with self._lock:
            runs = [r for r in self._runs if session_id is None or r.session_id == session_id]
            pendings = [p for p in self._pending.values() if p.run in runs]
        for run in runs:
            run.cancel.set()
        for pending in pendings:
            pending.done.set()
        return runs

    def _cancel(self, msg_id: Any, params: dict[str, Any]) -> None:
        mode = self.scenario.cancel
        self.log.event("cancel", via="request", mode=mode)
        if mode == "unsupported":
            self.out.send(
                _wire.error_response(msg_id, METHOD_NOT_FOUND, "Method not found", {"method": "session/cancel"})
            )
            return
        if mode == "ignore":
            self.out.send(_wire.result_response(msg_id, {}))
            return
        runs = self._cancel_runs(params.get("sessionId"))

        def answer_after_prompts() -> None:
            for run in runs:
                run.finished.wait(10.0)
            self.out.send(_wire.result_response(msg_id, {}))

        threading.Thread(target=answer_after_prompts, daemon=True).start()

    def _close(self, msg_id: Any, params: dict[str, Any]) -> None:
        sid = params.get("sessionId")
        if isinstance(sid, str):
            with self._lock:
                self._sessions.pop(sid, None)
        self.out.send(_wire.result_response(msg_id, {}))


_HANDLERS: dict[str, Any] = {
    "initialize": FakeAcpAgent._initialize,
    "authenticate": FakeAcpAgent._authenticate,
    "logout": FakeAcpAgent._logout,
    "session/new": FakeAcpAgent._session_new,
    "session/load": FakeAcpAgent._session_load,
    "session/resume": FakeAcpAgent._session_resume,
    "session/list": FakeAcpAgent._session_list,
    "session/delete": FakeAcpAgent._session_delete,
    "session/fork": FakeAcpAgent._session_fork,
    "session/set_config_option": FakeAcpAgent._set_config_option,
    "session/set_mode": FakeAcpAgent._set_mode,
    "session/prompt": FakeAcpAgent._prompt,
    "session/cancel": FakeAcpAgent._cancel,
    "session/close": FakeAcpAgent._close,
}


# ---------------------------------------------------------------------------
# process
# ---------------------------------------------------------------------------


def _install_sigterm(scenario: Scenario, log: _wire.MessageLog) -> None:
    dying = threading.Event()

    def on_term(signum: int, _frame: Any) -> None:
        if scenario.slow_death:
            log.event("sigterm", mode="slow-death", ms=scenario.slow_death_ms)
            if dying.is_set():
                return
            dying.set()
            ms = scenario.slow_death_ms if scenario.slow_death_ms > 0 else 1500
            _wire.stderr(f"fake: slow death {ms}ms")
            threading.Timer(ms / 1000.0, os._exit, args=(128 + signum,)).start()
            return
        if scenario.sigterm == "ignore":
            log.event("sigterm", mode="ignore")
            return
        log.event("sigterm", mode="exit")
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    signal.signal(signal.SIGTERM, on_term)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m agy_host.testing.acp.agent",
        description="A scripted ACP agent for tests (see the module docstring for the scenario format).",
    )
    p.add_argument("--scenario", help="built-in name or .json/.toml path (env AGY_FAKE_ACP_SCENARIO)")
    p.add_argument("--log", help="append received messages here (env AGY_FAKE_ACP_LOG)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a scenario key")
    p.add_argument("--cancel", choices=["graceful", "unsupported", "ignore"])
    p.add_argument("--slow-death-ms", type=int)
    p.add_argument("--session-id")
    p.add_argument("--sleep-scale", type=float)
    p.add_argument("--list", action="store_true", help="list built-in scenarios")
    p.add_argument("--print-scenario", action="store_true", help="print the effective scenario and exit")
    return p


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ScenarioError(f"--set needs KEY=VALUE, got {item!r}")
        out[key.strip()] = parse_value(value)
    for key in ("cancel", "slow_death_ms", "session_id", "sleep_scale"):
        value = getattr(args, key)
        if value is not None:
            out[key] = value
    return out


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    args = _parser().parse_args(argv)
    if args.list:
        from agy_host.testing.acp.scenarios import BUILTIN

        for name, raw in sorted(BUILTIN.items()):
            print(f"{name:24} {raw.get('description', '')}")
        return 0
    try:
        scenario = load_scenario(
            args.scenario or env.get("AGY_FAKE_ACP_SCENARIO") or "happy",
            env=env,
            overrides=_overrides(args),
            warn=_wire.stderr,
        )
    except ScenarioError as exc:
        _wire.stderr(f"fake_acp_agent: {exc}")
        return 2
    if args.print_scenario:
        print(_wire.encode(scenario).decode())
        return 0
    log = _wire.MessageLog(args.log or env.get("AGY_FAKE_ACP_LOG"))
    _install_sigterm(scenario, log)
    for text in scenario.stderr_lines:
        _wire.stderr(text)
    agent = FakeAcpAgent(scenario, _wire.Output(), log)
    try:
        for line in _wire.stdin_lines():
            agent.handle_line(line)
    except KeyboardInterrupt:
        return 130
    log.event("stdin-eof")
    if scenario.stdin_eof == "ignore":
        while True:
            time.sleep(3600)
    # Prompt threads are daemons: leave without waiting, like an agent whose client went away.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
