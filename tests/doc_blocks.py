"""The fenced code blocks of a Markdown page, for the tests that run what
the docs show (``test_docs_examples.py``: the plugin docs' Python;
``newcomer/``: the README's and the docs' shell examples).

One reader, so every docs test sees the same blocks: a block is a line
that starts with three backticks and a language (possibly none), its
lines, and a closing line of three backticks. Its line number lets a
failure point at the page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
_FENCE = re.compile(r"^```(\w*)\n(.*?)\n```$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    """One fenced block: its page, the line of its opening fence, its language and its text."""

    path: Path
    line: int
    lang: str
    code: str

    @property
    def where(self) -> str:
        """``docs/page.md:LINE``, relative to the repository when it is inside it."""
        try:
            shown = self.path.resolve().relative_to(REPO_ROOT)
        except ValueError:
            shown = self.path
        return f"{shown}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path``, in order."""
    text = path.read_text("utf-8")
    return [Block(path, text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2)) for m in _FENCE.finditer(text)]


def code_blocks(path: Path, lang: str = r"\w+") -> list[tuple[str, str]]:
    """``(language, code)`` of every fenced block whose language matches ``lang`` (a regex)."""
    return [(b.lang, b.code) for b in blocks(path) if re.fullmatch(lang, b.lang)]


__all__ = ["REPO_ROOT", "Block", "blocks", "code_blocks"]
