"""The real harness when something around it fails: a model API that answers
429 or 503 for ever, an endpoint that is not there or drops every call, a
harness that freezes mid-turn. Real processes throughout: ``agy-host run``
as a subprocess, the pinned ``localharness``, the kit's scripted model API
over HTTP."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import HarnessHome
from .test_interrupted_binding import harness_pids

#: A turn budget the retry budgets must end well before.
DEADLINE_MINUTES = 1.0


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize("status", [429, 503])
def test_a_model_api_failing_for_ever_ends_the_turn_at_its_retry_budget_with_the_status(
    hhome: HarnessHome, status: int
) -> None:
    """issue 28 item 7: every call answered 429 or 503 (a retry sends the same
    call, so the scripted API fails it again): the turn ends once the retry
    budget is spent, far before its deadline, with an error carrying the
    status; one notice said which budget applies while it retried."""
    hhome.configure(turn={"timeout_minutes": DEADLINE_MINUTES}, harness={"retry_seconds": 3})
    model = hhome.serve({"turns": [[[{"error": {"status": status, "message": "try later"}}]]]})
    run = hhome.turn("busy", "hi", timeout=120)
    assert run.returncode == 1, run
    end = run.end
    assert (end["error_kind"], end["agent_stop_reason"]) == ("agent", f"HTTP_{status}"), run
    assert f"answered {status} " in end["error"] and model.url in end["error"], run
    assert "retry_seconds" in end["error"], run
    assert 3 <= end["duration_s"] < 20, run
    retried = [n for n in run.of("notice") if n.get("code") == "model-retry"]
    assert len(retried) == 1 and "up to 3s" in retried[0]["message"], run.of("notice")
    assert len(model.requests()) >= 3, "the harness retried meanwhile"


def test_a_closed_port_fails_at_once_naming_the_endpoint(hhome: HarnessHome) -> None:
    """issue 26 item 8: a wrong base_url (nobody listens there) is found by the
    reachability check while the harness starts: the turn fails in seconds
    (it hung for minutes) with an error naming the URL and its setting."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    hhome.configure(harness={"base_url": url})
    run = hhome.turn("nowhere", "hi", timeout=120)
    assert run.returncode == 1, run
    end = run.end
    assert end["agent_stop_reason"] == "UNREACHABLE" and end["error_kind"] == "agent", run
    assert url in end["error"] and "[harness] base_url" in end["error"] and "connection refused" in end["error"], run
    assert run.seconds < 15, run


def test_an_endpoint_that_drops_every_call_ends_at_the_connection_budget(hhome: HarnessHome) -> None:
    """issue 26 item 8: the endpoint accepts connections (the check passes) but
    drops every call: the short connection budget ends the turn, naming it."""
    hhome.configure(turn={"timeout_minutes": DEADLINE_MINUTES}, harness={"connect_retry_seconds": 2})
    model = hhome.serve({"turns": [[[{"drop": True}]]]})
    run = hhome.turn("dropped", "hi", timeout=120)
    assert run.returncode == 1, run
    end = run.end
    assert end["agent_stop_reason"] == "UNREACHABLE", run
    assert model.url in end["error"] and "connect_retry_seconds" in end["error"], run
    assert 2 <= end["duration_s"] < 15, run


def test_api_retries_hands_the_count_back_to_the_harness_and_the_error_keeps_the_status(hhome: HarnessHome) -> None:
    """``api_retries`` still raises (or lowers) the bound: the harness's own
    count on its own backoff, and the turn's error is typed the same way."""
    hhome.configure(turn={"timeout_minutes": DEADLINE_MINUTES}, harness={"api_retries": 1})
    model = hhome.serve({"turns": [[[{"error": {"status": 503, "message": "overloaded"}}]]]})
    run = hhome.turn("counted", "hi", timeout=120)
    assert run.returncode == 1, run
    assert run.end["agent_stop_reason"] == "HTTP_503", run
    assert "the harness gave up" in run.end["error"] and "api_retries" in run.end["error"], run
    assert len(model.requests()) == 2, "one call and its one retry"


def test_ctrl_c_on_a_frozen_harness_exits_within_seconds_and_leaves_nothing(hhome: HarnessHome) -> None:
    """issue 28 item 8: the harness is SIGSTOPped while the model streams, then
    Ctrl-C. It would never go idle, and used to cost the cancel grace plus the
    exit graces (7.7 s); it does not answer a ping, so it is killed at once."""
    hhome.serve({"turns": [[[{"text": "A1 "}, {"sleep": 30}, {"text": "never"}]]]})
    argv = [sys.executable, "-m", "agy_host.cli.main", "run", "--engine", "harness", "--format", "json"]
    proc = subprocess.Popen(
        [*argv, "--session", "frozen", "go"],
        env=hhome.env,
        cwd=hhome.cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    harness: list[int] = []
    try:
        assert proc.stdout is not None
        seen = ""
        while "A1" not in seen:
            line = proc.stdout.readline()
            assert line, (seen, proc.communicate(timeout=30))
            seen += line
        harness = harness_pids(proc.pid)
        assert len(harness) == 1, harness
        os.kill(harness[0], signal.SIGSTOP)
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        waited = time.monotonic() - started
        assert proc.returncode == 130, (out, err)
        assert waited < 5, f"Ctrl-C on a frozen harness took {waited:.1f}s"
        assert not _running(harness[0]), "the frozen harness outlived agy-host"
        events = [json.loads(line) for line in (seen + out).splitlines() if line.startswith("{")]
        assert [e for e in events if e.get("code") == "harness-frozen"], events
        end = next(e for e in events if e.get("type") == "turn_end")
        assert end["stop_reason"] == "aborted" and end["response"] == "A1 ", end
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in harness:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
