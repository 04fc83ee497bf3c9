"""The session store and StateFile: one file per session, engine-scoped keys,
atomic writes, corrupt files moved aside (never dropped), and no lost binding
between processes. The first format (one ``sessions.json``) moving into the
per-session files: ``test_store_migration.py``."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agy_host.engine.state_file import StateFile
from agy_host.runtime.store import STORE_VERSION, SessionBinding, SessionStore


def _store(tmp_path: Path, warnings: list[str] | None = None) -> SessionStore:
    return SessionStore(tmp_path, warn=(warnings if warnings is not None else []).append)


def _file(tmp_path: Path, name: str) -> Path:
    return tmp_path / "sessions" / f"{name}.json"


def _corrupt_copies(folder: Path, name: str = "sessions.json") -> list[Path]:
    return sorted(folder.glob(f"{name}.corrupt-*"))


def test_missing_file_is_an_empty_store(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert store.all() == {}
    assert store.get("x") is None
    assert not (tmp_path / "sessions").exists()


def test_set_get_roundtrip_and_file_format(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.set("work@acp", SessionBinding(conversation_id="c1", engine="acp", agent="agy", cwd="/p", updated_at="t"))
    store.set("work", SessionBinding(conversation_id="s1", engine="stream-json", last_message_count=4))
    path = _file(tmp_path, "work")
    doc = json.loads(path.read_text())
    assert doc["version"] == STORE_VERSION and doc["session"] == "work"
    assert doc["bindings"]["work@acp"]["conversation_id"] == "c1"
    assert doc["bindings"]["work"]["last_message_count"] == 4
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["work.json"], "no temp file left"
    again = _store(tmp_path)
    assert again.get("work@acp") == SessionBinding(
        conversation_id="c1", engine="acp", agent="agy", cwd="/p", updated_at="t"
    )
    # Engine-scoped keys: both engines keep their own conversation.
    assert again.get("work") is not None
    assert again.get("work").conversation_id == "s1"  # type: ignore[union-attr]
    assert set(again.bindings_of("work")) == {"work", "work@acp"}


def test_an_owed_system_block_is_kept_and_a_bad_flag_reported(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.set("cmd@acp", SessionBinding(conversation_id="c", system_pending=True))
    store.set("plain@acp", SessionBinding(conversation_id="p"))
    doc = json.loads(_file(tmp_path, "cmd").read_text())
    assert doc["bindings"]["cmd@acp"]["system_pending"] is True
    plain = json.loads(_file(tmp_path, "plain").read_text())
    assert "system_pending" not in plain["bindings"]["plain@acp"], "the usual case writes nothing new"
    assert _store(tmp_path).get("cmd@acp") == SessionBinding(conversation_id="c", system_pending=True)
    doc["bindings"]["cmd@acp"]["system_pending"] = "yes"
    _file(tmp_path, "cmd").write_text(json.dumps(doc))
    warnings: list[str] = []
    assert _store(tmp_path, warnings).get("cmd@acp") == SessionBinding(conversation_id="c")
    assert any("system_pending" in w for w in warnings), warnings


def test_delete(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.set("a", SessionBinding(conversation_id="1"))
    store.set("a@acp", SessionBinding(conversation_id="2"))
    assert store.delete("a") is True
    assert store.delete("a") is False
    assert set(_store(tmp_path).all()) == {"a@acp"}
    assert store.remove_session("a") == 1
    assert _store(tmp_path).all() == {} and not _file(tmp_path, "a").exists()


def test_a_legacy_store_that_is_not_json_is_moved_aside_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "sessions.json"
    path.write_bytes(b"{not json at all")
    warnings: list[str] = []
    store = _store(tmp_path, warnings)
    assert store.all() == {}
    [moved] = _corrupt_copies(tmp_path)
    assert moved.read_bytes() == b"{not json at all"
    assert any("not valid JSON" in w and str(moved) in w for w in warnings)


def test_a_session_file_that_is_not_json_is_moved_aside_and_reported(tmp_path: Path) -> None:
    _store(tmp_path).set("ok", SessionBinding(conversation_id="1"))
    _file(tmp_path, "torn").write_bytes(b'{"version": 2, "session": "torn", "bindings": {"torn": {"conv')
    warnings: list[str] = []
    store = _store(tmp_path, warnings)
    assert store.get("torn") is None
    [moved] = _corrupt_copies(tmp_path / "sessions", "torn.json")
    assert moved.read_bytes().startswith(b'{"version": 2, "session": "torn"')
    assert any("not valid JSON" in w and str(moved) in w for w in warnings), warnings
    assert store.get("ok") is not None, "another session's file is not touched"


def test_json_nested_too_deep_is_moved_aside_not_fatal(tmp_path: Path) -> None:
    """A few KB of brackets make the decoder recurse past the limit: the file
    is garbage like any other, moved aside, and every command goes on."""
    path = tmp_path / "sessions.json"
    deep = ('{"version": 1, "sessions": ' + "[" * 3000 + "]" * 3000 + "}").encode()
    path.write_bytes(deep)
    warnings: list[str] = []
    assert _store(tmp_path, warnings).all() == {}
    [moved] = _corrupt_copies(tmp_path)
    assert moved.read_bytes() == deep and any(str(moved) in w for w in warnings)
    _file(tmp_path, "deep").parent.mkdir()
    _file(tmp_path, "deep").write_bytes(deep)
    assert _store(tmp_path, warnings).get("deep") is None
    assert _corrupt_copies(tmp_path / "sessions", "deep.json")
    state = tmp_path / "agents.json"
    state.write_bytes(deep)
    assert StateFile(state, warn=warnings.append).read() == {}
    assert not state.exists()


def test_wrong_root_is_moved_aside(tmp_path: Path) -> None:
    (tmp_path / "sessions.json").write_text("[1, 2]")
    warnings: list[str] = []
    _store(tmp_path, warnings)
    assert len(_corrupt_copies(tmp_path)) == 1
    assert any("not a session store" in w for w in warnings)
    _file(tmp_path, "other").parent.mkdir()
    _file(tmp_path, "other").write_text(json.dumps({"version": 2, "session": "not-other", "bindings": {}}))
    assert _store(tmp_path, warnings).get("other") is None
    assert _corrupt_copies(tmp_path / "sessions", "other.json")
    assert any("'not-other', which belongs in another file" in w for w in warnings), warnings


def test_bad_entries_are_reported_and_original_kept_before_rewrite(tmp_path: Path) -> None:
    path = _file(tmp_path, "s")
    path.parent.mkdir()
    original = json.dumps(
        {
            "version": 2,
            "session": "s",
            "bindings": {
                "s": {"conversation_id": "g", "last_message_count": 2},
                "s@no-id": {"engine": "acp"},
                "s@not-object": 7,
                "s@bad-count": {"conversation_id": "b", "last_message_count": "lots"},
                "elsewhere@acp": {"conversation_id": "x"},
            },
        }
    )
    path.write_text(original)
    warnings: list[str] = []
    store = _store(tmp_path, warnings)
    assert set(store.bindings_of("s")) == {"s", "s@bad-count"}
    assert store.get("s@bad-count").last_message_count == 0  # type: ignore[union-attr]
    for key in ("'s@no-id'", "'s@not-object'", "'s@bad-count'", "'elsewhere@acp' is not a key of session 's'"):
        assert any(key in w for w in warnings), (key, warnings)
    reported = len(warnings)
    store.get("s")
    assert len(warnings) == reported, "each problem is reported once per process"
    # Loading alone never rewrites: the file is untouched.
    assert path.read_text() == original
    store.set("s@new", SessionBinding(conversation_id="n"))
    [kept] = _corrupt_copies(path.parent, "s.json")
    assert kept.read_text() == original
    assert set(json.loads(path.read_text())["bindings"]) == {"s", "s@bad-count", "s@new"}
    assert any("kept the original" in w for w in warnings)


def test_other_version_is_kept_aside_before_rewrite(tmp_path: Path) -> None:
    path = _file(tmp_path, "a")
    path.parent.mkdir()
    path.write_text(json.dumps({"version": 99, "session": "a", "bindings": {"a": {"conversation_id": "x"}}}))
    warnings: list[str] = []
    store = _store(tmp_path, warnings)
    assert store.get("a") is not None
    store.set("a@acp", SessionBinding(conversation_id="y"))
    assert len(_corrupt_copies(path.parent, "a.json")) == 1
    assert any("version 99" in w for w in warnings)


def test_write_merges_keys_written_by_another_process(tmp_path: Path) -> None:
    ours = _store(tmp_path)
    theirs = _store(tmp_path)
    ours.set("s@one", SessionBinding(conversation_id="1"))
    theirs.set("s@two", SessionBinding(conversation_id="2"))
    ours.set("s@three", SessionBinding(conversation_id="3"))
    assert set(_store(tmp_path).all()) == {"s@one", "s@two", "s@three"}
    # A delete by one process does not resurrect or drop the other's keys.
    theirs.delete("s@one")
    ours.set("s@four", SessionBinding(conversation_id="4"))
    assert set(_store(tmp_path).all()) == {"s@two", "s@three", "s@four"}


def test_a_turn_reads_and_writes_its_own_sessions_file_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a command costs does not grow with the history on disk: looking
    a name up opens one file, binding it writes one (issue 29)."""
    import agy_host.runtime.store as store_mod

    store = _store(tmp_path)
    for i in range(200):
        store.set(f"run-{i}", SessionBinding(conversation_id=str(i), agent="x" * 1000))
    opened: list[str] = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: opened.append(self.name) or real(self))
    written: list[str] = []
    real_replace = store_mod.replace_file
    monkeypatch.setattr(
        store_mod, "replace_file", lambda path, data, **kw: written.append(path.name) or real_replace(path, data, **kw)
    )
    fresh = _store(tmp_path)
    assert fresh.get("new@acp") is None and fresh.bindings_of("new") == {}
    assert set(opened) == {"new.json"} and written == []  # a new name: one open that finds nothing
    fresh.set("new@acp", SessionBinding(conversation_id="n"))
    fresh.set("new@acp", SessionBinding(conversation_id="n2"))
    assert fresh.get("new@acp") == SessionBinding(conversation_id="n2")
    assert set(opened) == {"new.json"} and written == ["new.json", "new.json"]


def test_a_hand_edit_in_place_is_seen_by_the_next_write(tmp_path: Path) -> None:
    ours = _store(tmp_path)
    ours.set("a", SessionBinding(conversation_id="1"))
    path = _file(tmp_path, "a")
    doc = json.loads(path.read_text())
    doc["bindings"]["a@edited"] = {"conversation_id": "by-hand"}
    with open(path, "r+", encoding="utf-8") as fh:  # same inode: only size and times change
        fh.write(json.dumps(doc))
        fh.truncate()
    ours.set("a@b", SessionBinding(conversation_id="2"))
    assert set(_store(tmp_path).all()) == {"a", "a@b", "a@edited"}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("run-20261204-235047-bbe5", "run-20261204-235047-bbe5.json"),
        ("v1.2:x", "v1.2:x.json"),
        ("Work", "%57ork.json"),
        ("café", "caf%C3%A9.json"),
        (".hidden", "%2Ehidden.json"),
        ("a_b", "a%5Fb.json"),
        ("a/b", "a%2Fb.json"),
    ],
)
def test_file_names_keep_every_session_apart(name: str, expected: str) -> None:
    from agy_host.runtime.store_files import file_name

    assert file_name(name) == expected


def test_odd_names_round_trip_and_never_share_a_file(tmp_path: Path) -> None:
    """Names that differ only in case stay apart on a case-insensitive file
    system; empty, long and odd ones (the first format allowed any key) get
    their own file and are listed by their own name."""
    from agy_host.runtime.store_files import file_name

    names = ["work", "Work", "WORK", "", "x" * 300, "x" * 301, "a b/c", "été", "%57ork", "a_b"]
    files = {file_name(n).lower() for n in names}
    assert len(files) == len(names) and all(len(f) < 255 for f in files)
    store = _store(tmp_path)
    for i, name in enumerate(names):
        store.set(f"{name}@acp", SessionBinding(conversation_id=str(i)))
    again = _store(tmp_path)
    assert sorted(again.names()) == sorted(names)
    assert {k: b.conversation_id for k, b in again.all().items()} == {f"{n}@acp": str(i) for i, n in enumerate(names)}


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from agy_host.runtime.store import SessionBinding, SessionStore
    store = SessionStore(Path(sys.argv[1]))
    prefix = sys.argv[2]
    for i in range(40):
        store.set(f"{prefix}-{i % 8}@{i}", SessionBinding(conversation_id=f"{prefix}{i}"))
    """
)


def test_two_processes_writing_at_once_lose_no_binding(tmp_path: Path) -> None:
    # the same eight sessions from every process: their files are read, changed and written at once
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), prefix]) for prefix in ("a", "b", "c")]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    keys = set(_store(tmp_path).all())
    assert keys == {f"{p}-{i % 8}@{i}" for p in "abc" for i in range(40)}


def test_state_file_edit_read_and_update(tmp_path: Path) -> None:
    sf = StateFile(tmp_path / "agents.json")
    assert sf.read() == {}
    with sf.edit() as data:
        data["agy"] = {"cancel": "unsupported"}
    assert sf.read() == {"agy": {"cancel": "unsupported"}}
    assert sf.update({"gemini": {"cancel": "supported"}}) == {
        "agy": {"cancel": "unsupported"},
        "gemini": {"cancel": "supported"},
    }
    assert stat.S_IMODE((tmp_path / "agents.json").stat().st_mode) == 0o600


def test_state_file_edit_that_raises_writes_nothing(tmp_path: Path) -> None:
    sf = StateFile(tmp_path / "agents.json")
    sf.update({"a": 1})
    with pytest.raises(RuntimeError), sf.edit() as data:
        data["a"] = 2
        raise RuntimeError("boom")
    assert sf.read() == {"a": 1}


@pytest.mark.parametrize("content", [b"nope{", b'"a string"', b"\xff\xfe"])
def test_state_file_corrupt_is_quarantined(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "agents.json"
    path.write_bytes(content)
    warnings: list[str] = []
    sf = StateFile(path, warn=warnings.append)
    assert sf.read() == {}
    [moved] = _corrupt_copies(tmp_path, "agents.json")
    assert moved.read_bytes() == content
    assert warnings and str(moved) in warnings[0]
    assert not path.exists()


def test_unreadable_store_is_an_error_not_an_empty_store(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads files regardless of permissions")
    _store(tmp_path).set("x", SessionBinding(conversation_id="1"))
    _file(tmp_path, "x").chmod(0)
    from agy_host.runtime.store import StoreError

    with pytest.raises(StoreError):
        _store(tmp_path).get("x")
