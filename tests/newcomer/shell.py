"""The shell examples of the README and the docs, and the commands in them.

A block is a shell example when its language is a shell's (``bash``,
``sh``, ``console``...), or when it has none (or ``text``) and one of its
lines is a command a person types (``agy-host ...``, ``pip ...``,
``$ ...``). The newcomer suite must run, or list with a reason, every such
block that names ``agy-host`` (``catalogue.py``).

A command is one line as written, its trailing comment kept for the
person reading a failure; a line that is only a comment continues the
comment above it and is not a command. In a ``console`` block (or any
block whose commands start with ``$``) only the ``$`` lines are commands:
the others are what the command printed.
"""

from __future__ import annotations

import re
from pathlib import Path

from doc_blocks import REPO_ROOT, Block, blocks

#: The pages a newcomer reads: the README, docs/*.md and the engine pages.
PAGES = [
    REPO_ROOT / "README.md",
    *sorted((REPO_ROOT / "docs").glob("*.md")),
    *sorted((REPO_ROOT / "docs" / "engines").glob("*.md")),
]
SHELLS = {"bash", "sh", "shell", "console", "zsh"}
_TYPED = re.compile(r"^(\$ )?(agy-host|pip|python3?|\.venv/bin/\S+|export|bash)(\s|$)")
_NAMES = re.compile(r"(?<![\w-])agy-host(?![\w-])")


def is_shell(block: Block) -> bool:
    if block.lang in SHELLS:
        return True
    return block.lang in ("", "text") and any(_TYPED.match(line) for line in block.code.splitlines())


def shell_blocks(pages: list[Path] | None = None) -> list[Block]:
    """Every shell example that names ``agy-host`` (the command, not ``agy-host-acp``)."""
    return [b for page in pages or PAGES for b in blocks(page) if is_shell(b) and _NAMES.search(b.code)]


def commands(block: Block) -> list[str]:
    """The command lines of ``block``, as written."""
    lines = block.code.splitlines()
    prompted = block.lang == "console" or any(line.startswith("$ ") for line in lines)
    if prompted:
        return [line[2:] for line in lines if line.startswith("$ ")]
    return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


def installed(block: Block) -> list[str]:
    """The workspace folders the ``pip install`` commands of ``block`` install
    (``./core``, ``./plugins/acp_engine``), in order."""
    found: list[str] = []
    for line in commands(block):
        for part in without_comment(line).split("&&"):
            words = part.split()
            if len(words) > 1 and words[0].endswith("pip") and words[1] == "install":
                found += [w for w in words[2:] if w.startswith("./")]
    return found


def without_comment(line: str) -> str:
    """``line`` up to its trailing ``# comment`` (a ``#`` that starts a word
    outside quotes), whitespace folded: the command itself, the key a table
    of commands is kept by."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            line = line[:i]
            break
    return " ".join(line.split())


def key(block: Block) -> tuple[str, str]:
    """``(page, first command)``: how the catalogue names a block."""
    first = commands(block)[0] if commands(block) else block.code.splitlines()[0]
    return block.where.rsplit(":", 1)[0], without_comment(first)


def find(page: str, first: str) -> Block:
    """The block of ``page`` whose first command is ``first``."""
    found = [b for b in shell_blocks() if key(b) == (page, first)]
    assert len(found) == 1, f"{page} has {len(found)} shell blocks starting with {first!r}"
    return found[0]


__all__ = ["PAGES", "commands", "find", "installed", "is_shell", "key", "shell_blocks", "without_comment"]
