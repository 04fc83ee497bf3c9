"""The diff text: unified format with line numbers, the cap, edge cases."""

from __future__ import annotations

from agy_host_diff_render.unified import NO_NEWLINE, unified_diff


def test_a_changed_line_with_numbers_and_context() -> None:
    old = "".join(f"line {i}\n" for i in range(1, 11))
    new = old.replace("line 5\n", "line five\n")
    diff = unified_diff(old, new, "notes.txt").split("\n")
    assert diff[:3] == ["--- a/notes.txt", "+++ b/notes.txt", "@@ -2,7 +2,7 @@"]
    assert "  2  2 │ line 2" in diff
    assert "- 5    │ line 5" in diff
    assert "+    5 │ line five" in diff
    assert diff[-1] == "  8  8 │ line 8"


def test_a_new_file_is_all_additions() -> None:
    diff = unified_diff(None, "a\nb\n", "/w/probe.txt").split("\n")
    assert diff == ["--- /dev/null", "+++ /w/probe.txt", "@@ -0,0 +1,2 @@", "+  1 │ a", "+  2 │ b"]


def test_a_deleted_file() -> None:
    assert unified_diff("a\n", None, "x").split("\n")[:2] == ["--- a/x", "+++ /dev/null"]


def test_unchanged_is_empty() -> None:
    assert unified_diff("same\n", "same\n", "x") == ""
    assert unified_diff(None, "", "x") == ""


def test_binary_is_skipped() -> None:
    assert unified_diff("a", "b\0c", "x") == "(binary file; diff skipped)"
    assert unified_diff("a\0", "b", "x") == "(was binary; diff skipped)"


def test_a_missing_final_newline_is_marked() -> None:
    diff = unified_diff("a\n", "a\nb", "x").split("\n")
    assert diff[-2:] == ["+  2 │ b", NO_NEWLINE]


def test_long_diffs_are_capped_with_the_rest_counted() -> None:
    new = "".join(f"{i}\n" for i in range(500))
    lines = unified_diff(None, new, "big").split("\n")
    assert len(lines) == 101
    assert lines[-1] == f"… {503 - 100} more lines"


def test_separate_hunks() -> None:
    old = "".join(f"{i}\n" for i in range(40))
    new = old.replace("3\n", "three\n", 1).replace("35\n", "thirty-five\n")
    hunks = [line for line in unified_diff(old, new, "x").split("\n") if line.startswith("@@")]
    assert hunks == ["@@ -1,7 +1,7 @@", "@@ -33,7 +33,7 @@"]
