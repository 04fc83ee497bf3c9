"""The stream-json turn driver: one long-lived agy process, one turn at a time.

A turn goes: the process (reuse it, or start one with the turn's flags;
profile drift recycles it, see :mod:`.profile`), one stdin line, then the
process's stdout until its ``result`` line. Every stdout line is routed to
the current turn; a line from a process that is no longer current (killed,
recycled) is ignored by generation, so a dying agy can never write into the
next turn.

* **Serialization**: one process serves every session, so turns run one at a
  time in arrival order. A new turn on a session whose turn is parked aborts
  the parked one first (otherwise it would wait for itself); a turn on
  another session waits until the parked turn ends.
* **Timers**: the core :class:`~agy_host.engine.timers.TurnTimers` (overall deadline,
  inactivity, parks pause both and keep the remaining budget). When one fires
  the process group is killed and the turn fails visibly.
* **Abort** kills the process group; the outcome is ``aborted`` with the
  partial answer, and the next turn resumes the conversation with
  ``--conversation`` (agy keeps it on disk; nothing is replayed).
* **A failed result retires the process**: stdin is closed so agy exits and
  its exit code and stderr statements are in hand before the outcome is
  decided (exit 1 / 2 / 3 tell a bad model, a misuse and a quota apart).
* **Shutdown** closes stdin, which ends agy cleanly, and kills the group only
  if it does not exit within the grace.
* **agy's exit ends its turn**, not only stdout's EOF: a descendant that
  inherited stdout keeps the pipe open after agy died. The reader gets
  :data:`EXIT_READ_GRACE_S` for the last output, then the turn fails as a
  crash (and the group kill reaps the descendant).
"""

from __future__ import annotations

import collections
import contextlib
import shlex
from typing import TYPE_CHECKING, Any

import trio

from agy_host.contract.events import ErrorKind, NoticeActivity, OutcomeActivity
from agy_host.engine.driver import DriverSnapshot, TurnHandle, TurnRequest
from agy_host.engine.lifecycle import Lifecycle
from agy_host.engine.model_tiers import resolve_effort
from agy_host.engine.timers import minutes
from agy_host.engine.turn import DriverTurns, driver_scope
from agy_host.engine.utf8 import INVALID_UTF8
from agy_host_stream_json import settle
from agy_host_stream_json.outcome import INSTALL_HINT, death_failure, is_statement, is_success
from agy_host_stream_json.process import AgyProcess, SpawnError
from agy_host_stream_json.profile import CONVERSATION_ID, Profile, agy_mode, argv, go_duration, print_timeout
from agy_host_stream_json.profile import recycle_cause as drift
from agy_host_stream_json.prompting import TurnFailed, prompt_to_text
from agy_host_stream_json.turn import Turn
from agy_host_stream_json.wire import Event, InitEvent, ResultEvent, Unknown, encode_user_line

if TYPE_CHECKING:
    from agy_host_stream_json.engine import StreamJsonEngine

#: After agy exits mid-turn, how long its last output gets to arrive (as on ACP).
EXIT_READ_GRACE_S = 0.5


class StreamJsonDriver:
    engine_name = "stream-json"

    def __init__(self, engine: StreamJsonEngine, nursery: trio.Nursery) -> None:
        self.engine = engine
        self._nursery = nursery
        self._cfg = engine.settings
        self._lock = trio.Lock()
        self._child: AgyProcess | None = None
        self._generation = 0
        self._current: Turn | None = None
        self.lifecycle = Lifecycle()
        self.turns: DriverTurns[Turn] = DriverTurns(nursery, self.lifecycle)
        self.state = "idle"
        self.closed = False
        self.stats = dict.fromkeys(("spawns", "turns", "reused", "recycles"), 0)
        self.recycle_reasons: collections.Counter[str] = collections.Counter()
        self.last_recycle_reason: str | None = None
        self.kills = 0
        self.stale_lines = 0
        self.orphan_lines = 0
        self.unknown_lines = 0
        #: Lines kept with U+FFFD for bytes that were not UTF-8.
        self.invalid_utf8_lines = 0
        self.bound_conversation: str | None = None

    # -- contract ---------------------------------------------------------------

    async def run(self, request: TurnRequest) -> TurnHandle:
        if self.closed:
            raise RuntimeError("stream-json driver is shut down")
        self.turns.supersede(request.session)
        self.stats["turns"] += 1
        return self.turns.start(Turn(request), self._turn_task)

    def reentry(self) -> TurnHandle | None:
        return self.turns.reentry()

    def kick_idle(self) -> None:
        self.turns.kick_idle()

    def snapshot(self) -> DriverSnapshot:
        child = self._child
        extra: dict[str, Any] = {
            "agy": f"{self.engine.binary.command} ({self.engine.binary.source})",
            "recycle_reasons": dict(self.recycle_reasons),
            "kills": self.kills,
            "generation": self._generation,
        }
        if child is not None:
            extra["argv"] = shlex.join(child.argv)
            extra["print_timeout"] = go_duration(child.profile.print_timeout_s)
            if child.permission_mode:
                extra["permission_mode"] = child.permission_mode
            if child.tools is not None:
                extra["agy_tools"] = child.tools
        if self.stale_lines:
            extra["stale_lines"] = self.stale_lines
        if self.orphan_lines:
            extra["orphan_lines"] = self.orphan_lines
        if self.unknown_lines:
            extra["unknown_lines"] = self.unknown_lines
        if self.invalid_utf8_lines:
            extra["invalid_utf8_lines"] = self.invalid_utf8_lines
        return DriverSnapshot(
            engine="stream-json",
            state=self.state,
            pid=child.pid if child is not None and child.alive else None,
            conversation_id=(child.conversation_id if child is not None else None) or self.bound_conversation,
            stats=dict(self.stats),
            last_recycle_reason=self.last_recycle_reason,
            lifecycle=self.lifecycle.entries(),
            extra=extra,
        )

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        for turn in list(self.turns.open.values()):
            turn.handle.finish(settle.failed(turn, "stream-json driver closed mid-turn", "internal"))
            turn.scope.cancel()
        child, self._child = self._child, None
        self._generation += 1
        if child is not None:
            await child.finish(self._cfg.exit_grace_seconds, self._cfg.kill_grace_seconds)
            self.lifecycle.add("exit", pid=child.pid, code=child.returncode, why="shutdown")
        self.state = "closed"
        self.lifecycle.add("closed")

    # -- output of the agy process (process.Sink, the hot path) -----------------------

    def _turn_of(self, child: AgyProcess) -> Turn | None:
        turn = self._current
        return turn if turn is not None and turn.child is child else None

    def on_chunk(self, child: AgyProcess) -> None:
        if child.generation == self._generation:
            turn = self._current
            if turn is not None and turn.child is child:
                turn.timers.touch()

    def on_event(self, child: AgyProcess, event: Event) -> None:
        if child.generation != self._generation:
            self.stale_lines += 1
            return
        kind = type(event)
        if kind is InitEvent:
            assert isinstance(event, InitEvent)
            self._on_init(child, event)
        elif kind is ResultEvent:
            assert isinstance(event, ResultEvent)
            if event.result.conversation_id:
                child.conversation_id = event.result.conversation_id
                self.bound_conversation = child.conversation_id
        elif kind is Unknown:
            assert isinstance(event, Unknown)
            self.unknown_lines += 1
            if self.unknown_lines <= 3:  # the ring is small: a flood must not wipe it
                self.lifecycle.add("unknown-line", reason=event.reason, head=event.head[:120])
        if event.invalid_utf8 and kind is not Unknown:
            self.invalid_utf8_lines += 1
            if self.invalid_utf8_lines <= 3:
                self.lifecycle.add(INVALID_UTF8, kind=kind.__name__)
        turn = self._turn_of(child)
        if turn is None or turn.result is not None:
            # Between turns, or after the turn's result in the same read: agy
            # ran a turn nobody here asked for (a line queued mid-turn).
            if self.orphan_lines == 0 or kind is ResultEvent:
                self.lifecycle.add("line-outside-a-turn", kind=kind.__name__)
            self.orphan_lines += 1
            return
        turn.on_event(event)

    def _on_init(self, child: AgyProcess, event: InitEvent) -> None:
        child.initialized = True
        info = event.info
        child.permission_mode = info.permission_mode
        child.tools = len(info.tools) if info.tools is not None else None
        cid = event.conversation_id
        if not cid:
            return
        turn = self._turn_of(child)
        if child.resumed and child.conversation_id and cid != child.conversation_id and turn is not None:
            if turn.request.resume:
                # --resume: nothing may run on the new conversation; the turn
                # ends here (exit 4) and agy is torn down with its answer.
                turn.refused = (
                    f"agy did not continue conversation {child.conversation_id} (it started {cid})",
                    "no_session",
                )
                turn.conversation_id = child.conversation_id
                turn.wire_done.set()
                return
            turn.handle.emit(
                NoticeActivity(
                    level="warning",
                    message=f"agy did not continue conversation {child.conversation_id}; this turn starts a new "
                    "conversation, without the earlier messages (pass --resume to fail instead)",
                    code="conversation-replaced",
                )
            )
        child.conversation_id = cid
        self.bound_conversation = cid

    def on_stderr(self, child: AgyProcess, line: str) -> None:
        if child.generation != self._generation:
            return
        turn = self._turn_of(child)
        if turn is not None:
            turn.on_stderr(line)
        elif is_statement(line):
            self.lifecycle.add("stderr", line=line[:200])

    def on_eof(self, child: AgyProcess) -> None:
        if child.generation == self._generation:
            turn = self._turn_of(child)
            if turn is not None:
                turn.on_eof()

    def on_exit(self, child: AgyProcess) -> None:
        turn = self._turn_of(child)
        if turn is not None and not turn.wire_done.is_set():
            # Watch the process, not only stdout: a descendant that inherited
            # agy's stdout keeps the pipe open after agy died, and the turn
            # would wait for EOF until its inactivity timeout.
            self._nursery.start_soon(self._exited_mid_turn, child, turn)
        if child is not self._child:
            return
        self.lifecycle.add("exit", pid=child.pid, code=child.returncode)
        self._child = None
        if not self.closed and self._current is None:
            self.state = "dead"

    async def _exited_mid_turn(self, child: AgyProcess, turn: Turn) -> None:
        """agy exited during a turn: what it wrote last still counts (the reader
        gets a moment for it), then the turn ends as if stdout had ended."""
        with trio.move_on_after(EXIT_READ_GRACE_S):
            await child.stdout_done.wait()
        if not child.stdout_done.is_set():
            self.lifecycle.add("exit-before-eof", pid=child.pid, code=child.returncode)
        if self._turn_of(child) is turn:
            turn.on_eof()

    # -- processes ----------------------------------------------------------------

    def _profile(self, turn: Turn) -> Profile:
        req = turn.request
        notes: list[str] = []
        effort, note = resolve_effort(req.model, req.effort, self.engine.catalog_models())
        if note:
            notes.append(note)
        mode, note = agy_mode(req.mode)
        if note:
            notes.append(note)
        for message in notes:
            turn.handle.emit(NoticeActivity(level="warning", message=message, code="settings"))
        return Profile(
            cwd=req.cwd,
            model=req.model or None,
            effort=effort,
            mode=mode,
            skip_permissions=req.skip_permissions,
            print_timeout_s=print_timeout(req.timeout_s, self._cfg),
            add_dirs=tuple(d for d in req.additional_directories if d != req.cwd),
        )

    async def _process_for(self, turn: Turn, profile: Profile) -> AgyProcess:
        conversation = None if turn.fresh else turn.request.conversation_id
        if conversation and not CONVERSATION_ID.match(conversation):
            why = f"conversation id {conversation!r} is not one agy can continue"
            if turn.request.resume:
                raise TurnFailed(why, "no_session")
            turn.handle.emit(
                NoticeActivity(
                    level="warning",
                    message=f"{why}; this turn starts a new conversation (pass --resume to fail instead)",
                    code="conversation-replaced",
                )
            )
            conversation = None
        child = self._child
        if child is not None and child.alive:
            cause = drift(child.profile, profile, child.conversation_id, conversation)
            if cause is None:
                self.stats["reused"] += 1
                return child
            self._recycle(child, cause)
        return await self._spawn(profile, conversation)

    def _recycle(self, child: AgyProcess, cause: str) -> None:
        self.stats["recycles"] += 1
        self.recycle_reasons[cause] += 1
        self.last_recycle_reason = cause
        self.lifecycle.add("recycle", reason=cause, pid=child.pid)
        self._generation += 1
        self._child = None
        # The old process is idle: closing its stdin ends it; no need to wait.
        self._nursery.start_soon(child.finish, self._cfg.exit_grace_seconds, self._cfg.kill_grace_seconds)

    async def _spawn(self, profile: Profile, conversation: str | None) -> AgyProcess:
        self._generation += 1
        self.stats["spawns"] += 1
        self.state = "starting"
        binary = self.engine.binary
        cmd = argv(binary.command, profile, conversation, self._cfg.extra_args)
        try:
            child = await AgyProcess.spawn(
                self._nursery,
                cmd,
                cwd=profile.cwd,
                env=self.engine.ctx.env,
                generation=self._generation,
                profile=profile,
                sink=self,
                trace=self.engine.wire_trace(),
            )
        except SpawnError as exc:
            self.state = "dead"
            self.lifecycle.add("spawn-failed", error=str(exc))
            hint = f"\n{INSTALL_HINT}" if "not found" in str(exc) or "not executable" in str(exc) else ""
            raise TurnFailed(f"could not start agy ({binary.source}): {exc}{hint}", "spawn") from exc
        if conversation:
            child.conversation_id = conversation
            child.resumed = True
        self._child = child
        self.lifecycle.add(
            "spawn", pid=child.pid, mode="resume" if conversation else "fresh", generation=child.generation
        )
        return child

    async def _teardown(self, child: AgyProcess, why: str) -> None:
        """Kill the group now; whatever it still prints is stale."""
        self.kills += 1
        self.lifecycle.add("kill", reason=why, pid=child.pid)
        if child.generation == self._generation:
            self._generation += 1
        if child is self._child:
            self._child = None
        await child.terminate(self._cfg.kill_grace_seconds)

    async def _retire(self, child: AgyProcess, why: str) -> None:
        """Close stdin and let agy exit on its own, so its exit code and the
        rest of its stderr reach the current turn; then it is gone."""
        self.lifecycle.add("retire", reason=why, pid=child.pid)
        await child.finish(self._cfg.exit_grace_seconds, self._cfg.kill_grace_seconds)
        if child.generation == self._generation:
            self._generation += 1
        if child is self._child:
            self._child = None

    # -- one turn -------------------------------------------------------------------

    async def _watch_abort(self, turn: Turn) -> None:
        await turn.handle.abort_requested.wait()
        turn.aborted = True
        self.lifecycle.add("abort", reason=turn.handle.abort_reason, session=turn.request.session)
        turn.scope.cancel()

    async def _turn_task(self, turn: Turn) -> None:
        outcome: OutcomeActivity | None = None
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._watch_abort, turn)
                nursery.start_soon(turn.timers.watch)
                try:
                    with turn.scope:
                        async with self._lock:
                            try:
                                outcome = await self._drive(turn)
                            finally:
                                if outcome is None:
                                    await self._interrupted(turn)
                                self._turn_over(turn)
                finally:
                    turn.timers.stop()
                    nursery.cancel_scope.cancel()
            if outcome is None:
                outcome = settle.failed(turn, "the stream-json turn ended without an outcome", "internal")
        except Exception as exc:  # a bug must surface as a turn error, never a hang
            self.lifecycle.add("turn-crashed", error=repr(exc)[:300])
            outcome = settle.failed(turn, f"stream-json turn failed: {type(exc).__name__}: {exc}", "internal")
        finally:
            self.turns.done(turn)
        turn.mapper.release()  # a turn cut short before agy's result: its held cards as they were
        if turn.conversation_id:
            self.bound_conversation = turn.conversation_id
            if turn.result is None:
                # agy counted the steps of a turn cut short; our running total
                # did not, so the next turn's usage comes from its own steps.
                self.engine.usage_totals.pop(turn.conversation_id, None)
        turn.handle.finish(outcome)

    def _turn_over(self, turn: Turn) -> None:
        if self._current is turn:
            self._current = None
        if not self.closed:
            self.state = "ready" if self._child is not None and self._child.alive else "dead"

    async def _interrupted(self, turn: Turn) -> None:
        """Aborted (or crashed) while agy was working on the turn: kill it."""
        child = turn.child
        if child is not None and turn.sent and child.alive:
            await self._teardown(child, "abort" if turn.aborted else "turn interrupted")

    async def _drive(self, turn: Turn) -> OutcomeActivity:
        req = turn.request
        self._current = turn
        try:
            text = prompt_to_text(req.prompt)
            profile = self._profile(turn)
        except TurnFailed as exc:
            return settle.failed(turn, str(exc), exc.kind)
        self.lifecycle.add("turn-start", session=req.session, turn=turn.handle.turn_id)
        with turn.timers.scope:
            turn.timers.arm()
            try:
                turn.child = await self._process_for(turn, profile)
            except TurnFailed as exc:
                return settle.failed(turn, str(exc), exc.kind)
            if turn.conversation_id is None:
                turn.conversation_id = turn.child.conversation_id
            self.state = "running"
            turn.sent = True
            error = await turn.child.send(encode_user_line(text))
            if error is not None:
                self.lifecycle.add("stdin-failed", error=error)
            await turn.wire_done.wait()
            refused = await self._not_opened(turn, turn.child)
            if refused is not None:
                # The engines agree: --resume fails (exit 4) with agy's words;
                # otherwise the turn runs again, once, on a new conversation.
                wanted = turn.child.conversation_id or ""
                if req.resume:
                    message = f"agy could not continue conversation {wanted}: {refused[0]}"
                    turn.conversation_id = wanted
                    return settle.failed(turn, message, "no_session")
                turn.handle.emit(
                    NoticeActivity(
                        level="warning",
                        message=f"agy could not continue conversation {wanted}; this turn starts a new "
                        "conversation, without the earlier messages (pass --resume to fail instead)",
                        code="conversation-replaced",
                    )
                )
                turn.fresh_start()
                try:
                    turn.child = await self._process_for(turn, profile)
                except TurnFailed as exc:
                    return settle.failed(turn, str(exc), exc.kind)
                turn.conversation_id = turn.child.conversation_id
                turn.sent = True
                error = await turn.child.send(encode_user_line(text))
                if error is not None:
                    self.lifecycle.add("stdin-failed", error=error)
                await turn.wire_done.wait()
        if turn.refused is not None:
            if turn.child is not None:
                await self._teardown(turn.child, "conversation not continued (--resume)")
            message, kind = turn.refused
            return settle.failed(turn, message, kind)
        fired = turn.timers.expired()
        child = turn.child
        if child is None:  # a timer fired while the process was starting
            return settle.failed(turn, f"agy did not start within the {fired or 'turn'} budget", "timeout")
        if turn.result is None and fired is not None:
            await self._teardown(child, f"timer:{fired}")
            if fired == "deadline":
                return settle.failed(turn, f"agy exceeded the {minutes(req.timeout_s)} turn deadline", "timeout")
            return settle.failed(turn, f"agy stalled for {minutes(req.inactivity_s)} with no output", "inactivity")
        if turn.result is None:
            await self._retire(child, "output ended")
            started = bool(turn.mapper.seen)  # agy said something about this turn
            message, kind = death_failure(child.returncode, child.stderr_tail(), turn.statements, started)
            return settle.failed(turn, message, kind)
        return await self._settle(turn, child)

    async def _not_opened(self, turn: Turn, child: AgyProcess) -> tuple[str, ErrorKind] | None:
        """agy ended the turn before opening the conversation it was given
        (no ``init``, nothing said about the turn, no successful result): it
        does not have that conversation, or refused it. Then agy is gone, and
        this says what agy said; ``None`` for every other turn."""
        if not child.resumed or child.initialized or turn.mapper.seen or turn.refused is not None:
            return None
        result = turn.result
        if result is not None and is_success(result.status):
            return None
        await self._retire(child, "conversation not opened")
        if result is None:
            message, kind = death_failure(child.returncode, child.stderr_tail(), turn.statements, False)
        else:
            failed = settle.outcome_of(turn, result, child.returncode)
            message, kind = failed.error, failed.error_kind or "agent"
        if kind in ("auth", "usage"):
            return None  # agy's own trouble, whatever the conversation: reported as it is
        self.lifecycle.add("resume-failed", conversation=child.conversation_id or "", said=message[:300])
        return message, kind

    async def _settle(self, turn: Turn, child: AgyProcess) -> OutcomeActivity:
        result = turn.result
        assert result is not None
        settle.response_of(turn, result)
        settle.report_structured_output(turn, result)
        settle.report_denials(turn, result)
        key = turn.conversation_id
        total = settle.report_usage(turn, result, self.engine.usage_totals.get(key) if key else None)
        if key and total is not None:
            self.engine.usage_totals[key] = total
        if settle.may_be_print_timeout(turn, result):
            await self._retire(child, "empty result")
            if settle.is_print_timeout(turn):
                return settle.print_timeout_outcome(turn, result, go_duration(child.profile.print_timeout_s))
        outcome = settle.outcome_of(turn, result, None)
        if outcome.status == "error":
            await self._retire(child, f"result {result.status or '(no status)'}")
            outcome = settle.outcome_of(turn, result, child.returncode)
        return outcome


def open_driver(engine: StreamJsonEngine) -> contextlib.AbstractAsyncContextManager[StreamJsonDriver]:
    return driver_scope(lambda nursery: StreamJsonDriver(engine, nursery), owner=engine)


__all__ = ["StreamJsonDriver", "open_driver"]
