"""The program's callbacks in the Python API (issue 28 items 5 and 12),
against the kit's fake ACP agent (a real process) that asks a question,
asks permission and calls the program's tools through the MCP bridge.

Item 5: every callback kind (``on_question``, ``permissions=``, ``async def``
and plain ``tools=``) runs on the program's own loop, so under asyncio it can
await asyncio (and under trio, trio); cancelling the turn, or the permission
bound, cancels the callback on that loop. Item 12: a callback that raises,
runs past the bound, or returns a type it may not is never taken for an
answer, and ``TurnResult.error`` says what happened, naming the callback.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sniffio
import trio
from program_kit import LOOPS, Home, forever, nap, run_on

import agy_host

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")

FORM = {
    "sessionId": "<session>",
    "mode": "form",
    "message": "Which branch?",
    "requestedSchema": {"type": "object", "properties": {"branch": {"type": "string"}}, "required": ["branch"]},
}
QUESTION = {
    "request": {
        "method": "elicitation/create",
        "params": FORM,
        "branches": {action: [{"chunk": f"Q:{action} / "}] for action in ("accept", "decline", "cancel")},
    }
}
PERMISSION = {"permission": {"branches": {"allow": [{"chunk": "P:allow / "}], "reject": [{"chunk": "P:reject / "}]}}}


def tool(name: str) -> dict[str, Any]:
    return {"mcp_call": {"tool": name, "arguments": {"text": "hi"}}}


EVERY_KIND = {"prompt": [QUESTION, PERMISSION, tool("shout"), {"chunk": " / "}, tool("whisper"), {"stop": "end_turn"}]}


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    yield Home(tmp_path)


@pytest.mark.parametrize("loop", LOOPS)
def test_every_callback_awaits_its_own_library(home: Home, loop: str) -> None:
    """Each kind of callback awaits the program's library and sees it running
    (``sniffio``), on the program's thread: under asyncio an asyncio task on
    the program's loop, not a coroutine in trio's context ("trio.run received
    unrecognized yield message")."""
    seen: dict[str, tuple[str, bool]] = {}

    def note(kind: str) -> None:
        seen[kind] = (sniffio.current_async_library(), threading.current_thread() is threading.main_thread())

    async def on_question(question: agy_host.Question) -> dict[str, str]:
        await nap()
        note("on_question")
        return {"branch": "dev"}

    async def permissions(request: agy_host.PermissionRequest) -> bool:
        await nap()
        note("permissions")
        return True

    async def shout(text: str) -> str:
        """Upper-case the text, after a nap."""
        await nap()
        note("async tool")
        return text.upper()

    def whisper(text: str) -> str:
        """Lower-case the text."""
        note("sync tool")
        return text.lower()

    result = run_on(
        loop, lambda: home.run(EVERY_KIND, on_question=on_question, permissions=permissions, tools=[shout, whisper])
    )
    assert result.exit_code == 0, result.error
    assert result.response == "Q:accept / P:allow / tool result: HI / tool result: hi", result.response
    assert seen == dict.fromkeys(("on_question", "permissions", "async tool", "sync tool"), (loop, True))


ASK = {"prompt": [QUESTION, {"stop": "end_turn"}]}
ASK_PERMISSION = {"prompt": [PERMISSION, {"stop": "end_turn"}]}


@pytest.mark.parametrize("loop", LOOPS)
def test_leaving_the_turn_cancels_the_callback_on_its_own_loop(home: Home, loop: str) -> None:
    """The program leaves the turn while its ``on_question`` awaits its own
    library: the callback is cancelled there (it sees its own library's
    cancellation), the agent gets ``cancel`` and the turn ends aborted."""
    ended: list[str] = []

    async def main() -> Any:
        started = asyncio.Event() if loop == "asyncio" else trio.Event()

        async def on_question(question: agy_host.Question) -> None:
            started.set()
            await forever(ended)

        agent = home.agent(ASK)
        async with agy_host.open_session(
            agent=agent.command_line, env=home.env, cwd=home.cwd, on_question=on_question
        ) as s:
            async with s.prompt("go") as turn:
                await started.wait()
            return turn.result

    result = run_on(loop, main)
    assert result.exit_code == 130 and result.stop_reason == "aborted", result
    assert ended == ["CancelledError" if loop == "asyncio" else "Cancelled"]


@pytest.mark.parametrize("loop", LOOPS)
def test_the_permission_bound_cancels_a_callback_and_says_so(home: Home, loop: str) -> None:
    """A callback that runs past ``turn.permission_timeout_seconds`` is cancelled
    on its own loop; the request is cancelled and the turn's error says it
    was the bound, not "nobody answered"."""
    home.bound(0.5)
    ended: list[str] = []

    async def never(_: object) -> None:
        await forever(ended)

    async def main() -> tuple[agy_host.TurnResult, agy_host.TurnResult]:
        return await home.run(ASK, on_question=never), await home.run(ASK_PERMISSION, permissions=never)

    question, permission = run_on(loop, main)
    assert ended == ["CancelledError" if loop == "asyncio" else "Cancelled"] * 2
    assert question.exit_code == 5 and question.response == "Q:cancel / ", question
    assert question.error == "the agent asked 'Which branch?' and nobody answered: no answer within 0.5s"
    assert permission.exit_code == 5 and "no answer within" in permission.error, permission
    assert permission.error.startswith("the agent asked permission for 'Run fake_tool?' and it was cancelled: ")


def raises(_: object) -> None:
    raise ValueError("boom")


def returns_a_list(_: object) -> list[str]:
    return ["dev"]


async def returns_a_list_later(_: object) -> list[str]:
    await nap()
    return ["dev"]


WRONG = {
    "on_question raises": (ASK, "on_question", raises, "the on_question callback raises() raised ValueError: boom"),
    "on_question returns a list": (
        ASK,
        "on_question",
        returns_a_list,
        "the on_question callback returns_a_list() returned list, not an Answer",
    ),
    "permissions raises": (
        ASK_PERMISSION,
        "permissions",
        raises,
        "the permissions callback raises() raised ValueError: boom",
    ),
    "permissions returns a list": (
        ASK_PERMISSION,
        "permissions",
        returns_a_list_later,
        "the permissions callback returns_a_list_later() returned list, not True, False, None, an option id",
    ),
}


@pytest.mark.parametrize("case", sorted(WRONG))
@pytest.mark.parametrize("loop", LOOPS)
def test_a_callback_that_raises_or_answers_wrongly_is_named_in_the_error(home: Home, loop: str, case: str) -> None:
    """Never taken for an answer (a list used to be a deliberate cancel, exit
    0), never "nobody answered": exit 5, and the error names the callback and
    what it raised or the type it returned; ``check=True`` raises it."""
    scenario, option, callback, why = WRONG[case]

    async def main() -> agy_host.TurnResult:
        return await home.run(scenario, **{option: callback})

    result = run_on(loop, main)
    assert result.exit_code == 5, result
    assert why in result.error, result.error
    assert "nobody answered" not in result.error

    async def checked() -> agy_host.TurnResult:
        return await home.run(scenario, check=True, **{option: callback})

    with pytest.raises(agy_host.PermissionDenied) as denied:
        run_on(loop, checked)
    assert str(denied.value) == result.error


def test_without_a_callback_the_error_gives_the_brokers_reason_and_a_refusal_none(home: Home) -> None:
    """No callback, no rule, no terminal: the error still says why (the
    broker's words); permission requests refused on purpose leave no error."""

    async def main() -> tuple[agy_host.TurnResult, agy_host.TurnResult]:
        return await home.run(ASK), await home.run(ASK_PERMISSION, permissions=lambda request: False)

    nobody, refused = trio.run(main)
    assert nobody.exit_code == 5, nobody
    assert nobody.error.startswith("the agent asked 'Which branch?' and nobody answered: no answer rule matched")
    assert (refused.exit_code, refused.response, refused.error) == (5, "P:reject / ", "")
