"""``--trace`` on the harness engine, against the real ``localharness``: the
two protobuf bootstrap messages (as their decoded fields), the WebSocket
text frames both ways, the harness's stderr, and no API key in the file: not
the Gemini key agy-host hands the harness in the conversation's config, not
the key the harness hands back for its socket. ``AGY_HOST_HARNESS_RECORD``
is the same trace under its older name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agy_host.testing.trace import Trace, read_trace

from .conftest import HarnessHome

KEY = "AIzaSyHarnessTraceKey0123456789abcdefg"  # the shape of a Google key, not a real one


def one_turn(*replies: list[dict[str, Any]]) -> dict[str, Any]:
    return {"turns": [list(replies)]}


def check(trace: Trace) -> None:
    assert {e.engine for e in trace} == {"harness"}
    sent, got = trace.objects("out"), trace.objects("in")
    [boot_in] = [f["bootstrap"]["InputConfig"] for f in sent if "bootstrap" in f]
    assert boot_in["storage_directory"] and boot_in["client_info"]["language"] == "python"
    [boot_out] = [f["bootstrap"]["OutputConfig"] for f in got if "bootstrap" in f]
    assert boot_out["port"] > 0 and boot_out["api_key"] == "[redacted]"
    [config] = [f["config"] for f in sent if "config" in f]
    assert config["models"][0]["geminiApiEndpoint"]["apiKey"] == "[redacted]"
    [user] = [f["userInput"] for f in sent if "userInput" in f]
    assert user["parts"][0]["text"] == "say hello"
    assert any("initializeConversationResponse" in f for f in got)
    assert any("stepUpdate" in f for f in got)
    assert sent[0] == {"bootstrap": {"InputConfig": boot_in}}, "the bootstrap comes first"


def test_run_with_trace_writes_bootstrap_frames_and_stderr_redacted(hhome: HarnessHome, tmp_path: Path) -> None:
    hhome.serve(one_turn([{"text": ["Hel", "lo"]}]), api_key=KEY)
    target = tmp_path / "trace.jsonl"
    run = hhome.turn("t1", "say hello", "--trace", str(target), env={"GEMINI_API_KEY": KEY})
    assert run.returncode == 0 and run.text == "Hello", run
    trace = read_trace(target, secrets=[KEY])
    check(trace)
    assert trace.frames("stderr"), "the harness logs on stderr as it starts"


@pytest.mark.parametrize("alias", [True, False])
def test_the_harness_record_variable_is_the_same_trace(hhome: HarnessHome, tmp_path: Path, alias: bool) -> None:
    """``AGY_HOST_HARNESS_RECORD`` alone writes the trace; with
    ``AGY_HOST_TRACE`` too, the host's trace wins and nothing is written twice."""
    hhome.serve(one_turn([{"text": "Hello"}]), api_key=KEY)
    record, traced = tmp_path / "record.jsonl", tmp_path / "trace.jsonl"
    env = {"GEMINI_API_KEY": KEY, "AGY_HOST_HARNESS_RECORD": str(record)}
    if not alias:
        env["AGY_HOST_TRACE"] = str(traced)
    run = hhome.turn("t2", "say hello", env=env)
    assert run.returncode == 0, run
    check(read_trace(record if alias else traced, secrets=[KEY]))
    assert record.exists() is alias
