"""Two commands at once on one session, on the real ``localharness``.

Each command has its own harness process, and the harness keeps a
conversation in its own storage, written when a turn ends: two turns on one
conversation at once would each start from the same history, and the last
to end would overwrite the other's exchange (both exiting 0). With the
session's turn lock the second command waits, then continues the
conversation the first one left.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from .conftest import HarnessHome


def test_two_commands_at_once_on_one_session_both_keep_their_exchange(hhome: HarnessHome) -> None:
    model = hhome.serve({"turns": [[[{"sleep": 4}, {"text": "first answer"}]], [[{"echo": True}]]]})
    argv = [sys.executable, "-m", "agy_host.cli.main", "run", "--engine", "harness", "--format", "json"]
    argv += ["--session", "both", "one"]
    pipe = subprocess.PIPE
    first = subprocess.Popen(
        argv, env=hhome.env, cwd=hhome.cwd, stdin=subprocess.DEVNULL, stdout=pipe, stderr=pipe, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while not model.requests():  # the first turn is with the model: it holds the session
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first turn never reached the model"
            time.sleep(0.05)
        second = hhome.turn("both", "two")
        out, err = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0, (out, err)
    assert second.returncode == 0, second
    assert f"session 'both' is busy: pid {first.pid} (agy-host run" in second.stderr, second
    [first_end] = [json.loads(line) for line in out.splitlines() if '"turn_end"' in line]
    assert first_end["response"] == "first answer", out
    assert second.end["conversation_id"] == first_end["conversation_id"], second
    asked = model.requests()[-1]
    assert (asked["turn"], asked["user_text"]) == (2, "two"), "the second turn did not see the first exchange"
    assert "first answer" in json.dumps(asked["body"]["contents"])
    third = hhome.turn("both", "three")
    assert third.returncode == 0 and third.end["conversation_id"] == first_end["conversation_id"], third
    assert model.requests()[-1]["turn"] == 3, "an exchange was lost from the harness's storage"
