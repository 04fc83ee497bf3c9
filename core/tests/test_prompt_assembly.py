"""The pieces of prompt assembly: the system block and its AGENTS.md walk,
the digest window and its truncation rules, and the prompt-parts hook."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agy_host.builtins.digest import TRUNCATED, build_digest, digest_items, truncate, unseen_start
from agy_host.builtins.prompt_assembly import PromptAssembly
from agy_host.builtins.system_prompt import SYSTEM_END, SYSTEM_PREAMBLE, find_agents_files, system_block
from agy_host.builtins.transcripts import TranscriptEntry, append_entries
from agy_host.config import Config
from agy_host.contract.prompt_parts import PromptContext, is_slash_command


def entry(role: str, text: str, conversation: str | None = None, **kw: object) -> TranscriptEntry:
    return TranscriptEntry(v=1, ts="t", role=role, text=text, conversation_id=conversation, **kw)  # type: ignore[arg-type]


# -- system block ----------------------------------------------------------------


def test_the_block_frames_prompt_and_agents_files() -> None:
    block = system_block("Be terse.", [("AGENTS.md", "rules")])
    assert block == f"{SYSTEM_PREAMBLE}\n\nBe terse.\n\n## AGENTS.md\n\nrules\n\n{SYSTEM_END}"
    assert block.count(SYSTEM_END) == 1
    assert system_block("  ", []) == ""


def test_agents_files_from_cwd_up_to_the_repository_root(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("outside")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "AGENTS.md").write_text("root")
    sub = repo / "pkg" / "mod"
    sub.mkdir(parents=True)
    (repo / "pkg" / "AGENTS.md").write_text("pkg")
    found = find_agents_files(sub, home=tmp_path / "nohome")
    assert found == [repo / "AGENTS.md", repo / "pkg" / "AGENTS.md"], "outermost first, stops at .git"


def test_the_walk_stops_at_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    work = home / "work"
    work.mkdir(parents=True)
    (tmp_path / "AGENTS.md").write_text("above home")
    (home / "AGENTS.md").write_text("home")
    assert find_agents_files(work, home=home) == [home / "AGENTS.md"]


# -- digest ----------------------------------------------------------------------


def test_the_window_starts_after_the_conversations_last_entry() -> None:
    entries = [entry("user", "a", "c1"), entry("assistant", "A", "c1"), entry("user", "b", "c2")]
    assert unseen_start(entries, "c1") == 2
    assert unseen_start(entries, None) == 0
    assert unseen_start(entries, "unknown") == 0


def test_items_by_role() -> None:
    items = digest_items(
        [
            entry("user", "hello"),
            entry("user", "   "),
            entry("assistant", "hi there", engine="stream-json", agent="agy"),
            entry("assistant", ""),
            entry("tool", "", tool="read", is_error=True),
        ]
    )
    assert items == [
        "[earlier user message]\nhello",
        "[assistant turn from stream-json (agy)]\nhi there",
        "[tool result: read] (error)\n(no text output)",
    ]


def test_truncation_keeps_the_newest_whole_items() -> None:
    items = ["a" * 10, "b" * 10, "c" * 10]
    assert truncate(items, 100) == "\n\n".join(items)
    assert truncate(items, 22) == f"{TRUNCATED}\n" + "b" * 10 + "\n\n" + "c" * 10
    assert truncate(items, 21) == f"{TRUNCATED}\n" + "c" * 10


def test_when_not_even_the_newest_fits_its_tail_is_kept() -> None:
    items = ["old", "x" * 50 + "END"]
    out = truncate(items, 30)
    assert out == f"{TRUNCATED}\n" + ("x" * 50 + "END")[-(30 - 12) :]
    assert out.endswith("END")
    assert truncate(items, 5) == ""


def test_zero_disables_the_cap() -> None:
    items = ["x" * 10_000]
    assert truncate(items, 0) == items[0]


def test_build_digest_of_a_transcript() -> None:
    entries = [entry("user", "mine", "c1"), entry("assistant", "yours", "c1"), entry("user", "theirs", "c2")]
    assert build_digest(entries, "c1") == "[earlier user message]\ntheirs"
    assert build_digest(entries[:2], "c1") == ""


def test_a_slash_command_turn_does_not_move_the_window() -> None:
    """A slash command went to the agent alone, without the digest: what came
    before it is still unseen, and the command's own turn is left out."""
    entries = [
        entry("user", "mine", "c1"),
        entry("assistant", "yours", "c1"),
        entry("user", "theirs", "c2"),
        entry("user", "/compact keep the tests", "c1"),
        entry("tool", "", "c1", tool="read"),
        entry("assistant", "compacted", "c1"),
    ]
    assert unseen_start(entries, "c1") == 2
    assert build_digest(entries, "c1") == "[earlier user message]\ntheirs"
    entries.append(entry("user", "/etc/hosts says what?", "c1"))  # a path, not a command
    assert unseen_start(entries, "c1") == 7


# -- the hook ----------------------------------------------------------------------


@pytest.fixture
def configured(agy_host_home: object) -> Iterator[Config]:
    yield Config(system_prompt="SYS")


#: One host's built-in prompt parts (no ``agy_host_configure`` call: the
#: environment is this process's, which ``agy_host_home`` isolates).
agy_host_prompt_parts = PromptAssembly().agy_host_prompt_parts


def ctx(config: Config, cwd: Path, *, new: bool = True, session: str = "s", text: str = "hi") -> PromptContext:
    return PromptContext(
        session=session,
        engine="acp",
        cwd=str(cwd),
        new_conversation=new,
        user_text=text,
        slash_command=is_slash_command(text),
        config=config,
    )


def test_system_part_only_for_new_conversations(configured: Config, tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    [part] = agy_host_prompt_parts(ctx(configured, tmp_path)) or []
    assert part.where == "system" and "SYS" in part.text
    assert agy_host_prompt_parts(ctx(configured, tmp_path, new=False)) is None


def test_agents_md_can_be_turned_off(configured: Config, tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "AGENTS.md").write_text("project notes")
    [part] = agy_host_prompt_parts(ctx(configured, tmp_path)) or []
    assert "project notes" in part.text
    configured.prompt.agents_md = False
    [part] = agy_host_prompt_parts(ctx(configured, tmp_path)) or []
    assert "project notes" not in part.text


def test_digest_part_is_a_context_part_with_a_changing_uri(configured: Config, tmp_path: Path) -> None:
    configured.prompt.digest = True
    append_entries("dg", [entry("user", "elsewhere", "other-1"), entry("assistant", "ok", "other-1")])
    parts = agy_host_prompt_parts(ctx(configured, tmp_path, session="dg")) or []
    [digest] = [p for p in parts if p.where == "context"]
    assert digest.uri == "urn:agy-host:context-digest/dg/2"
    append_entries("dg", [entry("user", "more", "other-1")])
    [digest2] = [
        p for p in agy_host_prompt_parts(ctx(configured, tmp_path, session="dg")) or [] if p.where == "context"
    ]
    assert digest2.uri != digest.uri


def test_no_digest_is_built_for_a_slash_command(configured: Config, tmp_path: Path) -> None:
    configured.prompt.digest = True
    append_entries("dc", [entry("user", "elsewhere", "other-1"), entry("assistant", "ok", "other-1")])
    parts = agy_host_prompt_parts(ctx(configured, tmp_path, session="dc", text="/context")) or []
    assert [p.where for p in parts] == ["system"], "the system part is still offered: the layer holds it back"


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("/context", True),
        ("/compact keep the tests", True),
        ("/review\nthe diff", True),
        ("/mcp__server__prompt", True),
        ("/etc/hosts is odd", False),
        ("/ spaced", False),
        ("/", False),
        ("//context", False),
        (" /context", False),
        ("run /context", False),
        ("", False),
    ],
)
def test_what_counts_as_a_slash_command(text: str, command: bool) -> None:
    assert is_slash_command(text) is command
