"""Hooks and tool lists on the real Antigravity harness (issue 27 items 2
and 3), against the kit's scripted model API.

While the host gates tools, the harness asks agy-host about every step it is
about to run (its pre-tool hook): ``before_tool`` sees each with the name of
its card, its kind, title and input, and decides; a dict rewrites the step's
input (the harness runs the new one), a denial is the model's error and a
denied card. A step that also needs permission (the dynamic policy rule) is
decided once. The tool lists are the same gate: a ``--deny-tool`` pattern
refuses a step naming itself, and a ``--allow-tool`` pattern lets a tool
that needs permission run unasked (no rule for it in the harness's policy).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import sniffio
import trio

import agy_host

from .conftest import HarnessHome

WAIT = 5000
LOOPS = ["trio", "asyncio"]


def run_on(loop: str, fn: Callable[[], Awaitable[Any]]) -> Any:
    if loop == "trio":
        return trio.run(fn)
    return asyncio.run(fn())  # type: ignore[arg-type]


def command(hhome: HarnessHome, line: str) -> dict[str, Any]:
    return {
        "call": {"name": "run_command", "args": {"CommandLine": line, "Cwd": str(hhome.cwd), "WaitMsBeforeAsync": WAIT}}
    }


def echo(x: int) -> str:
    """Echo the number."""
    return f"echo {x}"


@pytest.mark.parametrize("loop", LOOPS)
def test_before_tool_sees_every_harness_step_and_decides(hhome: HarnessHome, loop: str) -> None:
    """A read, two commands and a host tool: ``before_tool`` sees them all on
    the program's loop, rewrites the first command (the harness runs the new
    one, and its permission is not asked again), denies the second with a
    reason (not run; the model is told; a denied card), rewrites the host
    tool's input. ``after_tool`` sees the cards, ``on_turn_end`` the result."""
    hhome.configure(permissions={"policy": "ask"})  # nobody to ask here: it would refuse both commands
    model = hhome.serve(
        {
            "turns": [
                [
                    [command(hhome, "touch made")],
                    [{"call": {"name": "list_dir", "args": {"DirectoryPath": str(hhome.cwd)}}}],
                    [command(hhome, "touch second")],
                    [{"call": {"name": "echo", "args": {"x": 1}}}],
                    [{"text": "end"}],
                ]
            ]
        }
    )
    seen: list[agy_host.ToolCall] = []
    libraries: set[str] = set()
    cards: list[tuple[str, str]] = []
    ended: list[agy_host.TurnResult] = []

    async def before(call: agy_host.ToolCall) -> Any:
        libraries.add(sniffio.current_async_library())
        await (asyncio.sleep(0) if loop == "asyncio" else trio.sleep(0))
        seen.append(call)
        if call.input.get("CommandLine") == "touch made":
            return {**call.input, "CommandLine": "touch rewritten"}
        if call.name == "run_command":
            return "not a second one"
        if call.origin == "host_tool":
            return {"x": 7}
        return None

    async def main() -> tuple[agy_host.TurnResult, list[agy_host.HostEvent]]:
        async with agy_host.open_session(
            engine="harness",
            env=hhome.env,
            cwd=hhome.cwd,
            tools=[echo],
            before_tool=before,
            after_tool=lambda card: cards.append((card.name, card.status)),
            on_turn_end=ended.append,
        ) as s:
            events = [e async for e in s.prompt("go")]
            assert s.result is not None
            return s.result, events

    result, events = run_on(loop, main)
    assert libraries == {loop}
    assert [(c.origin, c.name, c.kind) for c in seen] == [
        ("harness_step", "run_command", "execute"),
        ("harness_step", "list_dir", "read"),
        ("harness_step", "run_command", "execute"),
        ("host_tool", "echo", "other"),
    ], seen
    first = seen[0]
    assert first.title == "Run: touch made" and first.rewritable and first.call_id, first
    assert first.input == {"CommandLine": "touch made", "Cwd": str(hhome.cwd), "WaitMsBeforeAsync": WAIT}
    assert sorted(p.name for p in hhome.cwd.iterdir()) == ["rewritten"], "the rewritten command ran, the denied one not"
    answered = [e for e in events if isinstance(e, agy_host.PermissionAnswered)]
    # the policy (nobody to ask: deny) was not asked: before_tool decided both commands, once each
    assert [(a.title, a.selected, a.policy) for a in answered] == [
        ("Run: touch rewritten", "allow", "before_tool"),
        ("Run: touch second", "reject", "before_tool"),
    ], answered
    assert answered[1].reason.endswith("before(): not a second one")
    assert ("run_command", "denied") in cards and ("list_dir", "done") in cards, cards
    told = json.dumps([r["body"]["contents"][-1] for r in model.requests()])
    assert "denied by pre-tool hook: denied by the before_tool callback" in told, told
    assert "echo 7" in told, "the host tool ran with the rewritten input"
    assert ended == [result] and result.response == "end"


def test_deny_and_allow_tool_lists_on_the_harness(hhome: HarnessHome) -> None:
    """``--deny-tool kind:execute`` refuses the command inside the harness's
    hook, naming the list, the pattern and the flag, and lets the read run;
    ``--allow-tool run_command`` under ``--permissions deny`` runs it unasked."""
    hhome.serve(
        {
            "turns": [
                [
                    [command(hhome, "touch denied")],
                    [{"verdict": True}, {"call": {"name": "list_dir", "args": {"DirectoryPath": str(hhome.cwd)}}}],
                    [{"text": " end"}],
                ]
            ]
        }
    )
    run = hhome.turn("lists", "go", "--permissions", "auto", "--deny-tool", "kind:execute")
    assert run.returncode == 5, run
    [asked] = run.of("permission")
    assert (asked["selected"], asked["policy"]) == ("reject", "disallowed_tools"), asked
    assert asked["reason"] == (
        "'run_command' denied by disallowed_tools pattern 'kind:execute' (--deny-tool, matches kind 'execute')"
    )
    assert not (hhome.cwd / "denied").exists()
    assert {(e["name"], e["status"]) for e in run.of("tool")} >= {("run_command", "denied"), ("list_dir", "done")}
    assert run.text == "DENIED end", run

    hhome.serve({"turns": [[[command(hhome, "touch allowed")], [{"verdict": True}]]]})
    run = hhome.turn("lists2", "go", "--permissions", "deny", "--allow-tool", "run_*")
    assert run.returncode == 0 and run.text == "PERMITTED", run
    assert (hhome.cwd / "allowed").exists()
    assert run.of("permission") == [], "allowed by the list: the harness did not ask"
