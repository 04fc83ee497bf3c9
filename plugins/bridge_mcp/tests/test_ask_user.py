"""``ask_user`` on a real pseudo-terminal (``AGY_HOST_TTY``), and without one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agy_host.testing.terminal import Pty
from agy_host_bridge_mcp import ask_user
from agy_host_bridge_mcp.testing import mcp_client, running_bridge


@pytest.fixture
def tty() -> Iterator[Pty]:
    with Pty() as term:
        yield term


async def test_a_free_answer(tty: Pty) -> None:
    tty.type("blue, please\n")
    result = await ask_user.ask_user({"question": "Which colour?"}, {"AGY_HOST_TTY": tty.path})
    assert (result.text, result.is_error) == ("The user answered: blue, please", False)
    assert "asks (tool agy_host_ask_user):" in tty.screen()


async def test_a_choice_by_number_after_a_bad_answer(tty: Pty) -> None:
    tty.type("purple\n2\n")
    result = await ask_user.ask_user(
        {"question": "Red or blue?", "choices": ["Red", "Blue"]}, {"AGY_HOST_TTY": tty.path}
    )
    assert result.text == "The user chose: Blue"
    screen = tty.screen()
    assert "1) Red" in screen and "2) Blue" in screen and "please type a number from 1 to 2" in screen


async def test_declining_a_choice(tty: Pty) -> None:
    tty.type("0\n")
    result = await ask_user.ask_user(
        {"question": "Red or blue?", "choices": ["Red", "Blue"]}, {"AGY_HOST_TTY": tty.path}
    )
    assert result.text == "The user declined to answer."


@pytest.mark.parametrize("where", ["none", "/nonexistent/tty"])
async def test_without_a_terminal_the_agent_is_told_plainly(where: str) -> None:
    result = await ask_user.ask_user({"question": "Anyone there?"}, {"AGY_HOST_TTY": where})
    assert (
        result.is_error
        and "there is no terminal attached to agy-host" in result.text
        and "no answer rule matched" in result.text
    )


async def test_a_question_is_required() -> None:
    result = await ask_user.ask_user({}, {"AGY_HOST_TTY": "none"})
    assert result.is_error and "'question' argument is required" in result.text


async def test_ask_user_round_trips_through_the_bridge(tmp_path: Path, tty: Pty) -> None:
    tty.type("ship it\n")
    tools = ask_user.tools({"AGY_HOST_TTY": tty.path})
    async with running_bridge(tmp_path, tools) as bridge, mcp_client(bridge) as client:
        listed = await client.list_tools()
        schema = next(t for t in listed.tools if t.name == "agy_host_ask_user").input_schema
        result = await client.call_tool("agy_host_ask_user", {"question": "Ready to merge?"})
    assert [t.name for t in listed.tools] == ["agy_host_ask_user", "ask_user", "bridge_poll_result"]
    assert schema["required"] == ["question"]
    assert result.content[0].text == "The user answered: ship it"
    [call] = bridge.turns.calls
    assert (call.name, call.args) == ("agy_host_ask_user", {"question": "Ready to merge?"})
    assert "Ready to merge?" in tty.screen()


async def test_an_answer_rule_answers_ask_user_without_a_terminal() -> None:
    """Through the host's broker, an unattended run answers from its rules."""
    from agy_host.config import AnswerRule
    from agy_host.service.interactions import InteractionBroker

    broker = InteractionBroker(rules=lambda: [AnswerRule(title="*colour*", value="Blue")], env={"AGY_HOST_TTY": "none"})
    args = {"question": "Which colour?", "choices": ["Red", "Blue"]}
    result = await ask_user.ask_user(args, ask=broker.ask)
    assert (result.text, result.is_error) == ("The user chose: Blue", False)
    free = await ask_user.ask_user({"question": "Which colour?"}, ask=broker.ask)
    assert free.text == "The user answered: Blue"
