"""The system block sent once at the start of an agent conversation.

Sources, in the block's order: the system prompt (``--system-prompt``, else
``system_prompt`` in the config) and the ``AGENTS.md`` files from the
working directory up to the repository root (outermost first, so the
closest file has the last word). The block is built from those inputs only
(no clock, no absolute paths, no engine name), so it is byte-identical on
every engine and every machine checking out the same project, which keeps
the agent's prompt cache hitting; it is sent only when a conversation
starts, so an existing conversation keeps the block it started with.
"""

from __future__ import annotations

import os
from pathlib import Path

from agy_host.contract.prompt_parts import SYSTEM_END, SYSTEM_PREAMBLE

AGENTS_FILE = "AGENTS.md"
#: An AGENTS.md larger than this is cut (and says so): it rides every new conversation.
AGENTS_MAX_BYTES = 64 * 1024


def find_agents_files(cwd: str | Path, home: str | Path | None = None) -> list[Path]:
    """``AGENTS.md`` files from ``cwd`` upward, outermost first.

    The walk stops at the repository root (a directory holding ``.git``), at
    the home directory, or at the filesystem root, whichever comes first, so
    a project never inherits a stray file from above itself.
    """
    start = Path(cwd).resolve()
    stop = Path(home).resolve() if home is not None else Path.home().resolve()
    found: list[Path] = []
    for directory in (start, *start.parents):
        candidate = directory / AGENTS_FILE
        if candidate.is_file():
            found.append(candidate)
        if (directory / ".git").exists() or directory == stop:
            break
    return list(reversed(found))


def read_agents_file(path: Path) -> str:
    data = path.read_bytes()
    text = data[:AGENTS_MAX_BYTES].decode("utf-8", errors="replace").strip()
    if len(data) > AGENTS_MAX_BYTES:
        text += f"\n\n[... {path.name} cut at {AGENTS_MAX_BYTES // 1024} KiB]"
    return text


def agents_sections(cwd: str | Path, home: str | Path | None = None) -> list[tuple[str, str]]:
    """``(display path, content)`` per non-empty AGENTS.md; paths relative to
    ``cwd`` so the block does not depend on where the project is checked out."""
    out: list[tuple[str, str]] = []
    for path in find_agents_files(cwd, home):
        try:
            content = read_agents_file(path)
        except OSError:
            continue
        if content:
            out.append((os.path.relpath(path, Path(cwd).resolve()), content))
    return out


def system_block(system_prompt: str, agents: list[tuple[str, str]]) -> str:
    """The whole block, or ``""`` when there is nothing to say."""
    body: list[str] = []
    if system_prompt.strip():
        body.append(system_prompt.strip())
    for shown, content in agents:
        body.append(f"## {shown}\n\n{content}")
    if not body:
        return ""
    return "\n\n".join([SYSTEM_PREAMBLE, *body, SYSTEM_END])


__all__ = [
    "AGENTS_FILE",
    "AGENTS_MAX_BYTES",
    "SYSTEM_END",
    "SYSTEM_PREAMBLE",
    "agents_sections",
    "find_agents_files",
    "read_agents_file",
    "system_block",
]
