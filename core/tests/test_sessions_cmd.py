"""``agy-host sessions list|show|rm|clear|forget`` over real bindings and transcripts."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agy_host.builtins.transcripts import transcript_path
from agy_host.cli.exit_codes import ExitCode

Cli = Callable[..., tuple[int, str, str]]


def test_list_groups_bindings_and_transcripts(cli: Cli) -> None:
    assert cli("run", "--session", "alpha", "one")[0] == 0
    assert cli("run", "--session", "alpha", "two")[0] == 0
    assert cli("run", "--session", "beta", "three")[0] == 0
    code, out, _ = cli("sessions", "list")
    assert code == 0
    header, *rows = out.strip().splitlines()
    assert header.split()[:5] == ["SESSION", "KEY", "CONVERSATION", "LAST", "USE"]
    alpha = next(r for r in rows if r.startswith("alpha "))
    assert "alpha@echo" in alpha and "echo-" in alpha and alpha.split()[4] == "2"
    code, out, _ = cli("sessions", "list", "--format", "json")
    doc = json.loads(out)
    assert set(doc["bindings"]) == {"alpha@echo", "beta@echo"}
    sessions = {s["name"]: s for s in doc["sessions"]}
    assert sessions["alpha"]["turns"] == 2
    assert sessions["alpha"]["bindings"]["alpha@echo"]["engine"] == "echo"
    assert sessions["alpha"]["cwd"]


def test_show_prints_bindings_and_turns(cli: Cli) -> None:
    cli("run", "--session", "s1", "first question")
    cli("run", "--session", "s1", "second question")
    code, out, _ = cli("sessions", "show", "s1")
    assert code == 0
    assert "session s1: 2 turn(s)" in out
    assert "s1@echo: echo conversation echo-" in out
    assert "first question" in out and "echo: second question" in out
    _, out, _ = cli("sessions", "show", "s1", "--last", "1")
    assert "first question" not in out and "second question" in out
    _, out, _ = cli("sessions", "show", "s1", "--format", "json")
    doc = json.loads(out)
    assert [e["role"] for e in doc["transcript"]] == ["user", "assistant", "user", "assistant"]
    assert cli("sessions", "show", "nobody")[0] == ExitCode.NO_SUCH_SESSION


def test_rm_removes_bindings_and_the_transcript(cli: Cli, agy_host_home: Any) -> None:
    cli("run", "--session", "gone", "x")
    assert transcript_path("gone").exists()
    code, out, _ = cli("sessions", "rm", "gone")
    assert code == 0 and "1 binding(s) and its transcript" in out
    assert not transcript_path("gone").exists()
    assert cli("sessions", "rm", "gone")[0] == ExitCode.NO_SUCH_SESSION
    code, _, err = cli("run", "--session", "gone", "--resume", "again")
    assert code == ExitCode.NO_SUCH_SESSION and "no such session 'gone'" in err


def test_rm_of_one_engine_keeps_the_transcript(cli: Cli) -> None:
    cli("run", "--session", "keep", "x")
    assert cli("sessions", "rm", "keep", "--engine", "other")[0] == ExitCode.NO_SUCH_SESSION
    assert cli("sessions", "rm", "keep", "--engine", "echo")[0] == 0
    assert transcript_path("keep").exists()
    _, out, _ = cli("sessions", "show", "keep")
    assert "no agent conversation bound" in out


def test_clear_needs_confirmation_without_a_terminal(cli: Cli) -> None:
    cli("run", "--session", "c1", "x")
    cli("run", "--session", "c2", "y")
    code, _, err = cli("sessions", "clear")
    assert code == ExitCode.USAGE and "--yes" in err
    code, out, _ = cli("sessions", "clear", "--yes")
    assert code == 0 and "removed 2 session(s)" in out
    _, out, _ = cli("sessions", "list")
    assert out.startswith("no sessions yet")


def test_a_session_on_another_engine_is_not_silently_a_new_conversation(
    cli: Cli, agy_host_home: Any, echo_plugin: Any
) -> None:
    from agy_host.cli.sessions_cmd import resume_note
    from agy_host.cli.state import CliState

    cli("run", "--session", "moved", "x")
    state = CliState(extra_plugins=[echo_plugin])
    host = state.host(engine="echo")
    engine = host.load_engine()
    assert resume_note(host, engine, "moved") is None, "it continues its own conversation"
    host.store.delete(engine.store_key("moved"))
    note = resume_note(host, engine, "moved")
    assert note is not None and "1 earlier turn(s) but no agent conversation" in note
    assert resume_note(host, engine, "brand-new") is None
