"""The engine-agnostic turn layer: one host turn from prompt to ``TurnEnded``.

It sits between whoever asks for a turn (the CLI, a script) and the selected
engine's :class:`~agy_host.engine.driver.TurnDriver`:

* finds the session's agent conversation in the store (per-engine key);
* assembles the prompt from the ``agy_host_prompt_parts`` hook (system parts
  only for a new conversation, so the agent's prompt cache keeps hitting); a
  slash command goes alone and verbatim, its conversation's system parts held
  back for the first plain prompt (kept in the binding);
* maps the engine's Activities to HostEvents for the renderer and the
  ``agy_host_render_event`` hook: a tool call sent twice stays one card, a
  turn that streamed nothing still shows its response, usage is reported as
  absent when the agent said nothing;
* stores the conversation binding as soon as the engine knows a new
  conversation (:meth:`~agy_host.engine.driver.TurnHandle.on_conversation`),
  and again whenever the outcome names one, also for failed and aborted
  turns, so Ctrl-C never loses a session, not even a turn left behind;
* turns the outcome into an exit code.

A host tool call ends :meth:`TurnLayer.run_turn` with stop reason
``tool_use`` *without* closing the agent's turn; after the host ran the tool
(:mod:`agy_host.runtime.turn_tools`) and delivered its result,
:meth:`TurnLayer.continue_turn` re-enters the same
agent turn and goes on reading. With a :class:`~agy_host.service.roundtrips.RoundTrips`
(the bridge's calls) the layer is the round-trips' :class:`ParkTarget`: they
park and unpark the turn they find here, and results whose park died come
back as a late-delivery prompt at the start of the next fresh turn.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

import trio

from agy_host import config as config_mod
from agy_host.contract.answer import RESPONSE_OPTIONAL_ATTR, spooled_answer
from agy_host.contract.events import (
    AgentCommand,
    BridgeCallActivity,
    ErrorKind,
    HostEvent,
    Notice,
    OutcomeActivity,
    StopReason,
    TextDelta,
    ToolUseRequested,
    TurnEnded,
    TurnStarted,
    UsageActivity,
)
from agy_host.contract.prompt import PromptBlock, prompt_text
from agy_host.contract.prompt_parts import PromptContext, is_slash_command
from agy_host.contract.run_context import TurnContext
from agy_host.contract.tools import HostTool
from agy_host.contract.turn_result import ToolResultSink, TurnLayerError, TurnResult, exit_code_for
from agy_host.engine.driver import TurnDriver, TurnHandle, TurnRequest
from agy_host.exit_codes import ExitCode
from agy_host.runtime.answer_spool import AnswerText
from agy_host.runtime.budget import Budget, crossed, settle
from agy_host.runtime.modes import no_plan_mode, plans
from agy_host.runtime.store import SessionBinding, SessionStore, utc_now
from agy_host.runtime.turn_events import TurnState, closed_error, map_activity
from agy_host.runtime.turn_prompt import PROMPT_SEPARATOR, assemble_prompt, with_late_results
from agy_host.runtime.turn_tools import resolve_tool_use as _resolve_tool_use

if TYPE_CHECKING:
    from agy_host.config import Config
    from agy_host.engine.base import Engine
    from agy_host.plugins import Plugins
    from agy_host.service.roundtrips import RoundTrips

NO_TURN_RUNNING = "tool result arrived but no turn is running"

EventSink = Callable[[HostEvent], None]


_P = ParamSpec("_P")
_R = TypeVar("_R")


def held_back(text: str) -> str:
    """The notice of a conversation whose system block waits for its first plain prompt."""
    command = text.split(maxsplit=1)[0]
    return (
        f"{command} goes to the agent alone, as typed (a slash command); the system prompt and "
        "AGENTS.md go with the next message of this conversation"
    )


def _with_own_config(
    method: Callable[Concatenate[TurnLayer, _P], Awaitable[_R]],
) -> Callable[Concatenate[TurnLayer, _P], Awaitable[_R]]:
    """Run a turn entry point with the layer's config as the one built-in
    plugins read (:func:`agy_host.config.using`)."""

    @functools.wraps(method)
    async def bound(layer: TurnLayer, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with config_mod.using(layer.config):
            return await method(layer, *args, **kwargs)

    return bound


class TurnLayer:
    """Runs host turns on one engine's driver. One turn at a time."""

    def __init__(
        self,
        *,
        engine: Engine,
        driver: TurnDriver,
        store: SessionStore,
        plugins: Plugins,
        config: Config,
        sink: EventSink | None = None,
        warn: Callable[[str], None] | None = None,
        roundtrips: RoundTrips | None = None,
        env: Mapping[str, str] | None = None,
        diffs_wanted: Callable[[], bool] | None = None,
        spill_answer: bool = False,
    ) -> None:
        self.engine = engine
        #: The command asked for no answer in memory (``agy-host run``): a long
        #: one goes to a file as it streams, and ``TurnEnded`` elides it where
        #: every observer can do without (``contract/answer.py``).
        self.spill_answer = spill_answer
        self.driver = driver
        self.store = store
        self.plugins = plugins
        self.config = config
        self._sink = sink
        self._warn = warn or (lambda _m: None)
        self._turn: TurnState | None = None
        self._abort_reason: str | None = None
        self._failed_hooks: set[str] = set()
        self.roundtrips = roundtrips
        self.env: Mapping[str, str] = env if env is not None else os.environ
        self._diffs_wanted = diffs_wanted or (lambda: False)
        #: The slash commands this agent advertised last (ACP sends them once
        #: per session, often in its first turn): ``chat`` completes and
        #: routes them, ``doctor`` lists them.
        self.agent_commands: list[AgentCommand] = []
        if roundtrips is not None:
            roundtrips.attach(self)

    # -- state -------------------------------------------------------------------

    @property
    def parked(self) -> bool:
        """True while a turn waits for a host tool result."""
        return self._turn is not None and self._turn.parked

    @property
    def handle(self) -> TurnHandle | None:
        return self._turn.handle if self._turn is not None else None

    # -- ParkTarget (the round-trips' view of this layer) ------------------------------

    def active_handle(self) -> TurnHandle | None:
        """The running turn's handle (parked or not); ``None`` between turns."""
        turn = self._turn
        if turn is None or turn.handle is None or turn.handle.closed:
            return None
        return turn.handle

    def unpark(self) -> None:
        self.driver.kick_idle()

    def _owned(self, call_id: str) -> bool:
        return self.roundtrips is not None and self.roundtrips.owns(call_id)

    def abort(self, reason: str = "user") -> None:
        """Abort the running turn; a turn not started yet is aborted as soon
        as its handle exists (Ctrl-C during the agent's start-up)."""
        self._abort_reason = reason
        handle = self.handle
        if handle is not None:
            handle.abort(reason)

    # -- events --------------------------------------------------------------------

    def emit(self, event: HostEvent) -> None:
        """To the renderer, then to every render hook. Neither may kill the
        turn: a failure is reported once and that consumer is dropped."""
        if self._sink is not None:
            try:
                self._sink(event)
            except Exception as exc:
                self._sink = None
                self._warn(f"the renderer failed ({type(exc).__name__}: {exc}); output stops, the turn goes on")
        self.plugins.render_event(event, skip=self._failed_hooks, on_error=self._hook_failed)

    def _response_optional(self) -> bool:
        """The renderer and every render hook can do without
        ``TurnEnded.response`` in memory (``contract/answer.py``). A wrapped or
        third-party renderer that did not say so keeps the response whole."""
        sink = self._sink
        owner = getattr(sink, "__self__", sink)
        if sink is not None and getattr(owner, RESPONSE_OPTIONAL_ATTR, False) is not True:
            return False
        return self.plugins.response_optional()

    def _hook_failed(self, plugin: str, exc: BaseException) -> None:
        self._warn(
            f"plugin {plugin!r} failed in agy_host_render_event ({type(exc).__name__}: {exc}); "
            "it is skipped for the rest of this turn"
        )

    # -- running ---------------------------------------------------------------------

    @_with_own_config
    async def run_turn(
        self,
        session: str,
        prompt: Sequence[PromptBlock],
        *,
        cwd: str,
        model: str | None = None,
        effort: str | None = None,
        mode: str | None = None,
        skip_permissions: bool | None = None,
        timeout_s: float | None = None,
        inactivity_s: float | None = None,
        message_count: int | None = None,
        additional_directories: Sequence[str] = (),
        max_tokens: int | None = None,
        max_cost: float | None = None,
        resume: bool = False,
    ) -> TurnResult:
        """Run one turn on ``session``; flags given here win over the config."""
        if self.parked:
            raise TurnLayerError("a turn is parked on a host tool call; continue or abort it first")
        self._failed_hooks = set()
        slash = is_slash_command(prompt_text(list(prompt)))
        # a slash command goes alone: late results wait for the next plain prompt
        late = self.roundtrips.take_late_results() if self.roundtrips is not None and not slash else []
        if late:
            prompt = with_late_results(prompt, late)
        key = self.engine.store_key(session)
        binding = self.store.get(key)
        turn = TurnState(session=session, key=key, cwd=cwd, binding=binding, started_at=trio.current_time())
        turn.answer = AnswerText(spill=self.spill_answer)
        turn.message_count = message_count
        self._turn = turn
        cfg = self.config
        turn.budget = Budget(
            max_tokens=cfg.turn.max_tokens if max_tokens is None else max_tokens,
            max_cost=cfg.turn.max_cost if max_cost is None else max_cost,
        )
        mode = mode or cfg.mode or None
        request = TurnRequest(
            session=session,
            prompt=self._prompt(turn, list(prompt), late=bool(late), slash=slash),
            cwd=cwd,
            conversation_id=binding.conversation_id if binding else None,
            model=model or cfg.model or None,
            effort=effort or cfg.effort or None,
            mode=mode,
            skip_permissions=cfg.skip_permissions if skip_permissions is None else skip_permissions,
            timeout_s=cfg.turn.timeout_minutes * 60 if timeout_s is None else timeout_s,
            inactivity_s=cfg.turn.inactivity_minutes * 60 if inactivity_s is None else inactivity_s,
            additional_directories=list(additional_directories),
            resume=resume and binding is not None,
        )
        started = TurnStarted(
            session=session,
            engine=self.engine.ENGINE_NAME,
            agent=self.engine.agent_label(),
            model=request.model or "",
            conversation_id=request.conversation_id,
            sandbox=self.engine.sandbox,
        )
        if binding is not None and binding.agent and binding.agent != self.engine.agent_label():
            started_notice: Notice | None = Notice(
                level="warning",
                message=f"session {session!r} was bound to agent {binding.agent!r}; resuming it with "
                f"{self.engine.agent_label()!r}",
            )
        else:
            started_notice = None
        if mode == "plan" and not plans(self.engine):
            self.emit(started)
            return self._fail(turn, no_plan_mode(self.engine), "usage")
        try:
            handle = await self.driver.run(request)
        except Exception as exc:
            if late and self.roundtrips is not None:
                self.roundtrips.return_late_results(late)
            self.emit(started)
            return self._fail(turn, f"the agent could not start the turn: {type(exc).__name__}: {exc}", "internal")
        turn.handle = handle
        handle.on_conversation(functools.partial(self._conversation_known, turn))
        if self._abort_reason is not None:
            handle.abort(self._abort_reason)
        self.emit(started)
        if started_notice is not None:
            self.emit(started_notice)
        if turn.system_held_back:  # said once, when a conversation starts with a command
            self.emit(Notice(level="info", message=held_back(prompt_text(list(prompt))), code="slash-command"))
        return await self._read(turn)

    @_with_own_config
    async def continue_turn(self) -> TurnResult:
        """Re-enter the parked turn after its host tool result was delivered."""
        turn = self._turn
        handle: TurnHandle | None = None
        owned = turn is not None and turn.handle_request is not None and self._owned(turn.handle_request.call_id)
        if turn is not None and turn.parked and owned:
            # The round-trips unpark their own parks (also when the park timed
            # out while the tool ran), so the handle is read as it is.
            handle = turn.handle
        elif turn is not None and turn.parked:
            handle = self.driver.reentry()
            if (
                handle is None
                and turn.handle is not None
                and (turn.handle.closed or turn.handle.abort_requested.is_set())
            ):
                handle = turn.handle  # it settled while parked: read its outcome
        if turn is None or handle is None:
            if turn is None:
                turn = TurnState(session="", key="", cwd="", binding=None, started_at=trio.current_time())
            turn.parked = False
            self._turn = None
            return self._fail(turn, NO_TURN_RUNNING, "internal")
        turn.parked = False
        turn.handle = handle
        if not owned:
            self.driver.kick_idle()
        return await self._read(turn)

    @_with_own_config
    async def resolve_tool_use(self, tools: Mapping[str, HostTool], sinks: Sequence[ToolResultSink]) -> TurnResult:
        """Run the host tool the parked turn asked for, hand its result to the
        first sink that knows the call, and continue the turn
        (:func:`agy_host.runtime.turn_tools.resolve_tool_use`)."""
        return await _resolve_tool_use(self, tools, sinks)

    def _prompt(self, turn: TurnState, prompt: list[PromptBlock], *, late: bool, slash: bool) -> list[PromptBlock]:
        session, cwd, binding = turn.session, turn.cwd, turn.binding
        new = binding is None
        # system parts go with the conversation's first plain prompt
        due = binding is None or binding.system_pending
        text = prompt_text(prompt)

        def start_failed(plugin: str, exc: BaseException) -> None:
            self._warn(f"plugin {plugin!r} failed in agy_host_turn_started ({type(exc).__name__}: {exc})")

        started = TurnContext(
            session=session,
            engine=self.engine.ENGINE_NAME,
            cwd=cwd,
            user_text=text,
            new_conversation=new,
            config=self.config,
            env=self.env,
            diffs_wanted=self._diffs_wanted(),
            warn=self._warn,
        )
        self.plugins.turn_started(started, on_error=start_failed)
        ctx = PromptContext(
            session=session,
            engine=self.engine.ENGINE_NAME,
            cwd=cwd,
            new_conversation=due,
            user_text=text,
            slash_command=slash,
            conversation_id=binding.conversation_id if binding is not None else None,
            config=self.config,
        )

        def failed(plugin: str, exc: BaseException) -> None:
            self._warn(
                f"plugin {plugin!r} failed in agy_host_prompt_parts ({type(exc).__name__}: {exc}); "
                "its parts are left out"
            )

        parts = self.plugins.prompt_parts(ctx, on_error=failed)
        if slash:
            # Agents run a prompt as a command only when its first text starts
            # with it: nothing goes in front. The system block waits for the
            # first plain prompt, unless the engine carries it out of band.
            out_of_band = self.engine.capabilities.system_out_of_band
            system = [p for p in parts if p.where == "system" and p.text] if due else []
            turn.system_pending = due and not out_of_band
            turn.system_held_back = bool(system) and new and not out_of_band
            parts = system if out_of_band else []
        if late:  # a late delivery carries tool results, not a digest
            parts = [p for p in parts if p.where != "context"]
        if not parts:
            return prompt
        suffix = f"{session}/{binding.last_message_count if binding else 0}-{utc_now()}"
        return assemble_prompt(
            parts, prompt, new_conversation=due, resources=self.engine.capabilities.resources, uri_suffix=suffix
        )

    # -- reading ---------------------------------------------------------------------

    async def _read(self, turn: TurnState) -> TurnResult:
        handle = turn.handle
        assert handle is not None
        while True:
            batch, turn.leftover = (turn.leftover, []) if turn.leftover else (await handle.next_batch(), [])
            if not batch:
                # Closed without an outcome in the queue: only a broken engine does that.
                outcome = handle.outcome or OutcomeActivity(
                    status="error",
                    stop_reason="error",
                    error="the engine ended the turn without an outcome",
                    error_kind="internal",
                )
                return self._finish(turn, outcome)
            for i, activity in enumerate(batch):
                if isinstance(activity, OutcomeActivity):
                    return self._finish(turn, activity)
                if isinstance(activity, BridgeCallActivity):
                    turn.leftover = batch[i + 1 :]
                    return self._park(turn, activity)
                map_activity(turn, activity, self.emit, trio.current_time())
                if isinstance(activity, UsageActivity) and turn.budget.active:
                    self._check_budget(turn)

    def _check_budget(self, turn: TurnState) -> None:
        """Usage arrived: over the budget, the turn is stopped now (once)."""
        if turn.budget_hit is not None:
            return
        why = crossed(turn.budget, turn.usage)
        if why is not None:
            turn.budget_hit = why
            self.emit(Notice(level="warning", message=f"stopping the turn: {why}", code="budget"))
            self.abort("budget")

    def _park(self, turn: TurnState, activity: BridgeCallActivity) -> TurnResult:
        turn.parked = True
        turn.host_calls.append(activity.name)
        event = ToolUseRequested(call_id=activity.call_id, name=activity.name, args=activity.args)
        turn.handle_request = event
        self.emit(event)
        return TurnResult(
            session=turn.session,
            stop_reason="tool_use",
            exit_code=ExitCode.OK,
            duration_s=trio.current_time() - turn.started_at,
            conversation_id=turn.binding.conversation_id if turn.binding else None,
            response=turn.answer.text(),
            usage=turn.usage,
            tool_use=event,
            permission_requests=turn.permission_requests,
            permissions_refused=turn.permissions_refused,
            tool_errors=list(turn.tool_errors),
        )

    def _finish(self, turn: TurnState, outcome: OutcomeActivity) -> TurnResult:
        self._turn = None
        self._abort_reason = None
        if turn.commands is not None:
            self.agent_commands = turn.commands
        if self.roundtrips is not None and turn.handle is not None:
            self.roundtrips.turn_ended(turn.handle)
        bound = turn.binding.conversation_id if turn.binding else None
        replaced = bound if bound and outcome.conversation_id not in (None, bound) else None
        if outcome.conversation_id:
            self._bind(turn, outcome.conversation_id)
        # The engine's response is normally the same text as the stream; the
        # stream is joined only when it is the only copy (a 12 MB turn would
        # otherwise be joined, and held, twice).
        streamed = bool(turn.answer)
        if not streamed and outcome.response:
            self.emit(TextDelta(delta=outcome.response))
        stop: StopReason = outcome.stop_reason if outcome.stop_reason != "tool_use" else "stop"
        if outcome.aborted:
            stop = "aborted"
        if turn.budget.active:
            users_abort = self._abort_reason not in (None, "budget")
            settled = settle(turn.budget, turn.usage, outcome, stop, hit=turn.budget_hit, users_abort=users_abort)
            outcome, stop, turn.budget_hit = settled.outcome, settled.stop, settled.hit
            if settled.notice is not None:
                self.emit(Notice(level="warning", message=settled.notice, code="budget"))
        duration = trio.current_time() - turn.started_at
        answer = turn.answer
        elided = not outcome.response and answer.spilled and self._response_optional()
        response = outcome.response or ("" if elided else answer.text())
        error = outcome.error or ("" if stop == "aborted" else closed_error(turn))
        code = exit_code_for(
            stop, outcome.error_kind, turn.permission_requests, turn.permissions_refused, len(turn.unanswered)
        )
        ended = TurnEnded(
            stop_reason=stop,
            duration_s=duration,
            conversation_id=outcome.conversation_id,
            response=response,
            error=error,
            error_kind=outcome.error_kind,
            agent_stop_reason=outcome.agent_stop_reason,
            usage=turn.usage,
            cumulative_usage=turn.cumulative,
            replaced_conversation_id=replaced,
            exit_code=code,
            response_elided=elided,
        )
        try:
            with spooled_answer(answer):
                self.emit(ended)
        finally:
            answer.close()
        return TurnResult(
            session=turn.session,
            stop_reason=stop,
            exit_code=code,
            duration_s=duration,
            conversation_id=outcome.conversation_id or (turn.binding.conversation_id if turn.binding else None),
            response=response,
            error=error,
            error_kind=outcome.error_kind,
            usage=turn.usage,
            cumulative_usage=turn.cumulative,
            permission_requests=turn.permission_requests,
            permissions_refused=turn.permissions_refused,
            replaced_conversation_id=replaced,
            tool_errors=list(turn.tool_errors),
        )

    def _fail(self, turn: TurnState, message: str, kind: ErrorKind) -> TurnResult:
        """End a turn the engine never ran (or lost) as a visible error."""
        outcome = OutcomeActivity(status="error", stop_reason="error", error=message, error_kind=kind)
        return self._finish(turn, outcome)

    def _conversation_known(self, turn: TurnState, conversation_id: str) -> None:
        """The engine named the running turn's conversation: a new one is bound
        now. The turn's end binds it again (with its message count), but a turn
        may never end: a second Ctrl-C stops waiting for an agent that does not
        stop, and a third leaves at once. The session must still continue this
        conversation next time, as ``--help`` and the closing line promise."""
        if self._turn is not turn:
            return  # the turn already ended, and bound what it ended with
        if turn.binding is not None and turn.binding.conversation_id == conversation_id:
            return  # the conversation the session is bound to: nothing to write
        self._bind(turn, conversation_id)

    def _bind(self, turn: TurnState, conversation_id: str) -> None:
        prev = turn.binding
        if turn.message_count is not None:
            count = turn.message_count
        elif prev is not None and prev.conversation_id == conversation_id:
            count = prev.last_message_count
        else:
            count = 0
        binding = SessionBinding(
            conversation_id=conversation_id,
            engine=self.engine.ENGINE_NAME,
            agent=self.engine.agent_label(),
            cwd=turn.cwd,
            updated_at=utc_now(),
            last_message_count=count,
            system_pending=turn.system_pending,
        )
        try:
            self.store.set(turn.key, binding)
        except Exception as exc:
            if turn.unsaved == conversation_id:
                return  # said when the turn's first write failed; one error per conversation
            turn.unsaved = conversation_id
            self.emit(
                Notice(
                    level="error",
                    message=f"could not save session {turn.session!r} (conversation {conversation_id}): {exc}",
                )
            )
        else:
            turn.unsaved = None


__all__ = [
    "NO_TURN_RUNNING",
    "PROMPT_SEPARATOR",
    "EventSink",
    "ToolResultSink",
    "TurnLayer",
    "TurnLayerError",
    "TurnResult",
    "assemble_prompt",
    "exit_code_for",
]
