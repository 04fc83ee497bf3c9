"""Antigravity's model ids carry their effort tier, on both of its dialects.

``gemini-3.8-flash-high`` is the Flash family at the high tier. Users pass
the *family* and an effort (``--model gemini-3.8-flash --effort low``), on
every engine: the CLI takes ``--effort``, the ACP server takes the full
slug, and both list the slugs flat. The folding and the effort choice live
here, once, so both engines show the same catalog and pick the same tier.

Folding: a Gemini base listed with two or more tiers becomes one entry with
``efforts``; everything else stays as listed (``claude-sonnet-4-6``,
``gpt-oss-120b-medium``), and those fixed-thinking models never get an
effort.

Effort: the host's reasoning level maps minimal/low -> low, medium ->
medium, high/xhigh/max -> high, none -> the cheapest tier the model has. A
tier the model lacks is searched upward, then downward (Pro has no medium:
medium -> high).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agy_host.engine.base import ModelInfo

TIERS = ("low", "medium", "high")
SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._]*-[A-Za-z0-9._-]*$")
EFFORT_FAMILY = re.compile(r"^gemini-", re.IGNORECASE)
LEVELS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}


def split_tier(slug: str) -> tuple[str, str | None]:
    """``gemini-3.8-flash-high`` -> (``gemini-3.8-flash``, ``high``)."""
    for tier in TIERS:
        if slug.endswith(f"-{tier}"):
            return slug[: -len(tier) - 1], tier
    return slug, None


def base_name(name: str) -> str:
    """``Gemini 3.8 Flash (High)`` -> ``Gemini 3.8 Flash``."""
    return re.sub(r"\s*\((?:High|Medium|Low)\)\s*$", "", name, flags=re.IGNORECASE)


def fold_tiers(rows: Iterable[tuple[str, str]], current: str | None = None) -> list[ModelInfo]:
    """``(slug, display name)`` rows -> catalog entries in first-seen order.

    ``current`` (a slug) marks its entry, the family entry for a tier slug."""
    listed = list(rows)
    tiers: dict[str, list[str]] = {}
    for slug, _name in listed:
        base, tier = split_tier(slug)
        if tier is not None and EFFORT_FAMILY.match(base):
            tiers.setdefault(base, []).append(tier)
    current_base = split_tier(current)[0] if current else None
    out: list[ModelInfo] = []
    grouped: set[str] = set()
    for slug, name in listed:
        base, tier = split_tier(slug)
        if tier is not None and len(set(tiers.get(base, []))) >= 2:
            if base in grouped:
                continue
            grouped.add(base)
            efforts = [t for t in TIERS if t in tiers[base]]
            out.append(ModelInfo(id=base, name=base_name(name), efforts=efforts, current=base == current_base))
        elif not any(m.id == slug for m in out):
            out.append(ModelInfo(id=slug, name=name, current=slug == current))
    return out


def level_to_tier(level: str) -> str:
    """The host's reasoning level as an Antigravity tier; ``ValueError`` if unknown."""
    tier = LEVELS.get(level.strip().lower())
    if tier is None:
        raise ValueError(f"unknown effort {level!r} (use low, medium or high)")
    return tier


def pick_effort(level: str | None, efforts: list[str]) -> str:
    """The tier to pass: the level's tier if the model has it, else the nearest
    upward, else downward; no level -> the cheapest tier."""
    if not efforts:
        raise ValueError("the model has no effort tiers")
    if level is None:
        return efforts[0]
    wanted = level_to_tier(level)
    if wanted in efforts:
        return wanted
    index = TIERS.index(wanted)
    for tier in (*TIERS[index + 1 :], *reversed(TIERS[:index])):
        if tier in efforts:
            return tier
    return efforts[0]


def family_tiers(base: str) -> list[str]:
    """Tiers of a Gemini base that no catalog listed (Pro has no medium)."""
    return ["low", "high"] if "-pro" in base else list(TIERS)


def resolve_effort(model: str | None, level: str | None, catalog: list[ModelInfo]) -> tuple[str | None, str | None]:
    """``(tier to select or None, a notice for the user or None)``.

    ``None`` as the tier means the model id is used as given: it already names
    a tier, or it is a fixed-thinking model."""
    level = level or None
    if not model:
        note = f"no model is selected, so effort {level!r} is not passed to the agent" if level else None
        return None, note
    _base, tier = split_tier(model)
    if tier is not None:
        if level is not None and LEVELS.get(level.lower()) != tier:
            return None, f"model {model} already selects the {tier} effort; effort {level!r} is not passed"
        return None, None
    entry = next((m for m in catalog if m.id == model), None)
    if entry is not None and entry.efforts:
        efforts = list(entry.efforts)
    elif entry is None and SLUG.match(model) and EFFORT_FAMILY.match(model):
        efforts = family_tiers(model)
    else:
        note = f"model {model} has a fixed thinking budget; effort {level!r} is not passed" if level else None
        return None, note
    try:
        chosen = pick_effort(level, efforts)
    except ValueError as exc:
        return efforts[0], f"{exc}; using {efforts[0]}"
    if level is not None and chosen != LEVELS.get(level.lower()):
        return chosen, f"model {model} has no {level} effort (it has {', '.join(efforts)}); using {chosen}"
    return chosen, None


__all__ = [
    "TIERS",
    "base_name",
    "family_tiers",
    "fold_tiers",
    "level_to_tier",
    "pick_effort",
    "resolve_effort",
    "split_tier",
]
