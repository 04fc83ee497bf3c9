"""The session store and StateFile: engine-scoped keys, atomic writes, corrupt
files moved aside (never dropped), and no lost binding between processes."""

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
    return SessionStore(tmp_path / "sessions.json", warn=(warnings if warnings is not None else []).append)


def _corrupt_copies(tmp_path: Path, name: str = "sessions.json") -> list[Path]:
    return sorted(tmp_path.glob(f"{name}.corrupt-*"))


def test_missing_file_is_an_empty_store(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert store.all() == {}
    assert store.get("x") is None
    assert not (tmp_path / "sessions.json").exists()


def test_set_get_roundtrip_and_file_format(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.set("work@acp", SessionBinding(conversation_id="c1", engine="acp", agent="agy", cwd="/p", updated_at="t"))
    store.set("work", SessionBinding(conversation_id="s1", engine="stream-json", last_message_count=4))
    path = tmp_path / "sessions.json"
    doc = json.loads(path.read_text())
    assert doc["version"] == STORE_VERSION
    assert doc["bindings"]["work@acp"]["conversation_id"] == "c1"
    assert doc["bindings"]["work"]["last_message_count"] == 4
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = _store(tmp_path)
    assert again.get("work@acp") == SessionBinding(
        conversation_id="c1", engine="acp", agent="agy", cwd="/p", updated_at="t"
    )
    # Engine-scoped keys: both engines keep their own conversation.
    assert again.get("work") is not None
    assert again.get("work").conversation_id == "s1"  # type: ignore[union-attr]


def test_an_owed_system_block_is_kept_and_a_bad_flag_reported(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.set("cmd@acp", SessionBinding(conversation_id="c", system_pending=True))
    store.set("plain@acp", SessionBinding(conversation_id="p"))
    doc = json.loads((tmp_path / "sessions.json").read_text())
    assert doc["bindings"]["cmd@acp"]["system_pending"] is True
    assert "system_pending" not in doc["bindings"]["plain@acp"], "the usual case writes nothing new"
    assert _store(tmp_path).get("cmd@acp") == SessionBinding(conversation_id="c", system_pending=True)
    doc["bindings"]["cmd@acp"]["system_pending"] = "yes"
    (tmp_path / "sessions.json").write_text(json.dumps(doc))
    warnings: list[str] = []
    assert _store(tmp_path, warnings).get("cmd@acp") == SessionBinding(conversation_id="c")
    assert any("system_pending" in w for w in warnings), warnings


def test_delete(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.set("a", SessionBinding(conversation_id="1"))
    assert store.delete("a") is True
    assert store.delete("a") is False
    assert _store(tmp_path).all() == {}


def test_not_json_is_moved_aside_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "sessions.json"
    path.write_bytes(b"{not json at all")
    warnings: list[str] = []
    store = _store(tmp_path, warnings)
    assert store.all() == {}
    [moved] = _corrupt_copies(tmp_path)
    assert moved.read_bytes() == b"{not json at all"
    assert any("not valid JSON" in w and str(moved) in w for w in warnings)


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


def test_bad_entries_are_reported_and_original_kept_before_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "sessions.json"
    original = json.dumps(
        {
            "version": 1,
            "bindings": {
                "good": {"conversation_id": "g", "last_message_count": 2},
                "no-id": {"engine": "acp"},
                "not-object": 7,
                "bad-count": {"conversation_id": "b", "last_message_count": "lots"},
            },
        }
    )
    path.write_text(original)
    warnings: list[str] = []
    store = _store(tmp_path, warnings)
    assert set(store.all()) == {"good", "bad-count"}
    assert store.get("bad-count").last_message_count == 0  # type: ignore[union-attr]
    assert any("'no-id'" in w for w in warnings)
    assert any("'not-object'" in w for w in warnings)
    assert any("'bad-count'" in w for w in warnings)
    # Loading alone never rewrites: the file is untouched.
    assert path.read_text() == original
    store.set("new", SessionBinding(conversation_id="n"))
    [kept] = _corrupt_copies(tmp_path)
    assert kept.read_text() == original
    assert set(json.loads(path.read_text())["bindings"]) == {"good", "bad-count", "new"}
    assert any("kept the original" in w for w in warnings)


def test_other_version_is_kept_aside_before_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "sessions.json"
    path.write_text(json.dumps({"version": 99, "bindings": {"a": {"conversation_id": "x"}}}))
    warnings: list[str] = []
    store = _store(tmp_path, warnings)
    assert store.get("a") is not None
    store.set("b", SessionBinding(conversation_id="y"))
    assert len(_corrupt_copies(tmp_path)) == 1
    assert any("version 99" in w for w in warnings)


def test_write_merges_keys_written_by_another_process(tmp_path: Path) -> None:
    ours = _store(tmp_path)
    theirs = _store(tmp_path)
    ours.set("mine", SessionBinding(conversation_id="1"))
    theirs.set("theirs", SessionBinding(conversation_id="2"))
    ours.set("mine2", SessionBinding(conversation_id="3"))
    assert set(_store(tmp_path).all()) == {"mine", "theirs", "mine2"}
    # A delete by one process does not resurrect or drop the other's keys.
    theirs.delete("mine")
    ours.set("mine3", SessionBinding(conversation_id="4"))
    assert set(_store(tmp_path).all()) == {"theirs", "mine2", "mine3"}


def test_a_write_reparses_the_file_only_when_someone_else_changed_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A store written at every turn end must not re-check every entry each
    # time (64 sessions made that quadratic); another writer's change must
    # still be merged.
    import agy_host.runtime.store as store_mod

    parsed: list[int] = []
    real = store_mod._narrow
    monkeypatch.setattr(store_mod, "_narrow", lambda doc, path, warn: parsed.append(1) or real(doc, path, warn))
    ours = _store(tmp_path)
    for i in range(5):
        ours.set(f"k{i}", SessionBinding(conversation_id=str(i)))
    assert parsed == []  # the file was missing, then only ever written by us
    _store(tmp_path).set("theirs", SessionBinding(conversation_id="t"))
    parsed.clear()
    ours.set("k5", SessionBinding(conversation_id="5"))
    assert len(parsed) == 1
    assert set(_store(tmp_path).all()) == {*(f"k{i}" for i in range(6)), "theirs"}


def test_a_hand_edit_in_place_is_seen_by_the_next_write(tmp_path: Path) -> None:
    ours = _store(tmp_path)
    ours.set("a", SessionBinding(conversation_id="1"))
    path = tmp_path / "sessions.json"
    doc = json.loads(path.read_text())
    doc["bindings"]["edited"] = {"conversation_id": "by-hand"}
    with open(path, "r+", encoding="utf-8") as fh:  # same inode: only size and times change
        fh.write(json.dumps(doc))
        fh.truncate()
    ours.set("b", SessionBinding(conversation_id="2"))
    assert set(_store(tmp_path).all()) == {"a", "b", "edited"}


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from agy_host.runtime.store import SessionBinding, SessionStore
    store = SessionStore(Path(sys.argv[1]))
    prefix = sys.argv[2]
    for i in range(40):
        store.set(f"{prefix}-{i}", SessionBinding(conversation_id=f"{prefix}{i}"))
    """
)


def test_two_processes_writing_at_once_lose_no_binding(tmp_path: Path) -> None:
    path = tmp_path / "sessions.json"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), prefix]) for prefix in ("a", "b", "c")]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    keys = set(_store(tmp_path).all())
    assert keys == {f"{p}-{i}" for p in "abc" for i in range(40)}


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
    path = tmp_path / "sessions.json"
    path.write_text('{"version": 1, "bindings": {}}')
    path.chmod(0)
    from agy_host.runtime.store import StoreError

    with pytest.raises(StoreError):
        _store(tmp_path)
