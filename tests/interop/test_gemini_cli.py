"""Permission requests from the real Gemini CLI (``gemini --acp``, 0.61.0),
its model replaced by the kit's scripted Gemini API over real HTTP.

The Gemini CLI asks ``session/request_permission`` before its shell tool,
offering ``proceed_always`` ("Allow for this session", ``allow_always``),
``proceed_once`` and ``cancel`` (``reject_once``). The scripted model makes
the call (``run_shell_command``); whether the command ran is checked on disk,
what agy-host answered on the teed wire (validated against the ACP schema),
and the person's part on a pseudo-terminal.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conformance.wire import read_tee_log, validate_tee_log
from interop.cli_runs import RUN_TIMEOUT, Run, advertised_commands, argv_for, finish, no_leftovers, shown_commands
from interop.provision_gemini import GeminiCli
from interop.rawacp import start_cli

from agy_host.testing.models.api import ModelApiProcess
from agy_host.testing.terminal import Pty

pytestmark = pytest.mark.interop


def shell(command: str) -> list[dict[str, Any]]:
    """A model reply that calls the Gemini CLI's shell tool."""
    return [{"call": {"name": "run_shell_command", "args": {"command": command, "description": command}}}]


class Rig:
    """One test's Gemini CLI, scripted model, project folder and environment."""

    def __init__(self, cli: Path, gemini: GeminiCli, env: dict[str, str], tmp_path: Path) -> None:
        self.cli, self.gemini, self.tmp = cli, gemini, tmp_path
        self.env = {**env, "AGY_HOST_ENGINE": "acp", "AGY_HOST_TTY": "none", "GEMINI_API_KEY": "scripted"}
        self.workdir = tmp_path / "project"
        self.workdir.mkdir()
        self.api: ModelApiProcess | None = None
        self.launch = gemini.launch(tmp_path)
        self.log = tmp_path / "wire.jsonl"

    def serve(self, *replies: list[dict[str, Any]]) -> None:
        self.api = ModelApiProcess(self.tmp / "model", {"turns": [list(replies)]})
        self.env["GOOGLE_GEMINI_BASE_URL"] = self.api.url

    def start(self, prompt: str, *flags: str) -> tuple[subprocess.Popen[str], list[str]]:
        argv = argv_for(self.cli, self.launch, self.log, prompt, list(flags))
        return start_cli(argv, self.env, self.workdir), argv

    def run(self, prompt: str, *flags: str) -> Run:
        proc, argv = self.start(prompt, *flags)
        return self.finish(proc, argv)

    def finish(self, proc: subprocess.Popen[str], argv: list[str]) -> Run:
        return finish(proc, argv, self.launch, self.log)

    def close(self, ctx: str) -> None:
        if self.api is not None:
            self.api.close()
        no_leftovers(self.launch, ctx)


@pytest.fixture
def rig(agy_host_cli: Path, gemini_cli: GeminiCli, isolated_env: dict[str, str], tmp_path: Path) -> Iterator[Rig]:
    made = Rig(agy_host_cli, gemini_cli, isolated_env, tmp_path)
    yield made
    if made.api is not None:
        made.api.close()


def asks(run: Run) -> list[dict[str, Any]]:
    return [
        w.frame
        for w in run.wire.lines
        if w.sender == "agent" and w.frame is not None and w.frame.get("method") == "session/request_permission"
    ]


def answers(run: Run) -> list[Any]:
    found = []
    for w in run.wire.lines:
        if w.sender == "agent" and w.frame is not None and w.frame.get("method") == "session/request_permission":
            reply = run.wire.response_to("client", w)
            found.append(None if reply is None or reply.frame is None else reply.frame.get("result"))
    return found


#: flags, the option agy-host must answer, whether the command runs, the exit code
CASES = {
    "auto-allows-once": (("--permissions", "auto"), "proceed_once", True, 0),
    "deny-rejects": (("--permissions", "deny"), "cancel", False, 5),
    # no policy chosen and nobody to ask (no terminal here): refused, exit 5 (issue 26 item 1)
    "default-refuses": ((), "cancel", False, 5),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_policy_answers_the_gemini_cli_and_it_acts_on_the_answer(case: str, rig: Rig) -> None:
    flags, answer, made, code = CASES[case]
    rig.serve(shell("touch made"), [{"verdict": True}])
    run = rig.run("make a file", *flags)
    ctx = run.context
    [ask] = asks(run)
    offered = {o["optionId"]: o["kind"] for o in ask["params"]["options"]}
    assert offered == {"proceed_always": "allow_always", "proceed_once": "allow_once", "cancel": "reject_once"}, ctx
    assert answers(run) == [{"outcome": {"outcome": "selected", "optionId": answer}}], ctx
    assert (rig.workdir / "made").exists() is made, ctx
    assert run.text == ("PERMITTED" if made else "DENIED"), f"the model was told the wrong outcome\n{ctx}"
    assert run.returncode == code and run.events[-1]["exit_code"] == code, ctx
    # No tool_call precedes the request: the card is the request's, titled by it (refused: none).
    cards = [(c["status"], c["kind"], c.get("title")) for c in run.of_type("tool")]
    assert cards == ([("started", "execute", "touch made"), ("done", "execute", "touch made")] if made else []), ctx
    validate_tee_log(run.wire, where="gemini-cli wire")
    rig.close(ctx)


def test_the_gemini_cli_tool_cards_carry_their_titles(rig: Rig) -> None:
    """A read the Gemini CLI does not ask about (``tool_call``, then its
    end), then ``write_todos``, whose kind is ``other`` and which it asks
    about first: each card has its own title, the second neither titled
    ``other`` nor taken for the read before it."""
    (rig.workdir / "a.txt").write_text("one\n")
    todos = {"todos": [{"description": "ship it", "status": "pending"}]}
    rig.serve(
        [{"call": {"name": "read_file", "args": {"file_path": str(rig.workdir / "a.txt")}}}],
        [{"call": {"name": "write_todos", "args": todos}}],
        [{"text": "ok"}],
    )
    run = rig.run("plan", "--permissions", "auto")  # the cards are tested here, not asking
    ctx = run.context
    done = [(c["kind"], c.get("title")) for c in run.of_type("tool") if c["status"] == "done"]
    assert done == [("read", "a.txt"), ("other", "Set 1 todo(s)")], ctx
    rig.close(ctx)


def test_the_gemini_cli_usage_is_the_turns_own(rig: Rig) -> None:
    """The Gemini CLI reports a prompt's tokens in ``_meta.quota`` of the
    prompt response (no ``usage_update``): they are the turn's, each turn
    its own, and no context window or cost is made up."""
    rig.serve([{"text": "one"}, {"usage": {"input": 120, "output": 7}}])
    run = rig.run("count")
    ctx = run.context
    usage = run.events[-1]["usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (120, 7), ctx
    assert "cost_amount" not in usage and "context_size" not in usage, ctx
    [reply] = [w.frame for w in run.wire.lines if w.sender == "agent" and w.frame and "stopReason" in str(w.frame)]
    assert reply is not None and "quota" in str(reply.get("result", {}).get("_meta", {})), ctx
    rig.close(ctx)


def test_the_gemini_clis_mode_announcement_is_a_notice_not_part_of_the_answer(rig: Rig) -> None:
    """Asked for a mode (``--mode autoEdit``), the Gemini CLI 0.61 says
    ``[MODE_UPDATE] autoEdit`` as a message chunk of its own: the answer is
    the model's text only, and the mode is told as a notice."""
    trusted = rig.launch.home / ".gemini" / "trustedFolders.json"  # it refuses autoEdit elsewhere
    trusted.parent.mkdir(parents=True, exist_ok=True)
    trusted.write_text(json.dumps({str(rig.workdir): "TRUST_FOLDER"}))
    rig.serve([{"text": "the answer"}])
    run = rig.run("hi", "--mode", "autoEdit")
    ctx = run.context
    said = [
        w.frame
        for w in run.wire.lines
        if w.sender == "agent" and w.frame is not None and "[MODE_UPDATE]" in json.dumps(w.frame)
    ]
    assert said, f"the Gemini CLI did not announce the mode this time\n{ctx}"
    [end] = run.of_type("turn_end")
    assert end["response"] == "the answer", ctx
    assert all("[MODE_UPDATE]" not in e.get("delta", "") for e in run.of_type("text")), ctx
    notices = [e["message"] for e in run.of_type("notice") if e.get("code") == "agent-mode"]
    assert notices == ["the agent's mode is now autoEdit"], ctx
    rig.close(ctx)


def test_the_gemini_cli_commands_arrive_as_a_commands_event(rig: Rig) -> None:
    """The Gemini CLI advertises its slash commands (``/memory``, ``/init``,
    ...) once the session exists; the run shows the same names it sent."""
    rig.serve([{"text": "ok"}])
    run = rig.run("hi")
    ctx = run.context
    advertised = advertised_commands(run.wire)
    assert advertised, f"the Gemini CLI sent no available_commands_update\n{ctx}"
    assert shown_commands(run.events) == advertised, ctx
    rig.close(ctx)


def test_allow_for_this_session_is_chosen_once_at_the_terminal(rig: Rig) -> None:
    """The person picks the Gemini CLI's "Allow for this session" once; the
    second shell command of the turn runs without a second prompt (remembered
    by the agent, or by agy-host's broker when the agent asks again)."""
    rig.serve(shell("touch one"), shell("touch two"), [{"text": "done"}])
    with Pty() as tty:
        rig.env["AGY_HOST_TTY"] = tty.path
        tty.type("1\n")  # 1) Allow for this session
        run = rig.run("make two files", "--permissions", "ask")
        screen = tty.screen()
    ctx = run.context + "\n--- terminal ---\n" + screen
    assert screen.count("asks for permission") == 1, ctx
    assert (
        "1) Allow for this session  [allow_always]  (if chosen, not asked again for this tool this session)" in screen
    ), ctx
    assert (rig.workdir / "one").exists() and (rig.workdir / "two").exists(), ctx
    perms = run.of_type("permission")
    assert perms[0]["selected"] == "proceed_always" and perms[0]["policy"] == "ask", ctx
    assert all(p["policy"] == "remembered" and p["selected"] == "proceed_always" for p in perms[1:]), ctx
    assert run.returncode == 0, ctx
    validate_tee_log(run.wire, where="gemini-cli wire")
    rig.close(ctx)


def test_ctrl_c_with_a_permission_prompt_pending_cancels_it(rig: Rig) -> None:
    """Nobody answers the prompt; Ctrl-C answers the pending request
    ``cancelled`` at once (it does not outlive its turn), the command does
    not run, and the run exits 130 with no agent left."""
    rig.serve(shell("touch never"), [{"verdict": True}])
    with Pty() as tty:
        rig.env["AGY_HOST_TTY"] = tty.path
        proc, argv = rig.start("make a file", "--permissions", "ask")
        deadline = time.monotonic() + RUN_TIMEOUT
        shown = ""
        while "asks for permission" not in shown:
            shown += tty.screen()
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"no prompt appeared\n{rig.finish(proc, argv).context}\n{shown}")
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGINT)
        run = rig.finish(proc, argv)
    ctx = run.context
    assert answers(run) == [{"outcome": {"outcome": "cancelled"}}], ctx
    assert read_tee_log(rig.log).first("client", "session/cancel") is not None, ctx
    assert not (rig.workdir / "never").exists(), ctx
    assert run.returncode == 130, ctx
    validate_tee_log(run.wire, where="gemini-cli wire")
    rig.close(ctx)


def test_a_marker_is_unique_per_launch(gemini_cli: GeminiCli, tmp_path: Path) -> None:
    first, second = gemini_cli.launch(tmp_path), gemini_cli.launch(tmp_path)
    assert first.marker != second.marker and first.marker in " ".join(first.argv)
    assert uuid.UUID(Path(first.marker).name.removeprefix("gemini-home-"))


def test_a_slash_command_runs_in_the_gemini_cli_with_an_agents_md_and_a_system_prompt(rig: Rig) -> None:
    """The Gemini CLI runs a prompt as its own command when the prompt's
    leading text starts with ``/`` (``/about`` answers without a model call).
    The host's system block (system prompt, AGENTS.md) must not go in front:
    it waits for the conversation's first plain prompt."""
    (rig.workdir / ".git").mkdir()  # the AGENTS.md walk stops here
    (rig.workdir / "AGENTS.md").write_text("Run the tests first.\n")
    rig.serve([{"echo": True}])
    run = rig.run("/about", "--system-prompt", "ALWAYS BE BRIEF")
    ctx = run.context
    assert run.returncode == 0, ctx
    assert "Gemini CLI Info" in run.text, f"the command went to the model as text\n{ctx}"
    assert rig.api is not None and rig.api.requests() == [], ctx
    sent = run.wire.first("client", "session/prompt")
    assert sent is not None and sent.frame is not None, ctx
    assert sent.frame["params"]["prompt"] == [{"type": "text", "text": "/about"}], ctx
    validate_tee_log(run.wire, where="gemini-cli wire")
    rig.close(ctx)


def test_a_second_command_never_shows_the_replayed_history_as_its_answer(rig: Rig) -> None:
    """Two commands on one session: the second loads the conversation. When
    the Gemini CLI's ``session/load`` succeeds it answers first and replays
    the history afterwards; none of it is the new answer. When the load is
    refused ("Invalid session identifier", which the Gemini CLI does for a
    while after a session's first turn), the turn starts a new conversation
    and says so in agy-host's words, and ``--resume`` exits 4.

    Seen here with 0.61: a fresh Gemini CLI process asked to load a session
    re-initializes that session's chat file before reading it, so the load
    finds nothing resumable ("No previous sessions found for this project").
    Warm agents, not loads, keep a Gemini CLI conversation across commands."""
    rig.serve([{"echo": True}])  # each turn answers with the user text the model was sent
    first = rig.run("first question", "--session", "work")
    assert first.returncode == 0 and first.text.endswith("first question"), first.context
    rig.log.rename(rig.tmp / "wire-first.jsonl")  # the same agent command (the binding's key), a fresh log
    second = rig.run("second question", "--session", "work")
    ctx = second.context
    assert second.returncode == 0, ctx
    assert second.text.endswith("second question") and "first question" not in second.text, ctx
    [end] = second.of_type("turn_end")
    assert end["response"] == second.text, ctx
    load = second.wire.first("client", "session/load")
    assert load is not None, ctx
    reply = second.wire.response_to("agent", load)
    assert reply is not None and reply.frame is not None, ctx
    if "error" in reply.frame:  # refused: a new conversation, said in our words
        notices = [n for n in second.of_type("notice") if n.get("code") == "conversation-replaced"]
        assert len(notices) == 1 and "--resume {number}" not in notices[0]["message"], ctx
        assert end.get("replaced_conversation_id") == first.of_type("turn_end")[0]["conversation_id"], ctx
    else:  # loaded: the replay came (after the answer, for the Gemini CLI) and was dropped
        replayed = [
            w
            for w in second.wire.lines
            if w.sender == "agent"
            and w.frame is not None
            and w.frame.get("method") == "session/update"
            and w.frame["params"]["update"].get("sessionUpdate") == "user_message_chunk"
        ]
        assert replayed, f"the Gemini CLI replayed nothing\n{ctx}"
        assert "replaced_conversation_id" not in end, ctx
    validate_tee_log(second.wire, where="gemini-cli wire")
    rig.close(ctx)


def test_a_warm_gemini_cli_continues_the_conversation_across_two_commands(rig: Rig) -> None:
    """What the test above cannot get from ``session/load`` (a new Gemini CLI
    process refuses it), a warm agent keeps: the second command runs on the
    same Gemini CLI, nothing is loaded, and its model request carries the
    first exchange."""
    from warm_kit import stop_keeper

    rig.env["AGY_HOST_KEEP_ALIVE_MINUTES"] = "5"
    rig.serve([{"echo": True}])  # each turn answers with the user text the model was sent
    ctx = ""
    try:
        first = rig.run("first question", "--session", "work")
        ctx = first.context
        assert first.returncode == 0 and first.text.endswith("first question"), ctx
        second = rig.run("second question", "--session", "work")
        ctx = second.context
        assert second.returncode == 0, ctx
        assert second.text.endswith("second question") and "first question" not in second.text, ctx
        [end1], [end2] = first.of_type("turn_end"), second.of_type("turn_end")
        assert end2["conversation_id"] == end1["conversation_id"] and "replaced_conversation_id" not in end2, ctx
        # one Gemini CLI process served both commands (the teed wire holds both): no second start, no load
        methods = [w.frame.get("method") for w in second.wire.lines if w.sender == "client" and w.frame is not None]
        assert methods.count("initialize") == 1 and "session/load" not in methods, methods
        assert rig.api is not None
        asked = [r for r in rig.api.requests() if "second question" in str(r.get("body"))]
        assert asked and all("first question" in str(r["body"]) for r in asked), (
            f"the model was not shown the first exchange: {asked}\n{ctx}"
        )
        validate_tee_log(second.wire, where="gemini-cli wire (warm)")
    finally:
        stop_keeper([str(rig.cli)], rig.env)
    rig.close(ctx)
