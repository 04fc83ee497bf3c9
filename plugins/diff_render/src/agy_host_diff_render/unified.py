"""A unified diff with line numbers, capped, as plain text.

Each line starts with its unified-diff sign (``+``, ``-``, space, ``@@``,
``---``/``+++``) so renderers colour it by its first characters, then the
old and the new line number, then the text::

    --- a/app.py
    +++ b/app.py
    @@ -3,3 +3,3 @@
       3   3 │ def main():
    -  4     │     print("hi")
    +      4 │     print("hello")
       5   5 │     return 0

Line numbers are what a unified diff lacks for a person reading it in a
terminal; the cap keeps a rewrite of a large file from scrolling the answer
away ("… N more lines" says what was left out).

An agent may describe an edit by its fragment instead of the whole file
(:func:`whole_texts` puts it back in its place when it can).
"""

from __future__ import annotations

import difflib

MAX_LINES = 100
CONTEXT = 3
NO_NEWLINE = "\\ No newline at end of file"


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _body(line: str) -> str:
    return line.rstrip("\r\n")


def is_binary(text: str) -> bool:
    return "\0" in text


def unified_diff(
    old: str | None,
    new: str | None,
    path: str,
    *,
    max_lines: int = MAX_LINES,
    context: int = CONTEXT,
    file_ends: bool = True,
) -> str:
    """The diff from ``old`` to ``new`` (``None``: the file did not exist /
    no longer exists); ``""`` when nothing changed. ``file_ends=False``: the
    texts are fragments, whose last line is not the file's, so no
    "No newline at end of file"."""
    if new is not None and is_binary(new):
        return "(binary file; diff skipped)"
    if old is not None and is_binary(old):
        return "(was binary; diff skipped)"
    if old == new or (not old and not new):
        return ""
    a, b = _lines(old or ""), _lines(new or "")
    width = max(len(str(len(a))), len(str(len(b))), 1)
    a_name, b_name = (path, path) if path.startswith("/") else (f"a/{path}", f"b/{path}")
    out = ["--- /dev/null" if old is None else f"--- {a_name}", "+++ /dev/null" if new is None else f"+++ {b_name}"]
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                for k in range(a2 - a1):
                    out.extend(_row(" ", a1 + k + 1, b1 + k + 1, a[a1 + k], width))
                continue
            for k in range(a1, a2):
                out.extend(_row("-", k + 1, None, a[k], width))
            for k in range(b1, b2):
                out.extend(_row("+", None, k + 1, b[k], width))
    if not file_ends:
        out = [line for line in out if line != NO_NEWLINE]
    return cap(out, max_lines)


def whole_texts(old: str, new: str, now: str | None) -> tuple[str, str, bool]:
    """An agent's old and new text of an edit as whole files, given ``now``,
    the file after the edit (``None``: unreadable); and whether they are
    whole (``False``: fragments that could not be placed, or the file is
    unknown).

    ACP's ``diff`` content carries whole files, but claude-agent-acp sends
    the edit itself (its Edit tool's ``old_string``/``new_string``), which
    rarely ends in a newline. A new text that is not the file is such a
    fragment: found exactly once in the file, it is put back in its place,
    so the diff has the file's line numbers and says "No newline at end of
    file" only when the file lacks one; otherwise it is shown as it is,
    and where the file ends is not known.
    """
    if now == new:
        return old, new, True
    if now is not None and new and now.count(new) == 1:
        return now.replace(new, old, 1), now, True
    return old, new, False


def _range(start: int, end: int) -> str:
    """Unified-diff hunk range: ``start,count`` with 1-based start (0 when empty)."""
    count = end - start
    return f"{start + 1 if count else start},{count}"


def _row(sign: str, old_no: int | None, new_no: int | None, line: str, width: int) -> list[str]:
    left = str(old_no).rjust(width) if old_no is not None else " " * width
    right = str(new_no).rjust(width) if new_no is not None else " " * width
    rows = [f"{sign}{left} {right} │ {_body(line)}"]
    if not line.endswith("\n"):
        rows.append(NO_NEWLINE)
    return rows


def cap(lines: list[str], max_lines: int = MAX_LINES) -> str:
    """At most ``max_lines`` lines, then ``… N more lines``."""
    if max_lines > 0 and len(lines) > max_lines:
        rest = len(lines) - max_lines
        lines = [*lines[:max_lines], f"… {rest} more line{'s' * (rest != 1)}"]
    return "\n".join(lines)


__all__ = ["CONTEXT", "MAX_LINES", "NO_NEWLINE", "cap", "is_binary", "unified_diff", "whole_texts"]
