"""Skills the agent can activate through the bridge (``activate_skill``).

A skill is a folder with a ``SKILL.md``: its front matter names and describes
it, its body is what the agent gets when it activates the skill, and the
folder holds whatever resources the body refers to. Folders scanned, first
name wins:

1. ``$XDG_CONFIG_HOME/agy-host/skills/*/SKILL.md`` (the user's own);
2. ``<cwd>/.agy-host/skills/*/SKILL.md``, only when the project is trusted
   (``bridge.trusted_projects``): a cloned repository must not be able to put
   instructions in front of the agent by shipping a skill.

Front matter is the first ``---`` ... ``---`` block at the top of the file;
the first ``name:`` and ``description:`` lines count, the name falls back to
the folder name, the description has its whitespace collapsed and is cut at
160 characters.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec

SKILL_FILE = "SKILL.md"
DESCRIPTION_CHARS = 160
#: A SKILL.md larger than this is not offered (it would not fit a tool result anyway).
MAX_SKILL_BYTES = 512 * 1024


class Skill(msgspec.Struct, kw_only=True):
    name: str
    description: str
    path: str
    dir: str


def global_skills_dir(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "agy-host" / "skills"


def project_trusted(cwd: str, trusted: Sequence[str]) -> bool:
    """True when ``cwd`` is one of ``trusted`` or inside one."""
    here = Path(os.path.realpath(cwd))
    for entry in trusted:
        if not entry:
            continue
        root = Path(os.path.realpath(os.path.expanduser(entry)))
        if here == root or root in here.parents:
            return True
    return False


def split_front_matter(text: str) -> tuple[dict[str, str], str]:
    """``({"name": ..., "description": ...}, body)``; no front matter gives ``({}, text)``."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    fields: dict[str, str] = {}
    for i, line in enumerate(lines[1:], 1):
        if line.strip() == "---":
            return fields, "".join(lines[i + 1 :]).lstrip("\n")
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if sep and key in {"name", "description"} and key not in fields:
            fields[key] = value.strip().strip("\"'")
    return {}, text  # an unclosed block is body, not front matter


def read_skill(path: Path) -> Skill | None:
    try:
        if path.stat().st_size > MAX_SKILL_BYTES:
            return None
        text = path.read_text("utf-8", errors="replace")
    except OSError:
        return None
    fields, _ = split_front_matter(text)
    name = fields.get("name") or path.parent.name
    description = " ".join(fields.get("description", "").split())[:DESCRIPTION_CHARS]
    return Skill(name=name, description=description, path=str(path), dir=str(path.parent))


def scan(dirs: Sequence[Path]) -> list[Skill]:
    """Skills of ``dirs`` in order; the first of a name wins."""
    found: dict[str, Skill] = {}
    for base in dirs:
        try:
            folders = sorted(p for p in base.iterdir() if p.is_dir())
        except OSError:
            continue
        for folder in folders:
            skill = read_skill(folder / SKILL_FILE)
            if skill is not None and skill.name not in found:
                found[skill.name] = skill
    return list(found.values())


def skill_dirs(env: Mapping[str, str], cwd: str, trusted: Sequence[str]) -> list[Path]:
    dirs = [global_skills_dir(env)]
    if cwd and project_trusted(cwd, trusted):
        dirs.append(Path(cwd) / ".agy-host" / "skills")
    return dirs


def skill_body(skill: Skill) -> str:
    """What ``activate_skill`` answers: the body and where its resources are."""
    try:
        text = Path(skill.path).read_text("utf-8", errors="replace")
    except OSError as exc:
        return f"Error: cannot read {skill.path}: {exc.strerror or exc}"
    _, body = split_front_matter(text)
    return f"{body.rstrip()}\n\n[skill resources dir: {skill.dir}]"


__all__ = [
    "SKILL_FILE",
    "Skill",
    "global_skills_dir",
    "project_trusted",
    "read_skill",
    "scan",
    "skill_body",
    "skill_dirs",
    "split_front_matter",
]
