"""Transcripts: what each turn wrote, that appends from several processes
never interleave, that a torn line is skipped, and that they can be off."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agy_host import hookimpl
from agy_host.builtins import transcripts
from agy_host.builtins.transcripts import (
    SLICE_CHARS,
    TranscriptEntry,
    append_entries,
    read_transcript,
    transcript_path,
    turns_of,
)
from agy_host.contract.tools import HostTool, ToolResult

Cli = Callable[..., tuple[int, str, str]]


def test_append_and_read(agy_host_home: Any) -> None:
    entries = [
        TranscriptEntry(v=1, ts="t1", role="user", text="hi"),
        TranscriptEntry(v=1, ts="t1", role="assistant", text="hello", stop_reason="stop"),
    ]
    path = append_entries("s", entries)
    assert path == agy_host_home.state_dir / "transcripts" / "s.jsonl"
    assert path.stat().st_mode & 0o777 == 0o600
    assert read_transcript("s") == entries
    assert turns_of(entries) == 1
    assert read_transcript("nobody") == []


def test_a_torn_line_is_skipped_and_reported(agy_host_home: Any) -> None:
    path = append_entries("t", [TranscriptEntry(v=1, ts="a", role="user", text="kept")])
    with open(path, "ab") as fh:
        fh.write(b'{"v":1,"ts":"b","role":"assis')
    warnings: list[str] = []
    assert [e.text for e in read_transcript("t", warn=warnings.append)] == ["kept"]
    assert len(warnings) == 1 and "t.jsonl:2" in warnings[0]


def test_the_turn_after_a_torn_line_starts_on_a_line_of_its_own(agy_host_home: Any) -> None:
    """A crash mid-write leaves a line without its newline: the next turn's
    first line must not be glued to it (it would be unreadable too)."""
    path = append_entries("t", [TranscriptEntry(v=1, ts="a", role="user", text="kept")])
    with open(path, "ab") as fh:
        fh.write(b'{"v":1,"ts":"b","role":"assis')
    append_entries("t", [TranscriptEntry(v=1, ts="c", role="user", text="next")])
    append_entries("t", [TranscriptEntry(v=1, ts="d", role="user", text="x" * (SLICE_CHARS + 1))])
    with open(path, "ab") as fh:
        fh.write(b'{"v":1,"ts":"e","ro')
    append_entries("t", [TranscriptEntry(v=1, ts="f", role="user", text="y" * (SLICE_CHARS + 1))])
    warnings: list[str] = []
    assert [e.ts for e in read_transcript("t", warn=warnings.append)] == ["a", "c", "d", "f"]
    assert len(warnings) == 2


def test_a_long_answer_is_written_in_slices_and_reads_back_whole(
    agy_host_home: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 12 MB answer is not encoded into one 12 MB line (one more copy of it
    at the turn's end): slices of about a mebibyte, escapes intact across them."""
    piece = 'plain "quoted" \\ back\nslash \u00e9t\u00e9 \U0001f600 \x01 '
    text = piece * (3 * SLICE_CHARS // len(piece))
    entries = [
        TranscriptEntry(v=1, ts="t", role="user", text="go"),
        TranscriptEntry(v=1, ts="t", role="assistant", text=text, stop_reason="stop", duration_s=1.5),
        TranscriptEntry(v=1, ts="t", role="tool", tool="t", args={"a": 1}),
    ]
    sizes: list[int] = []
    real_write = transcripts.os.write

    def write(fd: int, data: Any) -> int:
        sizes.append(len(data))
        return real_write(fd, data)

    monkeypatch.setattr(transcripts.os, "write", write)
    append_entries("big", entries)
    assert read_transcript("big") == entries
    assert len(sizes) > 2 and max(sizes) < 3 * SLICE_CHARS, sizes


def test_session_names_cannot_escape_the_directory() -> None:
    for bad in ("../x", "a/b", "", ".."):
        with pytest.raises(ValueError):
            transcript_path(bad)


def test_concurrent_appends_never_interleave(agy_host_home: Any) -> None:
    script = textwrap.dedent(
        """
        import sys
        from agy_host.builtins.transcripts import TranscriptEntry, append_entries
        n = int(sys.argv[1])
        for i in range(200):
            text = f"writer {n} turn {i} " + "x" * 3000
            entries = [TranscriptEntry(v=1, ts="t", role="user", text=text),
                       TranscriptEntry(v=1, ts="t", role="assistant", text=text)]
            append_entries("busy", entries)
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(n)]) for n in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    warnings: list[str] = []
    entries = read_transcript("busy", warn=warnings.append)
    assert warnings == []
    assert len(entries) == 4 * 200 * 2
    for user, answer in zip(entries[::2], entries[1::2], strict=True):
        assert (user.role, answer.role) == ("user", "assistant")
        assert user.text == answer.text, "a turn's lines stay together"


class EchoTool:
    name = "echo-tool"

    @hookimpl
    def agy_host_register_tools(self, register: Callable[[HostTool], None]) -> None:
        async def call(args: dict[str, Any]) -> ToolResult:
            return ToolResult(text="pong")

        register(HostTool(name="host_echo", description="echo", input_schema={}, call=call))


def test_a_turn_is_written_when_it_ends(cli: Cli, echo_plugin: Any, agy_host_home: Any) -> None:
    code, _, err = cli("run", "--session", "tr", "!bridge", "please", plugins=[echo_plugin, EchoTool()])
    assert code == 0, err
    user, tool, answer = read_transcript("tr")
    assert (user.role, user.text, user.engine, user.cwd) == ("user", "!bridge please", "echo", str(Path.cwd()))
    assert (tool.role, tool.tool, tool.args) == ("tool", "host_echo", {"x": 1})
    assert answer.role == "assistant" and "tool said: pong" in answer.text
    assert answer.stop_reason == "stop"
    assert user.conversation_id == answer.conversation_id and answer.conversation_id
    cli("run", "--session", "tr", "!fail")
    last = read_transcript("tr")[-1]
    assert (last.stop_reason, last.error) == ("error", "echo: asked to fail")


def test_transcripts_can_be_turned_off(cli: Cli, agy_host_home: Any) -> None:
    agy_host_home.write_config({"transcripts": {"enabled": False}})
    assert cli("run", "--session", "off", "hi")[0] == 0
    assert not transcript_path("off").exists()


def test_the_user_line_has_the_time_the_prompt_went_and_the_answer_when_it_ended(
    agy_host_home: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New-user trial: both lines carried the turn's end time."""
    from agy_host.contract.events import TurnEnded, TurnStarted
    from agy_host.contract.run_context import TurnContext
    from agy_host.runtime import store

    times = iter(["2026-12-05T10:00:00Z", "2026-12-05T10:00:42Z"])
    monkeypatch.setattr(store, "utc_now", lambda: next(times))
    observer = transcripts.TranscriptObserver()
    ctx = TurnContext(
        session="when", engine="echo", cwd="/p", user_text="hi", new_conversation=True, config=None, env={}
    )
    observer.started(ctx)
    observer.event(TurnStarted(session="when", engine="echo", agent="a"))
    observer.event(TurnEnded(stop_reason="stop", duration_s=42.0, response="hello", conversation_id="c"))
    user, answer = read_transcript("when")
    assert (user.role, user.ts, answer.role, answer.ts) == (
        "user",
        "2026-12-05T10:00:00Z",
        "assistant",
        "2026-12-05T10:00:42Z",
    )
