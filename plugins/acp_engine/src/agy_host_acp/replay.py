"""History an agent replays *inside* a turn, kept out of the turn's answer.

ACP's ``session/load`` replays the conversation before its response, and the
connection drops every update of a session while its load is in flight
(:class:`~agy_host_acp.connection.AcpConnection`). Real agents do not all
keep to that order: the Gemini CLI answers the load first and streams the
history afterwards, so the old prompt (``user_message_chunk``) and the old
answer (``agent_message_chunk``) arrive once the next turn is running. The
connection waits for such a trailing replay before it sends the prompt
(:class:`TrailingReplay`); the :class:`ReplayGuard` is the second line, for a
replay that comes later still.

The rule: a ``user_message_chunk`` inside a turn is history by definition
(agy-host sent the prompt; an agent does not speak for the user), unless it
only echoes the prompt of this turn. It starts a replay, and the content
updates that follow it in the same burst (text, thoughts, tool calls, plans)
are history too. A replay is a burst: the agent writes it from memory, with
no model call between its lines, so the first content update that comes
after a pause of :data:`REPLAY_GAP_S` is live again. Updates that carry no
content (usage, commands, config options, titles) always pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import trio

from agy_host_acp import schema as s

#: A pause longer than this ends a replay burst (a replay is written from
#: memory, back to back; a live answer waits on the model).
REPLAY_GAP_S = 0.25

#: After a load that replayed nothing: how long to wait for a replay that trails the answer.
REPLAY_FIRST_S = 0.5
#: A trailing replay is over once the agent has been quiet this long.
REPLAY_QUIET_S = 0.15
#: The longest a trailing replay may hold up the turn.
REPLAY_CAP_S = 5.0

#: Updates that are part of a conversation's history when replayed.
_CONTENT = (s.AgentMessageChunk, s.AgentThoughtChunk, s.ToolCall, s.ToolCallUpdate, s.Plan, s.UserMessageChunk)


class ReplayGuard:
    """Filters one turn's updates; ``on_replay`` is called once, when the
    first replayed update is dropped (the turn shows a notice)."""

    __slots__ = ("_clock", "_last", "_on_replay", "_prompt", "replaying", "skipped")

    def __init__(
        self, prompt_text: str, on_replay: Callable[[], None], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._prompt = prompt_text.strip()
        self._on_replay = on_replay
        self._clock = clock
        self._last = 0.0
        self.replaying = False
        #: Updates dropped as history in this turn.
        self.skipped = 0

    def keep(self, update: s.Update) -> bool:
        """``False`` for an update that is history, not part of this turn."""
        if not isinstance(update, _CONTENT):
            return True
        now = self._clock()
        if isinstance(update, s.UserMessageChunk):
            if not self.replaying and self._echoes_prompt(update):
                return False  # the agent repeating this turn's prompt: never the answer either
            self._drop(now)
            return False
        if self.replaying and now - self._last <= REPLAY_GAP_S:
            self._drop(now)
            return False
        self.replaying = False
        return True

    def filter(self, updates: list[s.Update]) -> list[s.Update]:
        """The updates of one pipe read that belong to this turn, in order."""
        return [u for u in updates if self.keep(u)]

    def _drop(self, now: float) -> None:
        if self.skipped == 0:
            self._on_replay()
        self.replaying = True
        self._last = now
        self.skipped += 1

    def _echoes_prompt(self, update: s.UserMessageChunk) -> bool:
        text = update.content.text if update.content is not None else ""
        text = (text or "").strip()
        return bool(text) and bool(self._prompt) and text in self._prompt


class TrailingReplay:
    """The connection's count of updates dropped during loads, and the wait
    for a replay that trails a load's answer."""

    __slots__ = ("_tick", "count")

    def __init__(self) -> None:
        self._tick = trio.Event()
        #: Updates dropped as replayed history on this connection.
        self.count = 0

    def dropped(self, n: int) -> None:
        """``n`` updates of a loading session were dropped."""
        self.count += n
        self._tick.set()

    async def wait_out(self, *, first: bool) -> int:
        """Wait out a replay that trails the load's answer; how many updates it had.

        With nothing replayed during the load (``first``), the agent gets
        :data:`REPLAY_FIRST_S` to start one; a replay under way is over when
        the agent is quiet for :data:`REPLAY_QUIET_S`; all of it within
        :data:`REPLAY_CAP_S`. Only loads pay this, never a new or resumed
        session, and agents that replay inside the load pay the quiet wait."""
        start = self.count
        with trio.move_on_after(REPLAY_CAP_S):
            wait = REPLAY_FIRST_S if first else REPLAY_QUIET_S
            while True:
                self._tick = trio.Event()
                with trio.move_on_after(wait):
                    await self._tick.wait()
                if not self._tick.is_set():
                    break
                wait = REPLAY_QUIET_S
        return self.count - start


__all__ = ["REPLAY_CAP_S", "REPLAY_FIRST_S", "REPLAY_GAP_S", "REPLAY_QUIET_S", "ReplayGuard", "TrailingReplay"]
