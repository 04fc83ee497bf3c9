"""``sessions list`` a person can read, ``sessions prune``, and failed starts
that leave nothing behind (issue 26 item 11)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

import pytest

from agy_host.builtins.transcripts import TranscriptEntry, append_entries, transcript_path
from agy_host.cli.exit_codes import ExitCode
from agy_host.config import state_dir
from agy_host.runtime.store import SessionBinding, SessionStore

Cli = Callable[..., tuple[int, str, str]]

DAY = 86400.0


def _run_name(i: int) -> str:
    return f"run-20261201-1000{i:02d}-{i:04x}"


def _session(
    name: str, *, age_days: float = 0.0, cwd: str = "/p", agent: str = "echo", transcript: bool = True
) -> None:
    """A session as a run leaves it: a binding and a transcript, last used ``age_days`` ago."""
    when = time.time() - age_days * DAY
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))
    store = SessionStore.in_state_dir(state_dir())
    store.set(
        f"{name}@echo",
        SessionBinding(conversation_id=f"c-{name}", engine="echo", agent=agent, cwd=cwd, updated_at=stamp),
    )
    if transcript:
        entries = [
            TranscriptEntry(v=1, ts=stamp, role="user", text="hi", engine="echo", agent=agent, cwd=cwd),
            TranscriptEntry(v=1, ts=stamp, role="assistant", text="hello", engine="echo", agent=agent),
        ]
        path = append_entries(name, entries)
        os.utime(path, (when, when))


def _listed(out: str) -> list[str]:
    return [line.split()[0] for line in out.strip().splitlines()[1:]]


def test_list_shows_the_named_sessions_and_only_the_latest_unnamed_runs(cli: Cli, agy_host_home: Any) -> None:
    for i in range(8):
        _session(_run_name(i), age_days=10 - i)
    _session("alpha", age_days=30)
    _session("beta")
    code, out, err = cli("sessions", "list")
    assert code == 0, err
    assert set(_listed(out)) == {"alpha", "beta", *(_run_name(i) for i in range(3, 8))}
    assert "3 older unnamed run(s) not shown" in err and "--all" in err and "sessions prune" in err
    code, out, err = cli("sessions", "list", "--all")
    assert set(_listed(out)) == {"alpha", "beta", *(_run_name(i) for i in range(8))} and "not shown" not in err
    code, out, _ = cli("sessions", "list", "--format", "json")
    doc = json.loads(out)
    assert doc["hidden"] == 3 and len(doc["sessions"]) == 7
    assert {s["name"]: s["named"] for s in doc["sessions"]}["alpha"] is True
    assert set(doc["bindings"]) == {f"{s['name']}@echo" for s in doc["sessions"]}


def test_runs_started_in_one_second_are_picked_alike_with_and_without_a_filter(cli: Cli, agy_host_home: Any) -> None:
    """Seven runs in the same second, all in one folder: ``list`` and
    ``list --cwd`` show the same five (the newcomer suite saw them pick different
    ones: one by the file order, the other by the time of last use)."""
    names = [f"run-20261201-100000-{tag}" for tag in ("9f01", "0a02", "c303", "1b04", "7e05", "2d06", "a007")]
    for name in names:
        _session(name, cwd="/p")
    code, plain, err = cli("sessions", "list")
    assert code == 0, err
    code, here, err = cli("sessions", "list", "--cwd", "/p")
    assert code == 0, err
    # the same five, shown in the same order (by last use, which may straddle a second here)
    assert _listed(plain) == _listed(here) and sorted(_listed(here)) == sorted(names)[2:], (plain, here)


def test_list_filters_by_cwd_and_agent(cli: Cli, agy_host_home: Any, tmp_path: Any) -> None:
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    _session("in-repo", cwd=str(repo))
    _session("in-sub", cwd=str(repo / "sub"), agent="gemini --acp")
    _session("elsewhere", cwd="/elsewhere", agent="gemini --acp")
    for i in range(7):  # unnamed runs in the repo: the filter still shows only the latest few
        _session(_run_name(i), cwd=str(repo), age_days=7 - i)
    _, out, err = cli("sessions", "list", "--cwd", str(repo))
    assert set(_listed(out)) == {"in-repo", "in-sub", *(_run_name(i) for i in range(2, 7))}
    assert "2 older unnamed run(s) not shown" in err
    _, out, _ = cli("sessions", "list", "--cwd", str(repo / "sub"), "--all")
    assert _listed(out) == ["in-sub"]
    _, out, _ = cli("sessions", "list", "--agent", "GEMINI")
    assert set(_listed(out)) == {"in-sub", "elsewhere"}
    _, out, _ = cli("sessions", "list", "--agent", "gemini", "--cwd", str(repo))
    assert _listed(out) == ["in-sub"]
    code, out, _ = cli("sessions", "list", "--agent", "nobody")
    assert code == 0 and out.strip() == "no sessions match"


def test_prune_removes_old_unnamed_runs_after_a_dry_run_or_a_yes(cli: Cli, agy_host_home: Any) -> None:
    for i in range(3):
        _session(_run_name(i), age_days=20)  # old
    _session(_run_name(3), age_days=20, transcript=False)  # a binding only
    _session(_run_name(4), age_days=1)  # recent
    _session("named-old", age_days=100)  # named: never pruned
    old = {_run_name(i) for i in range(4)}
    code, out, _ = cli("sessions", "prune", "--dry-run")
    assert code == 0 and "4 unnamed run(s) last used more than 7d ago would be removed" in out
    assert {line.split()[2] for line in out.splitlines() if line.startswith("would remove")} == old
    assert transcript_path(_run_name(0)).exists(), "a dry run removes nothing"
    code, _, err = cli("sessions", "prune")
    assert code == ExitCode.USAGE and "--yes" in err and "--dry-run" in err
    assert transcript_path(_run_name(0)).exists()
    code, out, _ = cli("sessions", "prune", "--yes")
    assert code == 0 and "removed 4 unnamed run(s) last used more than 7d ago: 4 binding(s), 3 transcript(s)" in out
    _, out, _ = cli("sessions", "list", "--all")
    assert set(_listed(out)) == {_run_name(4), "named-old"}
    assert not any(transcript_path(n).exists() for n in old)
    code, out, _ = cli("sessions", "prune", "--older-than", "1d12h", "--yes")
    assert code == 0 and "nothing to remove" in out
    code, out, _ = cli("sessions", "prune", "--older-than", "0", "--yes", "--format", "json")
    doc = json.loads(out)
    assert [s["name"] for s in doc["removed"]] == [_run_name(4)] and doc["bindings"] == 1


@pytest.mark.parametrize("bad", ["7", "seven days", "1x", "-1d", "d"])
def test_prune_refuses_a_duration_it_cannot_read(cli: Cli, bad: str) -> None:
    code, _, err = cli("sessions", "prune", "--older-than", bad, "--dry-run")
    assert code == ExitCode.USAGE and "7d, 12h" in err


def test_prune_durations() -> None:
    from agy_host.cli.sessions_prune import parse_duration

    assert parse_duration("7d") == 7 * DAY
    assert parse_duration("1d12h") == 1.5 * DAY
    assert parse_duration("90m") == 5400 and parse_duration("30s") == 30 and parse_duration("2w") == 14 * DAY
    assert parse_duration("0") == 0 and parse_duration("1.5h") == 5400


@pytest.mark.parametrize("session", [[], ["--session", "named-failure"]])
def test_a_run_that_failed_before_its_turn_leaves_no_session(cli: Cli, agy_host_home: Any, session: list[str]) -> None:
    """An agent command that cannot start: no binding, no transcript."""
    code, _, err = cli("run", "--agent", "/nonexistent/agent", *session, "hi")
    assert code == ExitCode.ERROR and "could not start" in err, err
    transcripts = state_dir() / "transcripts"
    assert not transcripts.exists() or not list(transcripts.iterdir()), "a failed start wrote a transcript"
    code, out, _ = cli("sessions", "list", "--all")
    assert code == 0 and out.startswith("no sessions yet"), out
    if session:
        assert cli("sessions", "show", "named-failure")[0] == ExitCode.NO_SUCH_SESSION
