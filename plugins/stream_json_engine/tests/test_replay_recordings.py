"""Every recorded agy CLI run in the vendored fixtures, replayed through the engine.

The recording is served by the replay agent (``python -m
agy_host.testing.replay.agent FILE``: it writes the recorded stdout lines,
waits for each recorded stdin line, and exits with the recorded exit code
once stdin closes), behind a small wrapper used as ``AGY_BIN`` that records
the command line the engine built and, where the recording kept agy's
stderr in a separate file, writes it to stderr. One test per file; expected
values are read from the recording, never from the engine's output.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from agy_host.contract.events import Activity, TextActivity, ToolDoneActivity, ToolErrorActivity, ToolStartActivity
from agy_host.testing.contract import collect, outcome_of, text_of
from agy_host.testing.replay.recordings import AgentFrame, ClientFrame, read_recording
from agy_host_stream_json.config import BinaryChoice
from agy_host_stream_json.engine import StreamJsonEngine

from ._support import all_usages, flag, make_engine, notices, of_type, req, usages

RECORDED = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "recorded"
ANY = "anyagent-rs-antigravity"
PASEO = "paseo-agy-cli-1.1.14"
MPR = "mprasanjith-anyagent"

pytestmark = pytest.mark.skipif(not RECORDED.exists(), reason="vendored recordings (tests/fixtures/recorded) missing")


class Replay:
    """A wrapper script serving one recording as ``agy``."""

    def __init__(self, tmp: Path, recording: Path, *, stderr: Path | None = None, steer: str | None = None) -> None:
        n = len(list(tmp.glob("agy-replay-*")))
        self.bin = tmp / f"agy-replay-{n}"
        self.args = tmp / f"agy-replay-{n}.args"
        replay = shlex.join([sys.executable, "-m", "agy_host.testing.replay.agent", str(recording)])
        lines = ["#!/bin/sh", f"printf '%s\\n' --spawn-- \"$@\" >> {shlex.quote(str(self.args))}"]
        if stderr is not None:
            lines.append(f"cat {shlex.quote(str(stderr))} >&2")
        if steer is not None:  # a second stdin line written mid-turn, as the recorder did
            lines.append(f"{{ IFS= read -r line; printf '%s\\n' \"$line\" {shlex.quote(steer)}; cat; }} | {replay}")
        else:
            lines.append(f"exec {replay}")
        self.bin.write_text("\n".join(lines) + "\n")
        self.bin.chmod(0o755)

    @property
    def env(self) -> dict[str, str]:
        return {"AGY_BIN": str(self.bin)}

    def argvs(self) -> list[list[str]]:
        text = self.args.read_text() if self.args.exists() else ""
        runs = text.split("--spawn--\n")[1:]
        return [run.splitlines() for run in runs]


def frames(name: str) -> list[dict[str, Any]]:
    return [e.frame for e in read_recording(RECORDED / name) if isinstance(e, AgentFrame)]


def results(name: str) -> list[dict[str, Any]]:
    return [f["result"] for f in frames(name) if f.get("event") == "result"]


def step_total(name: str) -> int:
    """The recording's own sum of step usages (what one turn used)."""
    steps = [f["step_update"] for f in frames(name) if f.get("event") == "step_update"]
    return sum(s["usage"]["total_tokens"] for s in steps if "usage" in s)


async def run(tmp: Path, replay: Replay, *requests: Any) -> list[list[Activity]]:
    engine = make_engine(tmp, replay.env)
    return await run_on(engine, *requests)


async def run_on(engine: StreamJsonEngine, *requests: Any) -> list[list[Activity]]:
    out = []
    async with engine.open_driver() as drv:
        for request in requests or (req(),):
            out.append(await collect(await drv.run(request)))
    return out


async def one(tmp: Path, name: str, request: Any = None, **kw: Any) -> list[Activity]:
    [acts] = await run(tmp, Replay(tmp, RECORDED / name, **kw), request or req())
    return acts


# -- anyagent-rs: agy 1.1.24 ---------------------------------------------------------


async def test_cli_01_handshake_binds_the_conversation_then_waits(tmp_path: Path) -> None:
    [init] = frames(f"{ANY}/cli-01-handshake.jsonl")
    acts = await one(tmp_path, f"{ANY}/cli-01-handshake.jsonl", req(inactivity_s=3.0))
    out = outcome_of(acts)
    assert (out.error_kind, out.conversation_id) == ("inactivity", init["conversation_id"])


async def test_cli_02_pong(tmp_path: Path) -> None:
    [result] = results(f"{ANY}/cli-02-pong.jsonl")
    acts = await one(tmp_path, f"{ANY}/cli-02-pong.jsonl")
    out = outcome_of(acts)
    assert (out.status, out.response, out.conversation_id) == ("ok", result["response"], result["conversation_id"])
    assert text_of(acts) == "pong\n"
    [usage] = usages(acts)
    assert usage.turn.total_tokens == usage.cumulative.total_tokens == result["usage"]["total_tokens"]  # type: ignore[union-attr]
    assert usage.turn.input_tokens == 13762 and usage.turn.output_tokens == 1


async def test_cli_03_tool_ask_failures_and_a_denial(tmp_path: Path) -> None:
    acts = await one(tmp_path, f"{ANY}/cli-03-tool-ask.jsonl")
    starts = of_type(acts, ToolStartActivity)
    assert [(s.name, s.kind) for s in starts] == [("write_to_file", "edit"), ("run_command", "execute")]
    assert starts[0].args == {"TargetFile": "~/.gemini/antigravity-cli/scratch/probe.txt"}
    write, command = of_type(acts, ToolErrorActivity)
    assert not write.denied and "is not a valid artifact path" in write.message
    assert command.denied and "user denied permission to run command" in command.message
    assert any("denied 1 tool call(s) that need permission: run_command" in n for n in notices(acts))
    out = outcome_of(acts)
    assert (out.status, out.response) == ("ok", "")  # agy's own verdict: SUCCESS, nothing said
    assert usages(acts)[0].turn.total_tokens == results(f"{ANY}/cli-03-tool-ask.jsonl")[0]["usage"]["total_tokens"]
    # each step's usage is reported as it arrives (a budget can stop the turn mid-way), as a running
    # sum that only grows; agy's result, last, is the account that stands
    running = [u.turn.total_tokens or 0 for u in all_usages(acts)[:-1]]
    assert len(running) >= 2 and running == sorted(running) and running[0] > 0
    assert all(u.cumulative is None for u in all_usages(acts)[:-1]) and usages(acts)[0].cumulative is not None


async def test_cli_04_tool_skip_permissions(tmp_path: Path) -> None:
    replay = Replay(tmp_path, RECORDED / f"{ANY}/cli-04-tool-skip.jsonl")
    [acts] = await run(tmp_path, replay, req(skip_permissions=True))
    assert "--dangerously-skip-permissions" in replay.argvs()[0]
    [done] = of_type(acts, ToolDoneActivity)
    assert (done.name, done.denied, done.args) == (
        "write_to_file",
        False,
        {"TargetFile": "~/.gemini/antigravity-cli/scratch/probe.txt"},
    )
    assert text_of(acts) == results(f"{ANY}/cli-04-tool-skip.jsonl")[0]["response"]
    assert not any("denied" in n for n in notices(acts))


async def test_cli_05_question_is_skipped_headlessly(tmp_path: Path) -> None:
    acts = await one(tmp_path, f"{ANY}/cli-05-question.jsonl")
    assert text_of(acts) == results(f"{ANY}/cli-05-question.jsonl")[0]["response"]
    assert not of_type(acts, ToolStartActivity)  # the `unknown` step is not a tool
    assert outcome_of(acts).status == "ok"


async def test_cli_05_question_answer_second_turn_on_the_same_process(tmp_path: Path) -> None:
    name = f"{ANY}/cli-05-question-answer.jsonl"
    first_r, second_r = results(name)
    engine = make_engine(tmp_path, Replay(tmp_path, RECORDED / name).env)
    async with engine.open_driver() as drv:
        first = await collect(await drv.run(req("ask")))
        second = await collect(await drv.run(req("blue", conversation_id=outcome_of(first).conversation_id)))
        assert drv.stats["spawns"] == 1 and drv.stats["reused"] == 1
    assert text_of(first) == first_r["response"] and text_of(second) == second_r["response"]
    [usage] = usages(second)
    delta = second_r["usage"]["total_tokens"] - first_r["usage"]["total_tokens"]
    assert usage.turn.total_tokens == delta == 14017
    assert usage.cumulative is not None and usage.cumulative.total_tokens == second_r["usage"]["total_tokens"]


async def test_cli_06_steer_a_line_queued_mid_turn_never_leaks_into_the_turn(tmp_path: Path) -> None:
    name = f"{ANY}/cli-06-steer.jsonl"
    sent = [e.frame for e in read_recording(RECORDED / name) if isinstance(e, ClientFrame)]
    replay = Replay(tmp_path, RECORDED / name, steer=json.dumps(sent[1]))
    engine = make_engine(tmp_path, replay.env)
    async with engine.open_driver() as drv:
        acts = await collect(await drv.run(req()))
        with trio.fail_after(10):  # the queued turn's lines may still be on their way
            while drv.orphan_lines < 4:
                await trio.sleep(0.01)
        snap = drv.snapshot()
    first = results(name)[0]
    assert text_of(acts) == outcome_of(acts).response == first["response"]
    assert snap.extra["orphan_lines"] == 4  # the queued turn: user_input, two agent_response frames, its result


async def test_cli_07_cancel_agys_own_timeout_is_a_timeout(tmp_path: Path) -> None:
    acts = await one(tmp_path, f"{ANY}/cli-07-cancel.jsonl")
    out = outcome_of(acts)
    assert (out.error_kind, out.agent_stop_reason) == ("timeout", "ERROR")
    assert "agy: timeout waiting for response" in out.error and "(agy exit status 1)" in out.error
    assert [s.name for s in of_type(acts, ToolStartActivity)] == ["run_command"]
    assert usages(acts)[0].turn.total_tokens == 13836


async def test_cli_07_cancel_resume_continues_the_conversation(tmp_path: Path) -> None:
    name = f"{ANY}/cli-07-cancel-resume.jsonl"
    [result] = results(name)
    replay = Replay(tmp_path, RECORDED / name)
    [acts] = await run(tmp_path, replay, req(conversation_id=result["conversation_id"]))
    assert flag(replay.argvs()[0], "--conversation") == result["conversation_id"]
    assert text_of(acts) == result["response"]
    [usage] = usages(acts)
    assert usage.turn.total_tokens == step_total(name) == 14152  # first result of a resumed conversation
    assert usage.cumulative is not None and usage.cumulative.total_tokens == result["usage"]["total_tokens"]


async def test_cli_08_resume_a_new_conversation(tmp_path: Path) -> None:
    [result] = results(f"{ANY}/cli-08-resume-a.jsonl")
    acts = await one(tmp_path, f"{ANY}/cli-08-resume-a.jsonl")
    assert text_of(acts) == result["response"] == "ok\n"
    assert outcome_of(acts).conversation_id == result["conversation_id"]


async def test_cli_08_resume_b_after_a_host_restart(tmp_path: Path) -> None:
    name = f"{ANY}/cli-08-resume-b.jsonl"
    [result] = results(name)
    acts = await one(tmp_path, name, req(conversation_id=result["conversation_id"]))
    assert text_of(acts) == "You asked me to remember the word **pineapple**.\n"
    [usage] = usages(acts)
    assert usage.turn.total_tokens == step_total(name) == 13971
    assert usage.cumulative is not None and usage.cumulative.total_tokens == 27723


async def test_cli_08_resume_c_usage_delta_across_processes(tmp_path: Path) -> None:
    b, c = RECORDED / f"{ANY}/cli-08-resume-b.jsonl", RECORDED / f"{ANY}/cli-08-resume-c.jsonl"
    [rb], [rc] = results(f"{ANY}/cli-08-resume-b.jsonl"), results(f"{ANY}/cli-08-resume-c.jsonl")
    engine = make_engine(tmp_path, Replay(tmp_path, b).env)
    await run_on(engine, req(conversation_id=rb["conversation_id"]))
    second = Replay(tmp_path, c)
    engine.binary = BinaryChoice(command=str(second.bin), source="AGY_BIN", value=str(second.bin), found=True)
    [acts] = await run_on(engine, req(conversation_id=rc["conversation_id"]))  # a new process, same engine
    [usage] = usages(acts)
    assert usage.turn.total_tokens == rc["usage"]["total_tokens"] - rb["usage"]["total_tokens"] == 14188
    assert text_of(acts) == rc["response"]


def split_runs(tmp: Path, name: str) -> list[Path]:
    """cli-09-config holds two runs, each starting with a ``_meta`` line."""
    runs: list[list[str]] = []
    for line in (RECORDED / name).read_text().split("\n"):
        if line.startswith('{"_meta"'):
            runs.append([])
        if line.strip():
            runs[-1].append(line)
    paths = []
    for i, lines in enumerate(runs):
        path = tmp / f"run-{i}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    return paths


async def test_cli_09_config_model_effort_conflict_and_unknown_model(tmp_path: Path) -> None:
    conflict_run, unknown_run = split_runs(tmp_path, f"{ANY}/cli-09-config.jsonl")
    [conflict] = await run(tmp_path, Replay(tmp_path, conflict_run), req(model="gemini-3.8-flash-low"))
    out = outcome_of(conflict)
    assert out.error_kind == "usage" and out.conversation_id is None
    assert "--model gemini-3.8-flash-low conflicts with --effort=high" in out.error
    assert "(agy exit status 1)" in out.error
    [unknown] = await run(tmp_path, Replay(tmp_path, unknown_run), req(model="not-a-real-model"))
    out = outcome_of(unknown)
    assert out.error_kind == "usage" and "not-a-real-model is not recognized" in out.error
    assert "Claude Opus 4.6 (Thinking)" in out.error and "agy-host models" in out.error


async def test_cli_09_config_b_plan_mode(tmp_path: Path) -> None:
    replay = Replay(tmp_path, RECORDED / f"{ANY}/cli-09-config-b.jsonl")
    [acts] = await run(tmp_path, replay, req(mode="plan"))
    assert flag(replay.argvs()[0], "--mode") == "plan"
    assert text_of(acts) == "pong\n" and outcome_of(acts).status == "ok"


async def test_cli_10_logged_out(tmp_path: Path) -> None:
    stderr = RECORDED / f"{ANY}/cli-10-logged-out.stderr.txt"
    acts = await one(tmp_path, f"{ANY}/cli-10-logged-out.jsonl", stderr=stderr)
    out = outcome_of(acts)
    assert out.error_kind == "auth"
    assert "authentication failed or timed out" in out.error
    assert stderr.read_text().strip() in out.error  # "Error: authentication required. Run 'agy' to log in, ..."


async def test_cli_12_subagent(tmp_path: Path) -> None:
    name = f"{ANY}/cli-12-subagent.jsonl"
    acts = await one(tmp_path, name)
    starts = {s.name: s for s in of_type(acts, ToolStartActivity)}
    assert set(starts) == {"define_subagent", "invoke_subagent"}
    assert starts["invoke_subagent"].args["subagents"][0]["type_name"] == "pong_agent"
    done = {d.name: d for d in of_type(acts, ToolDoneActivity)}
    assert done["define_subagent"].output.startswith('Subagent "pong_agent" defined successfully')
    assert done["invoke_subagent"].output == "Pong Responder (conversation 6fe5b36d-cd1a-4799-9db9-8bf0d1624c7e)"
    assert text_of(acts) == results(name)[0]["response"]


async def test_cli_13_slash_command_exit_2(tmp_path: Path) -> None:
    out = outcome_of(await one(tmp_path, f"{ANY}/cli-13-slash.jsonl", req("/help")))
    assert out.error_kind == "usage" and "/help is answered by the CLI itself" in out.error
    assert "(agy exit status 2)" in out.error


# -- paseo: agy 1.1.14 raw captures --------------------------------------------------------


async def test_paseo_pong_mode_plan_disable_slash(tmp_path: Path) -> None:
    stderr = RECORDED / f"{PASEO}/pong-mode-plan-disable-slash.stderr.txt"
    acts = await one(tmp_path, f"{PASEO}/pong-mode-plan-disable-slash.stdout.jsonl", req(mode="plan"), stderr=stderr)
    assert any(f"agy: {stderr.read_text().strip()}" == n for n in notices(acts))
    assert text_of(acts) == "pong\n"
    assert usages(acts)[0].turn.thinking_tokens == 148


async def test_paseo_error_model_rejected(tmp_path: Path) -> None:
    out = outcome_of(await one(tmp_path, f"{PASEO}/error-model-rejected.stdout.jsonl"))
    assert out.error_kind == "usage"
    assert "model __s3_t08_nonexistent_model__ is not recognized" in out.error and "Gemini 3.5 Flash (Low)" in out.error


async def test_paseo_pong_model_display_name(tmp_path: Path) -> None:
    name = f"{PASEO}/pong-model-display-name.stdout.jsonl"
    replay = Replay(tmp_path, RECORDED / name)
    [acts] = await run(tmp_path, replay, req(model="Gemini 3.7 Flash (Low)", effort="high"))
    argv = replay.argvs()[0]
    assert flag(argv, "--model") == "Gemini 3.7 Flash (Low)" and "--effort" not in argv
    assert text_of(acts) == results(name)[0]["response"]


async def test_paseo_pong_model_display_name_single_delta(tmp_path: Path) -> None:
    name = f"{PASEO}/pong-model-display-name-single-delta.stdout.jsonl"
    acts = await one(tmp_path, name)
    assert [a.delta for a in of_type(acts, TextActivity)] == ["pong\n"]
    assert outcome_of(acts).response == results(name)[0]["response"]


async def test_paseo_quota_reached_claude(tmp_path: Path) -> None:
    out = outcome_of(await one(tmp_path, f"{PASEO}/quota-reached-claude.stdout.jsonl"))
    assert (out.error_kind, out.agent_stop_reason) == ("agent", "ERROR")
    assert "Individual quota reached" in out.error and "quota resets in 100h23m59s" in out.error


async def test_paseo_help_flag_needs_argument_exit_2(tmp_path: Path) -> None:
    stderr = RECORDED / f"{PASEO}/help-flag-needs-argument.stderr.txt"
    wrapper = tmp_path / "agy-flags"
    wrapper.write_text(f"#!/bin/sh\ncat {shlex.quote(str(stderr))} >&2\nexit 2\n")
    wrapper.chmod(0o755)
    [acts] = await run_on(make_engine(tmp_path, {"AGY_BIN": str(wrapper)}))
    out = outcome_of(acts)
    assert out.error_kind == "usage"
    assert "agy refused its command line: flag needs an argument: -print" in out.error
    assert "Usage of agy" not in out.error and out.error.endswith("(agy exit status 2)")


# -- mprasanjith/anyagent: an older build ---------------------------------------------------


async def test_mprasanjith_tools_denied(tmp_path: Path) -> None:
    name = f"{MPR}/agy-cli-stream-json-tools-denied.jsonl"
    [result] = results(name)
    acts = await one(tmp_path, name)
    [error] = of_type(acts, ToolErrorActivity)
    assert (error.name, error.denied) == ("run_command", True)
    assert error.message == "User denied permission for command(ls -la)."
    done = of_type(acts, ToolDoneActivity)
    assert [d.name for d in done] == ["list_permissions", "list_dir", "list_dir", "list_dir"]
    assert done[2].output == ".system_generated/\n.user_uploaded/"
    assert text_of(acts) == result["response"]
    assert usages(acts)[0].turn.total_tokens == result["usage"]["total_tokens"] == step_total(name)


def test_every_cli_recording_has_a_test() -> None:
    covered = {
        f"{ANY}/cli-01-handshake.jsonl",
        f"{ANY}/cli-02-pong.jsonl",
        f"{ANY}/cli-03-tool-ask.jsonl",
        f"{ANY}/cli-04-tool-skip.jsonl",
        f"{ANY}/cli-05-question.jsonl",
        f"{ANY}/cli-05-question-answer.jsonl",
        f"{ANY}/cli-06-steer.jsonl",
        f"{ANY}/cli-07-cancel.jsonl",
        f"{ANY}/cli-07-cancel-resume.jsonl",
        f"{ANY}/cli-08-resume-a.jsonl",
        f"{ANY}/cli-08-resume-b.jsonl",
        f"{ANY}/cli-08-resume-c.jsonl",
        f"{ANY}/cli-09-config.jsonl",
        f"{ANY}/cli-09-config-b.jsonl",
        f"{ANY}/cli-10-logged-out.jsonl",
        f"{ANY}/cli-10-logged-out.stderr.txt",
        f"{ANY}/cli-12-subagent.jsonl",
        f"{ANY}/cli-13-slash.jsonl",
        f"{PASEO}/error-model-rejected.stdout.jsonl",
        f"{PASEO}/help-flag-needs-argument.stderr.txt",
        f"{PASEO}/pong-mode-plan-disable-slash.stdout.jsonl",
        f"{PASEO}/pong-mode-plan-disable-slash.stderr.txt",
        f"{PASEO}/pong-model-display-name.stdout.jsonl",
        f"{PASEO}/pong-model-display-name-single-delta.stdout.jsonl",
        f"{PASEO}/quota-reached-claude.stdout.jsonl",
        f"{MPR}/agy-cli-stream-json-tools-denied.jsonl",
    }
    not_recordings = {f"{PASEO}/observation-1.receipt.txt", f"{PASEO}/quota-reached-claude.meta.txt"}
    found = {
        str(p.relative_to(RECORDED))
        for folder in (ANY, PASEO, MPR)
        for p in (RECORDED / folder).iterdir()
        if p.suffix in (".jsonl", ".txt") and not p.name.startswith("acp-") and "acp" not in p.name
    }
    assert found - not_recordings == covered, (found - not_recordings) ^ covered
