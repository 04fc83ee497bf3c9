"""The program's callbacks (``permissions=``, ``on_question=``, ``tools=``):
run on the program's own loop, and held to what they may return.

**Where they run.** A program under asyncio writes asyncio callbacks (an
``await asyncio.sleep()``, an HTTP client of asyncio's). The runtime is trio,
a guest on asyncio's loop, and a coroutine awaited from a trio task runs in
trio's context, where an asyncio future is "an unrecognized yield message".
So under asyncio each call of a callback is an asyncio task on the program's
loop (:class:`ProgramLoop`), awaited from trio through trio's token: no
thread (trio's steps and asyncio's tasks share the program's thread), and
the trio side never blocks the loop. Cancelling the trio side (an abort, the
permission bound, the turn's end) cancels the task and waits for it to end.
Under trio, and in :func:`agy_host.run`, callbacks are called in the
runtime's own task: trio is the program's loop.

**What they return.** A callback that raises, or returns a type it may not,
is never taken for an answer: the request is cancelled (the question left
unanswered) with a reason that names the callback and what went wrong, and
``TurnResult.error`` carries that reason (docs/python.md, docs/reliability.md).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agy_host.runtime.python_tools import call_here

if TYPE_CHECKING:
    import asyncio

    from agy_host.contract.interactions import Answer, Question
    from agy_host.contract.permissions import PermissionDecision, PermissionRequest

log = logging.getLogger("agy_host")

#: How long a cancelled asyncio callback may take to end before it is left
#: running (said on the ``agy_host`` logger): a task may catch its cancellation.
CANCEL_GRACE_S = 5.0


class CallbackCancelled(Exception):
    """The callback's asyncio task was cancelled by something other than
    agy-host (it cancelled itself, or the program cancelled it)."""


class ProgramLoop:
    """Calls the program's functions on the program's loop: asyncio's (when
    the session was opened under asyncio), else trio's, directly."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.loop = loop

    async def call(self, thunk: Callable[[], Any]) -> Any:
        """``thunk()``, awaited when it returns an awaitable; its exception raised."""
        if self.loop is None:
            return await call_here(thunk)
        return await _on_asyncio(self.loop, thunk)


async def _on_asyncio(loop: asyncio.AbstractEventLoop, thunk: Callable[[], Any]) -> Any:
    """``thunk`` as an asyncio task on ``loop``, awaited from the trio guest.

    The task is created directly: trio's guest steps run as callbacks of
    ``loop`` on its thread. Its end wakes trio through the token (a done
    callback runs outside any trio step, where a trio event cannot be set)."""
    import trio

    token = trio.lowlevel.current_trio_token()
    ended = trio.Event()

    def wake(_: object) -> None:
        try:
            token.run_sync_soon(ended.set)
        except trio.RunFinishedError:
            pass  # the session's runtime is gone; nobody waits any more

    task = loop.create_task(call_here(thunk))
    task.add_done_callback(wake)
    try:
        await ended.wait()
    finally:
        if not task.done():
            task.cancel()
            with trio.CancelScope(shield=True), trio.move_on_after(CANCEL_GRACE_S):
                await ended.wait()
            if not task.done():
                log.warning(
                    "agy-host: a callback of the program did not end within %gs of its cancellation; left running",
                    CANCEL_GRACE_S,
                )
    if task.cancelled():
        raise CallbackCancelled("its asyncio task was cancelled")
    return task.result()


def label(option: str, callback: Callable[..., Any]) -> str:
    """The callback as an error names it: ``the on_question callback ask()``."""
    name = getattr(callback, "__qualname__", None) or type(callback).__name__
    return f"the {option} callback {name}()"


def failed(who: str, exc: BaseException) -> str:
    """Why a callback gave no answer: what it raised, with the message."""
    if isinstance(exc, CallbackCancelled):
        return f"{who} was cancelled: {exc}"
    return f"{who} raised {type(exc).__name__}: {exc}"


#: What a permission callback may return, for the error that names another type.
PERMISSION_RETURNS = "True, False, None, an option id (str) or a PermissionDecision"
#: What an ``on_question`` callback may return.
QUESTION_RETURNS = "an Answer, a dict of the form's values, a str, True, False or None (to cancel)"


class CallbackPolicy:
    """A permission policy that asks the program's callback, on the program's loop."""

    name = "python"

    def __init__(self, callback: Callable[[PermissionRequest], Any], program: ProgramLoop) -> None:
        self.callback = callback
        self.program = program

    async def decide(self, request: PermissionRequest) -> PermissionDecision:
        from agy_host.contract.permissions import PermissionDecision, choose_allow, choose_reject

        who = label("permissions", self.callback)
        try:
            answer = await self.program.call(lambda: self.callback(request))
        except Exception as exc:
            return PermissionDecision(option_id=None, policy=self.name, reason=f"{failed(who, exc)}; cancelled")
        if isinstance(answer, PermissionDecision):
            return answer
        if isinstance(answer, str):
            return PermissionDecision(option_id=answer, policy=self.name, reason="chosen by the program")
        if answer is not True and answer is not False and answer is not None:
            return PermissionDecision(
                option_id=None,
                policy=self.name,
                reason=f"{who} returned {type(answer).__name__}, not {PERMISSION_RETURNS}; cancelled",
            )
        option = choose_allow(request.options) if answer is True else choose_reject(request.options)
        verdict = "allowed" if answer is True else "refused"
        return PermissionDecision(
            option_id=option.option_id if option else None, policy=self.name, reason=f"{verdict} by the program"
        )


def question_asker(
    callback: Callable[[Question], Any], program: ProgramLoop
) -> Callable[[Question], Awaitable[Answer]]:
    """The program's ``on_question`` (sync or async) as the broker's asker.
    It may return an :class:`Answer`, a dict (a form's values), a str (the
    answer), ``True`` (accept), ``False`` (decline) or ``None`` (cancel);
    anything else, or an exception, leaves the question unanswered, said why."""
    from agy_host.contract.interactions import Answer

    who = label("on_question", callback)

    def unanswered(why: str) -> Answer:
        return Answer(action="cancel", by="on_question", reason=why, unanswered=True)

    async def ask(question: Question) -> Answer:
        try:
            given = await program.call(lambda: callback(question))
        except Exception as exc:
            return unanswered(failed(who, exc))
        if isinstance(given, Answer):
            return given
        if isinstance(given, dict):
            return Answer(action="accept", values=given, by="on_question")
        if isinstance(given, str):
            return Answer(action="accept", values={"answer": given}, by="on_question")
        if given is True:
            return Answer(action="accept", by="on_question")
        if given is False:
            return Answer(action="decline", by="on_question")
        if given is None:
            return Answer(action="cancel", by="on_question", reason="the program gave no answer")
        return unanswered(f"{who} returned {type(given).__name__}, not {QUESTION_RETURNS}")

    return ask


__all__ = ["CANCEL_GRACE_S", "CallbackCancelled", "CallbackPolicy", "ProgramLoop", "label", "question_asker"]
