"""The diff text: unified format with line numbers, the cap, edge cases."""

from __future__ import annotations

import pytest

from agy_host_diff_render.unified import NO_NEWLINE, unified_diff, whole_texts


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


#: claude-agent-acp's Edit: the replaced line and its replacement, neither
#: ending in a newline, in a file that ends in one.
FILE_AFTER = "line 1\nconst value = 2;\nline 3\n"


def test_a_fragment_is_put_back_in_its_file() -> None:
    old, new, whole = whole_texts("const value = 1;", "const value = 2;", FILE_AFTER)
    assert (old, new, whole) == ("line 1\nconst value = 1;\nline 3\n", FILE_AFTER, True)
    diff = unified_diff(old, new, "src/app.ts", file_ends=whole).split("\n")
    assert diff[2:] == [
        "@@ -1,3 +1,3 @@",
        " 1 1 │ line 1",
        "-2   │ const value = 1;",
        "+  2 │ const value = 2;",
        " 3 3 │ line 3",
    ]
    assert NO_NEWLINE not in diff


def test_the_marker_stays_when_the_file_really_lacks_a_final_newline() -> None:
    old, new, whole = whole_texts("b", "B", "a\nB")
    assert unified_diff(old, new, "x", file_ends=whole).split("\n")[-4:] == [
        "-2   │ b",
        NO_NEWLINE,
        "+  2 │ B",
        NO_NEWLINE,
    ]
    # whole texts are whole: the agy and Gemini CLI shape
    assert whole_texts("a\nb", "a\nB", "a\nB") == ("a\nb", "a\nB", True)


@pytest.mark.parametrize(
    "now",
    [
        None,  # the file is not here (a remote agent, deleted since)
        "x = 2;\nx = 2;\n",  # the fragment is there twice: its place is not known
        "changed again\n",  # not there at all
    ],
)
def test_a_fragment_that_cannot_be_placed_has_no_marker(now: str | None) -> None:
    old, new, whole = whole_texts("x = 1;", "x = 2;", now)
    assert (old, new, whole) == ("x = 1;", "x = 2;", False)
    assert unified_diff(old, new, "x", file_ends=whole).split("\n")[2:] == [
        "@@ -1,1 +1,1 @@",
        "-1   │ x = 1;",
        "+  1 │ x = 2;",
    ]
