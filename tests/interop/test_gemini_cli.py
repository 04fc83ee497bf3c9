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
from interop.cli_runs import RUN_TIMEOUT, Run, argv_for, finish, no_leftovers
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
    "auto-allows-once": ((), "proceed_once", True, 0),
    "deny-rejects": (("--permissions", "deny"), "cancel", False, 5),
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
    validate_tee_log(run.wire, where="gemini-cli wire")
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
    assert "1) Allow for this session  [allow_always]  (remembered for this session)" in screen, ctx
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
