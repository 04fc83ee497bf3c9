"""The model catalog (``agy models``) and the effort a model gets.

``agy models`` prints ``modelId<TAB>display name`` rows, with the effort in
the id (``gemini-3.8-flash-high``). Gemini bases listed with two or more tiers
become one entry with ``efforts`` (the id users pass is the base:
``--model gemini-3.8-flash --effort low``); everything else stays as listed
(``claude-sonnet-4-6``, ``gpt-oss-120b-medium``), and those families never
get ``--effort``: agy rejects it for fixed-thinking models.

The raw output is cached in the state dir (atomic write, TTL), because asking
agy costs a process start; agy is asked under a watchdog, and when it cannot
answer the catalog falls back to a short built-in list that doctor marks as
*fallback*. A cache file that does not parse is moved aside and reported.

The effort of a turn comes from the host's reasoning level: minimal/low ->
low, medium -> medium, high/xhigh/max -> high, none -> the cheapest tier the
model has. A tier the model lacks is searched upward, then downward (Pro has
no medium: medium -> high).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import msgspec
import trio

from agy_host import fsutil
from agy_host.engines import ModelInfo

TIERS = ("low", "medium", "high")
CACHE_FILE = "agy-models-cache.json"
_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._]*-[A-Za-z0-9._-]*$")
_EFFORT_FAMILY = re.compile(r"^gemini-", re.IGNORECASE)
_LEVELS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}

#: Used when ``agy models`` cannot be asked and nothing is cached.
FALLBACK_MODELS: tuple[ModelInfo, ...] = (
    ModelInfo(id="gemini-3.7-flash", name="Gemini 3.7 Flash", efforts=["low", "medium", "high"]),
    ModelInfo(id="gemini-3.1-pro", name="Gemini 3.1 Pro", efforts=["low", "high"]),
    ModelInfo(id="claude-sonnet-4-6", name="Claude Sonnet 4.6 (Thinking)"),
)


class ModelsError(Exception):
    """``agy models`` did not produce a catalog; the message says why."""


class CachedCatalog(msgspec.Struct, kw_only=True):
    raw: str
    saved_at: float


# ---------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------


def split_tier(slug: str) -> tuple[str, str | None]:
    """``gemini-3.8-flash-high`` -> (``gemini-3.8-flash``, ``high``)."""
    for tier in TIERS:
        if slug.endswith(f"-{tier}"):
            return slug[: -len(tier) - 1], tier
    return slug, None


def _row(line: str) -> tuple[str, str] | None:
    text = line.strip()
    if not text:
        return None
    if "\t" in text:
        slug, _, name = text.partition("\t")
    else:
        parts = re.split(r"\s{2,}", text, maxsplit=1)
        slug, name = parts[0], parts[1] if len(parts) > 1 else ""
        if " " in slug:
            slug, _, rest = slug.partition(" ")
            name = f"{rest} {name}".strip()
    slug = slug.strip()
    return (slug, name.strip()) if _SLUG.match(slug) else None


def _base_name(name: str) -> str:
    return re.sub(r"\s*\((?:High|Medium|Low)\)\s*$", "", name, flags=re.IGNORECASE)


def parse_catalog(raw: str) -> list[ModelInfo]:
    """Rows -> entries in first-seen order; banners and other lines are skipped."""
    rows = [row for row in (_row(line) for line in raw.split("\n")) if row is not None]
    tiers: dict[str, list[str]] = {}
    for slug, _name in rows:
        base, tier = split_tier(slug)
        if tier is not None and _EFFORT_FAMILY.match(base):
            tiers.setdefault(base, []).append(tier)
    out: list[ModelInfo] = []
    grouped: set[str] = set()
    for slug, name in rows:
        base, tier = split_tier(slug)
        if tier is not None and len(set(tiers.get(base, []))) >= 2:
            if base in grouped:
                continue
            grouped.add(base)
            efforts = [t for t in TIERS if t in tiers[base]]
            out.append(ModelInfo(id=base, name=_base_name(name), efforts=efforts))
        elif not any(m.id == slug for m in out):
            out.append(ModelInfo(id=slug, name=name))
    return out


# ---------------------------------------------------------------------------
# effort
# ---------------------------------------------------------------------------


def level_to_tier(level: str) -> str:
    """The host's reasoning level as an agy tier; ``ValueError`` if unknown."""
    tier = _LEVELS.get(level.strip().lower())
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
    """``(--effort value or None, a notice for the user or None)``."""
    level = level or None
    if not model:
        note = f"no model is selected, so effort {level!r} is not passed to agy" if level else None
        return None, note
    _base, tier = split_tier(model)
    if tier is not None:
        if level is not None and _LEVELS.get(level.lower()) != tier:
            return None, f"model {model} already selects the {tier} effort; effort {level!r} is not passed"
        return None, None
    entry = next((m for m in catalog if m.id == model), None)
    if entry is not None and entry.efforts:
        efforts = list(entry.efforts)
    elif entry is None and _SLUG.match(model) and _EFFORT_FAMILY.match(model):
        efforts = family_tiers(model)
    else:
        note = f"model {model} has a fixed thinking budget; effort {level!r} is not passed" if level else None
        return None, note
    try:
        chosen = pick_effort(level, efforts)
    except ValueError as exc:
        return efforts[0], f"{exc}; using {efforts[0]}"
    if level is not None and chosen != _LEVELS.get(level.lower()):
        return chosen, f"model {model} has no {level} effort (it has {', '.join(efforts)}); using {chosen}"
    return chosen, None


# ---------------------------------------------------------------------------
# discovery and cache
# ---------------------------------------------------------------------------


async def discover(command: str, env: Mapping[str, str], timeout_s: float) -> str:
    """``agy models`` (stdout only, stdin closed), killed after ``timeout_s``."""

    async def kill(proc: trio.Process) -> None:
        proc.kill()

    with trio.move_on_after(timeout_s) as watchdog:
        try:
            proc = await trio.run_process(
                [command, "models"],
                stdin=b"",
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                env=dict(env),
                deliver_cancel=kill,
            )
        except OSError as exc:
            raise ModelsError(f"could not run {command!r}: {exc}") from exc
    if watchdog.cancelled_caught:
        raise ModelsError(f"`{command} models` did not answer within {timeout_s:g}s")
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ModelsError(f"`{command} models` exited with status {proc.returncode}" + (f": {err[0]}" if err else ""))
    raw = proc.stdout.decode("utf-8", "replace")
    if not parse_catalog(raw):
        raise ModelsError(f"`{command} models` listed no models")
    return raw


def read_cache(path: Path, warn: Callable[[str], None]) -> CachedCatalog | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        warn(f"stream-json: cannot read the model cache {path}: {exc}")
        return None
    try:
        return msgspec.json.decode(data, type=CachedCatalog)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        try:
            moved = fsutil.quarantine(path)
        except OSError:
            moved = path
        warn(f"stream-json: the model cache {path} is unreadable ({exc}); moved it to {moved}")
        return None


def write_cache(path: Path, raw: str, now: float | None = None) -> None:
    entry = CachedCatalog(raw=raw, saved_at=time.time() if now is None else now)
    fsutil.write_atomic(path, msgspec.json.encode(entry))


__all__ = [
    "CACHE_FILE",
    "FALLBACK_MODELS",
    "TIERS",
    "CachedCatalog",
    "ModelsError",
    "discover",
    "family_tiers",
    "level_to_tier",
    "parse_catalog",
    "pick_effort",
    "read_cache",
    "resolve_effort",
    "split_tier",
    "write_cache",
]
