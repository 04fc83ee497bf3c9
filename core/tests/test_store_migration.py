"""The store's first format (one ``sessions.json`` for every session) moves
into one file per session without losing a binding (issue 29).

``data/sessions-v1.json`` is a copy of a store the previous build wrote
(runs on the fake ACP agent, named, unnamed, upper-case and non-ASCII
names, a stream-json binding with its digest watermark, an owed system
block), with only its paths made generic."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from agy_host.runtime.store import SessionBinding, SessionStore

TODAY = Path(__file__).parent / "data" / "sessions-v1.json"

Cli = Callable[..., tuple[int, str, str]]


def _store(state: Path, warnings: list[str] | None = None) -> SessionStore:
    return SessionStore(state, warn=(warnings if warnings is not None else []).append)


def _raw(store: SessionStore) -> dict[str, Any]:
    return {key: msgspec.to_builtins(binding) for key, binding in store.all().items()}


def test_todays_store_moves_into_a_file_per_session_without_loss(tmp_path: Path) -> None:
    shutil.copy(TODAY, tmp_path / "sessions.json")
    expected = json.loads(TODAY.read_text("utf-8"))["bindings"]
    warnings: list[str] = []
    store = _store(tmp_path, warnings)
    assert _raw(store) == expected, "every binding, every field, as it was"
    for key, raw in expected.items():
        assert store.get(key) == msgspec.convert(raw, SessionBinding)
    assert not (tmp_path / "sessions.json").exists()
    [kept] = tmp_path.glob("sessions.json.v1-*")
    assert kept.read_bytes() == TODAY.read_bytes(), "the old file is kept byte for byte"
    [said] = warnings
    assert f"moved {len(expected)} binding(s) of 5 session(s)" in said and str(kept) in said
    assert sorted(p.name for p in (tmp_path / "sessions").iterdir()) == [
        "%57ork.json",
        "caf%C3%A9.v2:x.json",
        "run-20261204-235755-ba27.json",
        "slash.json",
        "work.json",
    ]
    again: list[str] = []
    assert _raw(_store(tmp_path, again)) == expected and again == [], "moved once"


def test_a_move_cut_short_is_done_again_and_keeps_newer_bindings(tmp_path: Path) -> None:
    """A crash after some sessions' files were written leaves sessions.json
    in place: the next store moves it again. A binding a turn wrote since
    (newer) is kept; nothing is doubled."""
    shutil.copy(TODAY, tmp_path / "sessions.json")
    expected = json.loads(TODAY.read_text("utf-8"))["bindings"]
    newer = SessionBinding(conversation_id="after-the-crash", engine="acp", updated_at="2027-01-01T00:00:00Z")
    older = SessionBinding(conversation_id="before", engine="acp", updated_at="2000-01-01T00:00:00Z")
    folder = tmp_path / "sessions"
    folder.mkdir()
    doc = {"version": 2, "session": "work", "bindings": {"work@acp:1675ffa8e2": msgspec.to_builtins(newer)}}
    (folder / "work.json").write_text(json.dumps(doc))
    doc = {"version": 2, "session": "slash", "bindings": {"slash@acp": msgspec.to_builtins(older)}}
    (folder / "slash.json").write_text(json.dumps(doc))
    store = _store(tmp_path)
    assert store.get("work@acp:1675ffa8e2") == newer
    assert store.get("slash@acp") == msgspec.convert(expected["slash@acp"], SessionBinding)
    assert set(store.all()) == set(expected)


def test_an_older_build_writing_the_old_file_again_is_merged(tmp_path: Path) -> None:
    """An older agy-host still running (a keeper of the previous build)
    writes sessions.json again: its newer bindings join the per-session
    files at the next look, its stale ones do not win."""
    store = _store(tmp_path)
    store.set("s@acp", SessionBinding(conversation_id="mine", updated_at="2026-12-05T10:00:00Z"))
    old = {
        "version": 1,
        "bindings": {
            "s@acp": {"conversation_id": "stale", "updated_at": "2026-12-01T00:00:00Z"},
            "t@acp": {"conversation_id": "theirs", "updated_at": "2026-12-05T11:00:00Z"},
        },
    }
    (tmp_path / "sessions.json").write_text(json.dumps(old))
    store.reload()
    assert store.get("s@acp").conversation_id == "mine"  # type: ignore[union-attr]
    assert store.get("t@acp").conversation_id == "theirs"  # type: ignore[union-attr]
    assert not (tmp_path / "sessions.json").exists()


def test_an_old_store_with_bad_entries_is_reported_entry_by_entry_and_kept_whole(tmp_path: Path) -> None:
    original = json.dumps(
        {
            "version": 1,
            "bindings": {
                "good": {"conversation_id": "g", "last_message_count": 2},
                "no-id": {"engine": "acp"},
                "bad-count": {"conversation_id": "b", "last_message_count": "lots"},
            },
        }
    )
    (tmp_path / "sessions.json").write_text(original)
    warnings: list[str] = []
    store = _store(tmp_path, warnings)
    assert set(store.all()) == {"good", "bad-count"}
    assert any("'no-id'" in w for w in warnings) and any("'bad-count'" in w for w in warnings), warnings
    [kept] = tmp_path.glob("sessions.json.v1-*")
    assert kept.read_text() == original


def test_a_session_of_todays_store_continues_its_conversation(cli: Cli, agy_host_home: Any) -> None:
    """End to end: a binding in today's sessions.json is continued by
    ``run --session NAME --resume`` after the move, and listed."""
    state = agy_host_home.state_dir
    state.mkdir(parents=True, exist_ok=True)
    old = {"version": 1, "bindings": {"old@echo": {"conversation_id": "echo-legacy-7", "engine": "echo"}}}
    (state / "sessions.json").write_text(json.dumps(old, indent=2) + "\n")
    code, out, err = cli("run", "--session", "old", "--resume", "--format", "json", "again")
    assert code == 0, err
    [end] = [e for e in map(json.loads, out.splitlines()) if e["type"] == "turn_end"]
    assert end["conversation_id"] == "echo-legacy-7"
    assert (state / "sessions" / "old.json").exists() and "a file per session" in err
    code, out, _ = cli("sessions", "list")
    assert code == 0 and "echo-legacy-7" in out
