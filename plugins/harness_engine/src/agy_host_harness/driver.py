"""The harness turn driver: one harness process, one conversation per host
session, turns serialized per session.

* **The process** starts with the first turn and serves every session (in a
  keeper, every warm session with equal settings: :meth:`close_session`
  ends one conversation and keeps the others); if it
  dies, its conversations end and the next turn starts a new one and
  resumes them (``RESUME`` on the same ``cascadeId``: the harness keeps each
  conversation in its storage folder).
* **A conversation** is opened on a session's first turn (or resumed, when
  the turn carries a stored conversation id) and kept open. A turn whose
  profile (model, effort, cwd, permissions, host tools) differs re-opens it
  on the same id with the new config.
* **A turn** sends the user input and reads until the main trajectory is
  idle. Host tools park the turn (the turn layer runs them and hands the
  result back through :meth:`HarnessDriver.deliver_tool_result`); dynamic
  policy rules are answered by the host's permission decider.
* **Abort and timers** send the harness's own cancel (``haltRequest``): the
  harness goes idle within milliseconds and the next turn works; nothing is
  killed. A harness that does not go idle within the cancel grace has the
  conversation's socket closed (resumed next turn).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from agy_host.contract.events import (
    BridgeCallActivity,
    ErrorKind,
    NoticeActivity,
    OutcomeActivity,
    PermissionActivity,
    PermissionOption,
)
from agy_host.contract.permissions import PermissionRequest
from agy_host.contract.tools import ToolResult
from agy_host.engine.driver import DriverSnapshot, TurnHandle, TurnRequest
from agy_host.engine.lifecycle import Lifecycle
from agy_host.engine.timers import minutes
from agy_host.engine.turn import DriverTurns, TurnFailed, driver_scope
from agy_host_harness import opening, outcome, pre_tool, prompting, reachability, wire
from agy_host_harness.binary import INSTALL_HINT
from agy_host_harness.bootstrap import BootstrapError
from agy_host_harness.conversation import Conversation
from agy_host_harness.process import HarnessProcess, SpawnError
from agy_host_harness.questions import answer_of, questions_of
from agy_host_harness.questions import response as question_response
from agy_host_harness.retries import RetryWatch, Trouble
from agy_host_harness.turn import HarnessTurn

if TYPE_CHECKING:
    from agy_host.engine.trace import TraceTap, WireTrace
    from agy_host_harness.engine import HarnessEngine

#: The harness engine's name for the wire trace, older than ``--trace`` (the
#: recordings and the parity rig use it): an alias of ``AGY_HOST_TRACE`` for
#: this engine, ignored when the host traces already.
RECORD_ENV = "AGY_HOST_HARNESS_RECORD"
#: A harness that does not answer a WebSocket ping within this many seconds
#: after a halt is stopped or frozen (a live one answers in milliseconds).
FROZEN_AFTER_S = 1.0
ALLOW = PermissionOption(option_id="allow", name="Allow", kind="allow_once")
#: The harness has no memory of its own for a dynamic decision: agy-host's
#: broker remembers this one for the tool, for the rest of the host session
#: (:mod:`agy_host.service.remembered`); its name says which tool.
ALLOW_ALWAYS = "allow_always"
REJECT = PermissionOption(option_id="reject", name="Deny", kind="reject_once")


def options_for(tool: str) -> list[PermissionOption]:
    """What the person is offered for a dynamic decision about ``tool``."""
    always = PermissionOption(
        option_id=ALLOW_ALWAYS, name=f"Allow {tool or 'this tool'} for the rest of this session", kind="allow_always"
    )
    return [ALLOW, always, REJECT]


class HarnessDriver:
    engine_name = "harness"

    def __init__(self, engine: HarnessEngine, nursery: trio.Nursery) -> None:
        self.engine = engine
        self.settings = engine.settings
        self._nursery = nursery
        self.harness: HarnessProcess | None = None
        self._start_lock = trio.Lock()
        self._session_locks: dict[str, trio.Lock] = {}
        self.conversations: dict[str, Conversation] = {}
        self._calls: dict[str, Conversation] = {}
        #: The conversation each running turn was sent on (by turn id), so an
        #: abort that cancels the turn mid-wait still knows where to halt.
        self._conversation_of: dict[int, Conversation] = {}
        self.lifecycle = Lifecycle()
        self.turns: DriverTurns[HarnessTurn] = DriverTurns(nursery, self.lifecycle)
        self.state = "idle"
        self.closed = False
        self.last_conversation: str | None = None
        #: The model endpoint answered a connection (:meth:`_reach_endpoint`).
        self._endpoint_reached = False
        self.trace, self._own_trace = _wire_trace(engine)
        self.stats = dict.fromkeys(
            ("spawns", "turns", "conversations", "resumes", "reopens", "host_tools", "permissions", "bad_frames"), 0
        )

    # -- contract ---------------------------------------------------------------------

    async def run(self, request: TurnRequest) -> TurnHandle:
        if self.closed:
            raise RuntimeError("harness driver is shut down")
        self.turns.supersede(request.session)
        self.stats["turns"] += 1
        turn = HarnessTurn(request, RetryWatch(self.settings, self.engine.endpoint))
        return self.turns.start(turn, self._turn_task)

    def reentry(self) -> TurnHandle | None:
        return self.turns.reentry()

    def kick_idle(self) -> None:
        self.turns.kick_idle()

    def deliver_tool_result(self, call_id: str, result: ToolResult) -> bool:
        """The turn layer's answer to a host tool call this driver parked."""
        conversation = self._calls.pop(call_id, None)
        if conversation is None:
            return False
        response: dict[str, Any] = {"id": call_id}
        if result.is_error:
            response["errorMessage"] = result.text or "the host tool failed"
        else:
            response["responseJson"] = msgspec.json.encode({"output": result.text}).decode()
        if result.images:  # (base64, mime type) pairs, as the harness's media
            response["supplementalMedia"] = [{"mimeType": mime, "data": data} for data, mime in result.images]
        self._nursery.start_soon(conversation.send, {"toolResponse": response})
        self.lifecycle.add("host-tool-answered", callId=call_id, error=result.is_error)
        return True

    async def close_session(self, session: str) -> None:
        """End ``session``'s conversation and keep the process for the others
        (a keeper's shared harness, when one session leaves it)."""
        conversation = self.conversations.pop(session, None)
        if conversation is not None:
            self.lifecycle.add("session-left", session=session)
            await conversation.aclose()

    def snapshot(self) -> DriverSnapshot:
        harness = self.harness
        extra: dict[str, Any] = {
            "binary": f"{self.engine.binary.path} ({self.engine.binary.source})",
            "endpoint": self.engine.endpoint.describe(),
            "conversations_open": len([c for c in self.conversations.values() if not c.closed]),
        }
        if harness is not None:
            if harness.ready_after_s is not None:
                extra["start_ms"] = round(harness.ready_after_s * 1000)
            if harness.lines:
                extra["harness_stderr"] = list(harness.lines)[-5:]
        return DriverSnapshot(
            engine="harness",
            state=self.state,
            pid=harness.pid if harness is not None and harness.alive else None,
            conversation_id=self.last_conversation,
            stats=dict(self.stats),
            lifecycle=self.lifecycle.entries(),
            extra=extra,
        )

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        for turn in list(self.turns.open.values()):
            turn.handle.finish(turn.failed("harness driver closed mid-turn", "internal"))
            turn.scope.cancel()
        with trio.CancelScope(shield=True):
            for conversation in list(self.conversations.values()):
                await conversation.aclose()
            harness, self.harness = self.harness, None
            if harness is not None:
                await harness.close()
                self.lifecycle.add("exit", pid=harness.pid, code=harness.returncode, why="shutdown")
        if self._own_trace is not None:
            self._own_trace.close()
        self.state = "closed"

    # -- frames (the conversation readers) ------------------------------------------------

    def on_frame(self, conversation: Conversation, event: wire.OutputEvent) -> None:
        turn = conversation.turn
        if event.usage_update is not None and event.usage_update.total is not None:
            conversation.usage = event.usage_update.total
        if turn is None or turn.handle.closed:
            if event.tool_call is not None:
                self._nursery.start_soon(conversation.send, _no_turn_answer(event.tool_call.id))
            elif event.policy_decision_request is not None:
                self._nursery.start_soon(conversation.send, _deny(event.policy_decision_request, "no turn is running"))
            elif event.call_hook_request is not None:
                self._nursery.start_soon(conversation.send, _no_turn_hook(event.call_hook_request))
            return
        turn.on_event(event)
        if (call := event.tool_call) is not None:
            self._host_tool(conversation, turn, call)
        elif (ask := event.policy_decision_request) is not None:
            self._nursery.start_soon(self._decide, conversation, turn, ask)
        elif (step := event.step_update) is not None and step.questions_request is not None:
            key = (step.trajectory_id, step.step_index)
            if step.state.endswith("WAITING_FOR_USER") and key not in turn.questions_seen:
                turn.questions_seen.add(key)
                self._nursery.start_soon(self._questions, conversation, turn, step)
        elif (hook := event.call_hook_request) is not None:
            # the pre-tool hook while the host gates tools; any other answered empty
            self._nursery.start_soon(pre_tool.answer, self, conversation, turn, hook)

    def on_bad_frame(self, conversation: Conversation, frame: str, error: str) -> None:
        self.stats["bad_frames"] += 1
        if self.stats["bad_frames"] <= 3:
            self.lifecycle.add("bad-frame", error=error[:200], head=frame[:120])
        turn = conversation.turn
        if turn is not None:
            turn.wire_notice(f"the harness sent a frame that could not be read ({error}); skipped: {frame[:80]!r}")

    def on_conversation_closed(self, conversation: Conversation, reason: str) -> None:
        self.lifecycle.add("conversation-closed", session=conversation.session, reason=reason)
        if self.conversations.get(conversation.session) is conversation:
            del self.conversations[conversation.session]
        for call_id in [c for c, conv in self._calls.items() if conv is conversation]:
            del self._calls[call_id]
        turn = conversation.turn
        if turn is not None:
            turn.on_closed(reason)

    def _host_tool(self, conversation: Conversation, turn: HarnessTurn, call: wire.ToolCall) -> None:
        try:
            args = msgspec.json.decode(call.arguments_json or "{}")
        except (msgspec.DecodeError, RecursionError):
            args = {"arguments": call.arguments_json}
        if not isinstance(args, dict):
            args = {"arguments": args}
        self._calls[call.id] = conversation
        self.stats["host_tools"] += 1
        turn.host_calls += 1
        if not turn.handle.push_external(BridgeCallActivity(call_id=call.id, name=call.name, args=args)):
            self._calls.pop(call.id, None)
            self._nursery.start_soon(conversation.send, _no_turn_answer(call.id))
        else:
            self.lifecycle.add("host-tool", tool=call.name, callId=call.id)

    async def _decide(self, conversation: Conversation, turn: HarnessTurn, ask: wire.PolicyDecisionRequest) -> None:
        """A dynamic policy rule: the host's policy answers, always, bounded."""
        args = ask.tool_args or wire.PreToolArgs()
        try:
            parsed = msgspec.json.decode(args.arguments_json or "{}")
        except (msgspec.DecodeError, RecursionError):
            parsed = {"arguments": args.arguments_json}
        tool_args = parsed if isinstance(parsed, dict) else {"arguments": parsed}
        title = permission_title(args.tool_name, tool_args)
        options = options_for(args.tool_name)
        request = PermissionRequest(
            session=turn.request.session,
            call_id=args.call_id or ask.request_id,
            title=title,
            options=options,
            tool_kind="execute" if args.tool_name == "run_command" else "edit",
            tool_name=args.tool_name,
            args=tool_args,
            skip_permissions=turn.request.skip_permissions,
            origin="" if args.trajectory_id in ("", turn.mapper.main) else f"subagent {args.trajectory_id[:8]}",
        )
        self.stats["permissions"] += 1
        turn.permissions_asked += 1
        bound = self.engine.ctx.config.turn.permission_timeout_seconds
        decision = await turn.decide_permission(self.engine.ctx.decide_permission, request, bound_s=bound)
        allowed = decision.option_id in (ALLOW.option_id, ALLOW_ALWAYS)
        if not allowed:
            turn.permissions_denied += 1
        turn.emit(
            PermissionActivity(
                call_id=request.call_id,
                title=title,
                options=options,
                selected=decision.option_id,
                policy=decision.policy,
                reason=decision.reason,
            )
        )
        if allowed:
            answer = {"requestId": ask.request_id, "outcome": "POLICY_EVALUATION_OUTCOME_ALLOW"}
            await conversation.send({"policyDecisionResponse": answer})
        else:
            why = decision.reason or f"denied by agy-host's permission policy {decision.policy!r}"
            await conversation.send(_deny(ask, why))

    async def _questions(self, conversation: Conversation, turn: HarnessTurn, step: wire.StepUpdate) -> None:
        """The model's ``ask_question``: each question to the host's broker, the
        answers back in one ``questionResponse``; always sent, bounded."""
        origin = "" if step.trajectory_id in ("", step.cascade_id) else f"subagent {step.trajectory_id[:8]}"
        asked = questions_of(step.questions_request, turn.request.session, origin)
        bound = self.engine.ctx.config.turn.permission_timeout_seconds
        answers = []
        for question in asked:
            if question.kind != "choice":
                answers.append({"unanswered": True})
                continue
            answer = await turn.ask(self.engine.ctx.ask_question, question, bound_s=bound)
            answers.append(answer_of(question, answer))
        self.lifecycle.add("questions", count=len(asked), step=step.step_index)
        await conversation.send(question_response(step.trajectory_id, step.step_index, answers))

    # -- the harness process and conversations --------------------------------------------

    def start_reader(self, conversation: Conversation) -> None:
        """Route ``conversation``'s frames to this driver until its socket closes."""
        self._nursery.start_soon(conversation.read, self)

    async def harness_process(self) -> HarnessProcess:
        """The running harness, started (and bootstrapped) when there is none."""
        async with self._start_lock:
            harness = self.harness
            if harness is not None and harness.alive:
                return harness
            binary = self.engine.binary
            if not binary.found:
                raise TurnFailed(f"the harness binary cannot be used: {binary.problem}; {INSTALL_HINT}", "spawn")
            self.state = "starting"
            self.stats["spawns"] += 1
            paths = self.engine.paths
            try:
                harness = await HarnessProcess.start(
                    self._nursery,
                    binary.path,
                    env=self.engine.harness_env(),
                    cwd=str(paths.home),
                    storage_dir=str(paths.storage),
                    timeout_s=self.settings.start_timeout_seconds,
                    trace=self.trace,
                )
            except (SpawnError, BootstrapError, OSError) as exc:
                self.state = "dead"
                self.lifecycle.add("spawn-failed", error=str(exc)[:300])
                raise TurnFailed(f"could not start the harness ({binary.source}): {exc}", "spawn") from exc
            self.harness = harness
            for stale in list(self.conversations.values()):
                await stale.aclose()
            self.conversations.clear()
            self.lifecycle.add("spawn", pid=harness.pid, ms=round((harness.ready_after_s or 0) * 1000))
            self._nursery.start_soon(self._watch_exit, harness)
            return harness

    async def _watch_exit(self, harness: HarnessProcess) -> None:
        await harness.exited.wait()
        if harness is self.harness and not self.closed:
            self.lifecycle.add("exit", pid=harness.pid, code=harness.returncode, reason=harness.reason()[:200])
            self.harness = None
            self.state = "dead"
            for conversation in list(self.conversations.values()):
                if conversation.turn is not None:
                    conversation.turn.on_closed(f"exit code {harness.returncode}")
                await conversation.aclose()

    # -- one turn ------------------------------------------------------------------------

    async def _turn_task(self, turn: HarnessTurn) -> None:
        result: OutcomeActivity | None = None
        lock = self._session_locks.setdefault(turn.request.session, trio.Lock())
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._watch_abort, turn)
                nursery.start_soon(turn.timers.watch)
                try:
                    async with lock:
                        try:
                            with turn.scope:
                                result = await self._drive(turn)
                        finally:
                            conversation = self._conversation_of.pop(turn.handle.turn_id, None)
                            if result is None:
                                result = await self._interrupted(turn, conversation)
                            if conversation is not None and conversation.turn is turn:
                                conversation.turn = None
                finally:
                    turn.timers.stop()
                    nursery.cancel_scope.cancel()
        except Exception as exc:  # a bug must surface as a turn error, never a hang
            self.lifecycle.add("turn-crashed", error=repr(exc)[:300])
            result = turn.failed(f"harness turn failed: {type(exc).__name__}: {exc}", "internal")
        finally:
            self.turns.done(turn)
            self.state = "ready" if self.harness is not None and self.harness.alive else self.state
        if turn.conversation_id:
            self.last_conversation = turn.conversation_id
        turn.handle.finish(result or turn.failed("the harness turn ended without an outcome", "internal"))

    async def _watch_abort(self, turn: HarnessTurn) -> None:
        await turn.handle.abort_requested.wait()
        turn.aborted = True
        self.lifecycle.add("abort", reason=turn.handle.abort_reason, session=turn.request.session)
        turn.cancel_permissions()
        turn.scope.cancel()

    async def _drive(self, turn: HarnessTurn) -> OutcomeActivity:
        req = turn.request
        try:
            system_block, blocks = prompting.split_system(req.prompt)
            parts = prompting.user_parts(blocks)
        except TurnFailed as exc:
            return turn.failed(str(exc), exc.kind)
        self.lifecycle.add("turn-start", session=req.session, turn=turn.handle.turn_id)
        conversation: Conversation | None = None
        with turn.timers.scope:
            turn.timers.arm()
            try:
                unreachable = await self._reach_endpoint()
                if unreachable is not None:
                    return turn.failed(unreachable, "agent", "UNREACHABLE")
                conversation = await opening.conversation_for(self, turn, system_block)
            except TurnFailed as exc:
                return turn.failed(str(exc), exc.kind)
            self._conversation_of[turn.handle.turn_id] = conversation
            conversation.turn = turn
            turn.start(conversation.cascade_id, conversation.usage)
            self.state = "running"
            if not await conversation.send({"userInput": {"parts": parts}}):
                return turn.failed(f"the harness closed the conversation: {conversation.close_reason}", "exited")
            turn.sent = True
            turn.retries.progress()  # a streak of failed model calls is measured from here
            gave_up = await self._until_idle(turn)
        fired = turn.timers.expired()
        kind: ErrorKind = "timeout" if fired == "deadline" else "inactivity"
        if conversation is None or not turn.sent:
            return turn.failed(f"the harness did not start a conversation within the {fired or 'turn'} budget", kind)
        if fired is not None and not turn.wire_done.is_set():
            await self._halt(turn, conversation, f"timer:{fired}")
            turn.emit_usage()
            if fired == "deadline":
                return turn.failed(f"the harness exceeded the {minutes(req.timeout_s)} turn deadline", kind)
            return turn.failed(f"the harness was silent for {minutes(req.inactivity_s)}", kind)
        if gave_up is not None and not turn.wire_done.is_set():
            await self._halt(turn, conversation, f"retry budget: {gave_up.code}")
            turn.emit_usage()
            self._endpoint_reached = self._endpoint_reached and gave_up.kind != "connect"
            return turn.failed(turn.retries.gave_up(gave_up, by_harness=False), "agent", gave_up.code)
        turn.emit_usage()
        harness = conversation.harness
        if turn.socket_closed and harness.alive:
            with trio.move_on_after(0.5):  # a socket that drops mid-turn: is the harness going too?
                await harness.exited.wait()
        return outcome.settle(turn, harness)

    async def _reach_endpoint(self) -> str | None:
        """Start the harness; the first time (and after a turn could not
        reach the endpoint), check the endpoint meanwhile
        (:mod:`.reachability`): a wrong URL fails the turn at once, naming
        it, instead of after the connection retry budget."""
        if self._endpoint_reached:
            await self.harness_process()
            return None
        problem = await reachability.problem_while(
            self._nursery, self.harness_process, self.engine.endpoint, self.engine.harness_env()
        )
        self._endpoint_reached = problem is None
        if problem is not None:
            self.lifecycle.add("endpoint-unreachable", error=problem[:300])
        return problem

    async def _until_idle(self, turn: HarnessTurn) -> Trouble | None:
        """Until the main trajectory is idle; or the model API's trouble
        that outlasted its retry budget (:mod:`.retries`), returned."""
        gave_up: Trouble | None = None
        async with trio.open_nursery() as nursery:

            async def budgets() -> None:
                nonlocal gave_up
                gave_up = await turn.retries.exhausted()
                self.lifecycle.add("retry-budget-spent", session=turn.request.session, code=gave_up.code)
                nursery.cancel_scope.cancel()

            nursery.start_soon(budgets)
            await turn.wire_done.wait()
            nursery.cancel_scope.cancel()
        return gave_up

    async def _interrupted(self, turn: HarnessTurn, conversation: Conversation | None) -> OutcomeActivity:
        """Aborted (or cancelled) while the harness worked on the turn: its own cancel."""
        if conversation is not None and turn.sent and not turn.wire_done.is_set():
            await self._halt(turn, conversation, "abort" if turn.aborted else "turn interrupted")
        turn.emit_usage()
        return turn.failed("the turn was interrupted", "internal")

    async def _halt(self, turn: HarnessTurn, conversation: Conversation | None, why: str) -> None:
        """``haltRequest``, then wait for idle within the cancel grace; else
        drop the socket (the conversation resumes next turn).

        A harness that does not even answer a WebSocket ping within
        :data:`FROZEN_AFTER_S` is stopped or frozen: it would never go idle,
        and closing its stdin at exit would wait out that grace too. It is
        killed at once (its group, SIGTERM then SIGKILL), so Ctrl-C ends the
        command in about a second instead of the cancel grace plus the exit
        graces (7.7 s), and the next turn starts a new harness that resumes
        the conversation from its storage."""
        if conversation is None:
            return
        with trio.CancelScope(shield=True):
            self.lifecycle.add("halt", reason=why, session=turn.request.session)
            frozen = False
            with trio.move_on_after(self.settings.cancel_grace_seconds):
                if await conversation.send({"haltRequest": True}):
                    async with trio.open_nursery() as nursery:

                        async def idle() -> None:
                            await turn.wire_done.wait()
                            nursery.cancel_scope.cancel()

                        nursery.start_soon(idle)
                        bound = min(FROZEN_AFTER_S, self.settings.cancel_grace_seconds)
                        if not await conversation.ws.answers_ping(bound):
                            frozen = True
                            nursery.cancel_scope.cancel()
            if turn.wire_done.is_set():
                return
            self.lifecycle.add("halt-timeout", session=turn.request.session, frozen=frozen)
            if frozen:
                await self._end_frozen(turn, conversation.harness)
            await conversation.aclose()

    async def _end_frozen(self, turn: HarnessTurn, harness: HarnessProcess) -> None:
        self.lifecycle.add("harness-frozen", pid=harness.pid)
        turn.emit(
            NoticeActivity(
                level="warning",
                message=f"the harness (pid {harness.pid}) answers nothing, not even a ping: it is stopped or frozen, "
                "so it is ended; the next turn starts it again and resumes the conversation",
                code="harness-frozen",
            )
        )
        await harness.terminate(0)  # it can handle neither stdin's EOF nor SIGTERM now


def _no_turn_answer(call_id: str) -> dict[str, Any]:
    return {"toolResponse": {"id": call_id, "errorMessage": "no agy-host turn is running to answer this host tool"}}


def _no_turn_hook(hook: wire.CallHookRequest) -> dict[str, Any]:
    """A hook asked with no turn to answer it: a step is refused, anything else answered empty."""
    if hook.type == pre_tool.PRE_TOOL:
        result: dict[str, Any] = {"preToolResult": {"decision": "DENY", "reason": "no agy-host turn is running"}}
    else:
        result = {"emptyResult": {}}
    return {"callHookResponse": {"requestId": hook.request_id, **result}}


def _deny(ask: wire.PolicyDecisionRequest, reason: str) -> dict[str, Any]:
    return {
        "policyDecisionResponse": {
            "requestId": ask.request_id,
            "outcome": "POLICY_EVALUATION_OUTCOME_DENY",
            "denyReason": reason,
        }
    }


def permission_title(tool: str, args: dict[str, Any]) -> str:
    if tool == "run_command":
        return f"Run: {args.get('CommandLine', '')}".strip()
    target = args.get("TargetFile") or args.get("AbsolutePath") or ""
    return f"{tool} {target}".strip()


def _wire_trace(engine: HarnessEngine) -> tuple[TraceTap | None, WireTrace | None]:
    """The host's wire trace; else ``$AGY_HOST_HARNESS_RECORD``'s (the same
    trace under this engine's older name), opened here and closed with the
    driver (the second value)."""
    tap = engine.wire_trace()
    path = engine.ctx.env.get(RECORD_ENV, "").strip()
    if tap is not None or not path:
        return tap, None
    from agy_host.engine.trace import WireTrace

    own = WireTrace.open(path, env=engine.ctx.env, config=engine.ctx.config)
    return own.tap(engine.ENGINE_NAME), own


def open_driver(engine: HarnessEngine) -> contextlib.AbstractAsyncContextManager[HarnessDriver]:
    return driver_scope(lambda nursery: HarnessDriver(engine, nursery), owner=engine)


__all__ = ["RECORD_ENV", "HarnessDriver", "open_driver"]
