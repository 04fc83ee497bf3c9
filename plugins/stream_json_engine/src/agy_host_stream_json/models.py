"""The model catalog (``agy models``) and the effort a model gets.

``agy models`` prints ``modelId<TAB>display name`` rows, with the effort in
the id (``gemini-3.8-flash-high``); :mod:`agy_host.engine.model_tiers` folds them
into families with ``efforts`` exactly as the ACP engine does (fixed-thinking
models never get ``--effort``: agy rejects it for them).

The raw output is cached in the state dir (atomic write, TTL), because asking
agy costs a process start; agy is asked under a watchdog, and when it cannot
answer the catalog falls back to a short built-in list that doctor marks as
*fallback*. A cache file that does not parse is moved aside and reported.

The effort of a turn comes from the host's reasoning level
(:func:`agy_host.engine.model_tiers.resolve_effort`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import msgspec
import trio

from agy_host import fsutil
from agy_host.engine.base import ModelInfo
from agy_host.engine.model_tiers import SLUG, fold_tiers

CACHE_FILE = "agy-models-cache.json"

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
    return (slug, name.strip()) if SLUG.match(slug) else None


def parse_catalog(raw: str) -> list[ModelInfo]:
    """Rows -> entries in first-seen order; banners and other lines are skipped."""
    return fold_tiers(row for row in (_row(line) for line in raw.split("\n")) if row is not None)


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
    except (msgspec.DecodeError, RecursionError) as exc:
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
    "CachedCatalog",
    "ModelsError",
    "discover",
    "parse_catalog",
    "read_cache",
    "write_cache",
]
