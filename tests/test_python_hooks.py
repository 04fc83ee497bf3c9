"""Hooks for programs (issue 27 item 2): ``before_tool``, ``after_tool`` and
``on_turn_end`` of the Python API, against real agent processes under trio
and asyncio: the kit's fake ACP agent (a permission request, its own tool
card, a call of the program's tool through the MCP bridge), the fake ``agy``
CLI on stream-json (a host tool through the bridge), and a warm session in a
real keeper (the hooks still run in the program). The harness has its own
suite (plugins/harness_engine/tests/test_python_hooks.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sniffio
import trio
from program_kit import LOOPS, Home, forever, run_on
from warm_kit import Warm, wait_gone

import agy_host
from agy_host.testing.agents import fake_acp_agent_command
from agy_host.testing.isolation import isolated_env

pytest.importorskip("agy_host_acp.engine", reason="the ACP engine is not installed")

SHELL = {
    "toolCallId": "call-1",
    "title": "Run run_shell_command?",
    "kind": "execute",
    "rawInput": {"command": "touch made"},
    "status": "pending",
}
PERMISSION = {
    "permission": {
        "tool_call": SHELL,
        "branches": {"allow": [{"chunk": "P:allow / "}], "reject": [{"chunk": "P:reject / "}]},
    }
}
READ = [
    {"tool_call": {"toolCallId": "read-1", "title": "Read a.txt", "kind": "read", "status": "in_progress"}},
    {"tool_call_update": {"toolCallId": "read-1", "status": "completed"}},
]
SHOUT = {"mcp_call": {"tool": "shout", "arguments": {"text": "hi"}}}
EVERY_CALL = {"prompt": [PERMISSION, *READ, SHOUT, {"stop": "end_turn"}]}


def plain(text: str) -> str:
    """``text`` with the test functions' ``<locals>`` qualifiers left out of the callbacks' names."""
    return re.sub(r"[\w.]*<locals>\.", "", text)


async def nap() -> str:
    """Await the program's own library; say which it is."""
    library = sniffio.current_async_library()
    await (asyncio.sleep(0.01) if library == "asyncio" else trio.sleep(0.01))
    return library


shouted: list[str] = []


def shout(text: str) -> str:
    """Upper-case the text."""
    shouted.append(text)
    return text.upper()


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    shouted.clear()
    yield Home(tmp_path)


@pytest.mark.parametrize("loop", LOOPS)
def test_before_tool_sees_each_call_and_after_tool_and_on_turn_end_see_the_turn(home: Home, loop: str) -> None:
    """``before_tool`` gets the agent's permission request and the program's
    host tool before they run, with name, kind, title, input and origin;
    ``None`` leaves them to the policy (``auto``). ``after_tool`` gets the
    finished card, ``on_turn_end`` the result, all on the program's loop."""
    seen: list[Any] = []

    async def before(call: agy_host.ToolCall) -> None:
        seen.append(("before", await nap(), call))

    async def after(card: agy_host.ToolCard) -> None:
        seen.append(("after", await nap(), (card.call_id, card.status)))

    def end(result: agy_host.TurnResult) -> None:
        seen.append(("end", sniffio.current_async_library(), result.response))

    result = run_on(
        loop,
        lambda: home.run(
            EVERY_CALL, permissions="auto", tools=[shout], before_tool=before, after_tool=after, on_turn_end=end
        ),
    )
    assert (result.exit_code, result.response) == (0, "P:allow / tool result: HI"), result.error
    assert [(kind, library) for kind, library, _ in seen] == [
        ("before", loop),
        ("after", loop),
        ("before", loop),
        ("end", loop),
    ], seen
    asked, card, tool, end_response = (value for _, _, value in seen)
    assert (asked.origin, asked.name, asked.kind, asked.title) == (
        "permission",
        "run_shell_command",
        "execute",
        "Run run_shell_command?",
    )
    assert (asked.input, asked.call_id, asked.rewritable) == ({"command": "touch made"}, "call-1", False)
    assert card == ("read-1", "done")
    assert (tool.origin, tool.name, tool.kind, tool.input, tool.rewritable) == (
        "host_tool",
        "shout",
        "other",
        {"text": "hi"},
        True,
    )
    assert end_response == result.response


@pytest.mark.parametrize("loop", LOOPS)
def test_before_tool_decides_whatever_the_policy(home: Home, loop: str) -> None:
    """``True`` allows what the ``deny`` policy refuses; a reason (str) or
    ``False`` denies what ``auto`` allows: the permission request is refused
    by ``before_tool`` with the reason, the host tool is not run and the
    agent gets an error naming the callback."""

    def allow_all(call: agy_host.ToolCall) -> bool:
        return True

    allowed = run_on(loop, lambda: home.run(EVERY_CALL, permissions="deny", tools=[shout], before_tool=allow_all))
    assert allowed.response == "P:allow / tool result: HI", allowed

    def refuse(call: agy_host.ToolCall) -> str | bool:
        return "no shells here" if call.origin == "permission" else False

    refused, events = run_on(
        loop, lambda: home.events(EVERY_CALL, permissions="auto", tools=[shout], before_tool=refuse)
    )
    assert plain(refused.response) == (
        "P:reject / tool error: host tool 'shout' was refused by agy-host: denied by the before_tool callback refuse()"
    ), refused.response
    [answered] = [e for e in events if isinstance(e, agy_host.PermissionAnswered)]
    assert (answered.selected, answered.policy) == ("deny", "before_tool")
    assert plain(answered.reason) == "denied by the before_tool callback refuse(): no shells here"
    [notice] = [e for e in events if isinstance(e, agy_host.Notice) and e.code == "tool-denied"]
    assert "refuse()" in notice.message
    assert shouted == ["hi"], "the refused call of shout never ran"
    assert refused.exit_code == 5, "its only permission request was refused"


@pytest.mark.parametrize("loop", LOOPS)
def test_a_dict_rewrites_a_host_tools_input_but_not_a_permission_request(home: Home, loop: str) -> None:
    """A host tool runs with the dict ``before_tool`` returned; an agent's
    permission request cannot take a new input (the agent runs its own
    tool), so a different dict refuses it, saying why; the same input back
    is an allow."""

    def rewrite(call: agy_host.ToolCall) -> dict[str, Any]:
        if call.origin == "host_tool":
            return {"text": "rewritten"}
        return {"command": "rm -rf /"}

    result = run_on(loop, lambda: home.run(EVERY_CALL, permissions="auto", tools=[shout], before_tool=rewrite))
    assert result.response == "P:reject / tool result: REWRITTEN", result
    assert shouted == ["rewritten"]

    def same(call: agy_host.ToolCall) -> dict[str, Any]:
        return dict(call.input)

    result = run_on(loop, lambda: home.run(EVERY_CALL, permissions="deny", tools=[shout], before_tool=same))
    assert result.response == "P:allow / tool result: HI", "the input unchanged: allowed"


def test_a_refused_rewrite_of_a_permission_request_says_why(home: Home) -> None:
    def rewrite(call: agy_host.ToolCall) -> dict[str, str] | None:
        return {"command": "ls"} if call.origin == "permission" else None

    _, events = trio.run(lambda: home.events(EVERY_CALL, permissions="auto", tools=[shout], before_tool=rewrite))
    [answered] = [e for e in events if isinstance(e, agy_host.PermissionAnswered)]
    assert answered.selected == "deny" and "cannot be rewritten here" in answered.reason, answered
    assert "the before_tool callback rewrite()" in plain(answered.reason)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_broken_or_slow_hook_is_bounded_and_named(home: Home, loop: str, caplog: pytest.LogCaptureFixture) -> None:
    """A ``before_tool`` that raises, runs past ``turn.permission_timeout_seconds``
    (cancelled on the program's loop) or returns another type refuses the
    call, naming the callback: fail closed, never an allow. An ``after_tool``
    or ``on_turn_end`` that fails is said on the ``agy_host`` logger; the turn
    goes on."""
    home.bound(1)
    ended: list[str] = []

    async def hang(call: agy_host.ToolCall) -> None:
        await forever(ended)

    def boom(call: agy_host.ToolCall) -> None:
        raise ValueError("boom")

    def odd(call: agy_host.ToolCall) -> int:
        return 42

    def fail(value: object) -> None:
        raise RuntimeError(f"cannot look at {type(value).__name__}")

    reasons = {}
    for hook in (hang, boom, odd):
        options: dict[str, Any] = {"before_tool": hook, "after_tool": fail, "on_turn_end": fail}
        with caplog.at_level(logging.WARNING, "agy_host"):
            _, events = run_on(
                loop, lambda options=options: home.events(EVERY_CALL, permissions="auto", tools=[shout], **options)
            )
        [answered] = [e for e in events if isinstance(e, agy_host.PermissionAnswered)]
        [end] = [e for e in events if isinstance(e, agy_host.TurnEnded)]
        assert answered.selected in (None, "deny"), answered
        reasons[hook.__name__] = (plain(answered.reason), plain(end.response))
    # the agent's request waits under the engine's bound, which answers it (cancelled)
    assert reasons["hang"][0] == "no answer within 1s", reasons
    assert reasons["hang"][1] == (
        "tool error: host tool 'shout' was refused by agy-host: the before_tool callback hang() gave no answer "
        "within 1s; refused"
    ), "the host tool waits under the gate's own bound, which names the callback"
    assert ended == ["CancelledError" if loop == "asyncio" else "Cancelled"] * 2, ended
    assert reasons["boom"][0] == "the before_tool callback boom() raised ValueError: boom; refused"
    assert reasons["odd"][0] == (
        "the before_tool callback odd() returned int, not True, False, None, a reason (str) or a dict "
        "(the new input); refused"
    )
    assert shouted == [], "no refusal let the tool run"
    logged = plain(caplog.text)
    assert "the after_tool callback fail() raised RuntimeError: cannot look at ToolCard" in logged
    assert "the on_turn_end callback fail() raised RuntimeError: cannot look at TurnResult" in logged


def test_hooks_that_are_not_callable_are_usage_errors(home: Home) -> None:
    for option in ("before_tool", "after_tool", "on_turn_end"):
        with pytest.raises(agy_host.UsageError, match=f"{option} is not callable"):
            agy_host.open_session(env=home.env, **{option: "yes"})


# -- stream-json -----------------------------------------------------------------------------


@pytest.mark.parametrize("loop", LOOPS)
def test_before_tool_on_stream_json_sees_the_host_tools(
    tmp_path: Path, loop: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Headless ``agy`` asks no permission: on stream-json, ``before_tool``
    sees the host tools the agent calls through the bridge, and decides."""
    pytest.importorskip("agy_host_stream_json.engine", reason="the stream-json engine is not installed")
    pytest.importorskip("agy_host_bridge_mcp", reason="the MCP bridge is not installed")
    from agy_host.testing.agy_cli.agent import make_fake_agy

    calls = [{"mcp_call": {"tool": "shout", "arguments": {"text": t}}} for t in ("one", "two")]
    fake = make_fake_agy(tmp_path / "agy", {"turns": [[*calls, {"say": " end"}]]})
    env = isolated_env(tmp_path / "home", AGY_BIN=str(fake.bin), AGY_HOST_TTY="none")
    # the bridge registers itself for agy in the process's own HOME, not env='s
    monkeypatch.setenv("HOME", env["HOME"])
    cwd = tmp_path / "project"
    cwd.mkdir()
    shouted.clear()
    seen: list[agy_host.ToolCall] = []

    async def before(call: agy_host.ToolCall) -> str | None:
        await nap()
        seen.append(call)
        return "not two" if call.input == {"text": "two"} else None

    async def main() -> agy_host.TurnResult:
        async with agy_host.open_session(
            engine="stream-json", env=env, cwd=cwd, tools=[shout], before_tool=before
        ) as s:
            return await s.run("go")

    result = run_on(loop, main)
    assert [(c.origin, c.name, c.input) for c in seen] == [
        ("host_tool", "shout", {"text": "one"}),
        ("host_tool", "shout", {"text": "two"}),
    ]
    assert shouted == ["one"], result.response
    assert "tool result: ONE" in result.response
    assert "refused by agy-host: denied by the before_tool callback before(): not two" in plain(result.response)


# -- a warm session ------------------------------------------------------------------------


@pytest.fixture
def warm(tmp_path: Path) -> Iterator[Warm]:
    home = Warm(tmp_path)
    try:
        yield home
    finally:
        home.close()


@pytest.mark.parametrize("loop", LOOPS)
def test_a_warm_sessions_hooks_run_in_the_program(warm: Warm, loop: str) -> None:
    """On a warm agent the keeper relays the permission request and asks the
    program about its tool call (``CheckTool``): ``before_tool`` runs here
    and decides (the program's own tool rewritten, the request allowed under
    ``deny``); ``after_tool`` and ``on_turn_end`` see the keeper's events."""
    agent = fake_acp_agent_command(EVERY_CALL, workdir=warm.tmp / "agents")
    shouted.clear()
    seen: list[tuple[str, str, int]] = []

    async def before(call: agy_host.ToolCall) -> bool | dict[str, Any]:
        seen.append((call.origin, await nap(), os.getpid()))
        return {"text": "warm"} if call.origin == "host_tool" else True

    def after(card: agy_host.ToolCard) -> None:
        seen.append(("after", card.call_id, os.getpid()))

    def end(result: agy_host.TurnResult) -> None:
        seen.append(("end", result.response, os.getpid()))

    async def main() -> list[Any]:
        results = []
        for prompt in ("one", "two"):
            async with agy_host.open_session(
                agent=agent.command_line,
                env=warm.env,
                cwd=warm.cwd,
                session="w",
                permissions="deny",
                tools=[shout],
                before_tool=before,
                after_tool=after,
                on_turn_end=end,
            ) as s:
                results.append((await s.run(prompt), s.info.warm))
        return results

    (first, _), (second, _) = run_on(loop, main)
    me = os.getpid()
    for result in (first, second):
        assert (result.exit_code, result.response) == (0, "P:allow / tool result: WARM"), result.error
    turn = [("permission", loop, me), ("after", "read-1", me), ("host_tool", loop, me), ("end", first.response, me)]
    assert seen == turn * 2, seen
    assert shouted == ["warm", "warm"]
    pids = [info["agent_pid"] for info in warm.status()["sessions"] if info.get("agent_pid")]
    warm.close()
    for pid in pids:
        assert wait_gone(pid, 10), f"agent {pid} outlived its keeper"
