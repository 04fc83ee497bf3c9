"""The model catalog and effort mapping: parsing, tiers, the cache and the
fallback (``agy models`` from the fake agy, a real subprocess)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agy_host_stream_json.models import (
    CACHE_FILE,
    FALLBACK_MODELS,
    parse_catalog,
    read_cache,
    write_cache,
)

from ._support import make_engine

RAW = """gemini-3.8-flash-high\tGemini 3.8 Flash (High)
gemini-3.8-flash-medium\tGemini 3.8 Flash (Medium)
gemini-3.8-flash-low\tGemini 3.8 Flash (Low)
gemini-3.1-pro-high\tGemini 3.1 Pro (High)
gemini-3.1-pro-low\tGemini 3.1 Pro (Low)
claude-sonnet-4-6\tClaude Sonnet 4.6 (Thinking)
gpt-oss-120b-medium\tGPT-OSS 120B (Medium)
"""


def test_rows_group_gemini_tiers_and_keep_fixed_models_as_listed() -> None:
    models = parse_catalog("Fetching models…\nAvailable\n-flag\n" + RAW)
    assert [(m.id, m.name, m.efforts) for m in models] == [
        ("gemini-3.8-flash", "Gemini 3.8 Flash", ["low", "medium", "high"]),
        ("gemini-3.1-pro", "Gemini 3.1 Pro", ["low", "high"]),
        ("claude-sonnet-4-6", "Claude Sonnet 4.6 (Thinking)", []),
        ("gpt-oss-120b-medium", "GPT-OSS 120B (Medium)", []),
    ]


def test_space_separated_columns_parse_too() -> None:
    models = parse_catalog(
        "gemini-3.6-flash-high     Gemini 3.6 Flash (High)\ngemini-3.6-flash-low  Gemini 3.6 Flash (Low)\n"
    )
    assert [(m.id, m.efforts) for m in models] == [("gemini-3.6-flash", ["low", "high"])]


def test_cache_round_trip_and_a_corrupt_cache_is_kept_aside(tmp_path: Path) -> None:
    path = tmp_path / CACHE_FILE
    write_cache(path, RAW, now=123.0)
    cached = read_cache(path, lambda _m: None)
    assert cached is not None and cached.raw == RAW and cached.saved_at == 123.0
    assert path.stat().st_mode & 0o777 == 0o600
    path.write_text("{not json")
    warned: list[str] = []
    assert read_cache(path, warned.append) is None
    assert not path.exists() and len(list(tmp_path.glob(f"{CACHE_FILE}.corrupt-*"))) == 1
    assert warned and "moved it to" in warned[0]


async def test_list_models_asks_agy_then_serves_the_cache(tmp_path: Path, fake_agy: Callable[..., Any]) -> None:
    fake = fake_agy("happy")
    engine = make_engine(tmp_path, fake.env)
    catalog = await engine.list_models()
    assert catalog.source == "agent" and catalog.models[0].id == "gemini-3.8-flash"
    assert fake.argvs() == [["models"]]
    again = await engine.list_models()
    assert again.source == "cache" and again.models == catalog.models and len(fake.argvs()) == 1
    assert engine.catalog_models() == catalog.models


async def test_a_stale_cache_is_refreshed(tmp_path: Path, fake_agy: Callable[..., Any]) -> None:
    fake = fake_agy("happy", models=[["gemini-4-flash-low", "L"], ["gemini-4-flash-high", "H"]])
    engine = make_engine(tmp_path, fake.env, section={"models_cache_ttl_seconds": 60})
    write_cache(tmp_path / "state" / CACHE_FILE, RAW, now=time.time() - 120)
    catalog = await engine.list_models()
    assert catalog.source == "agent" and [m.id for m in catalog.models] == ["gemini-4-flash"]
    saved = json.loads((tmp_path / "state" / CACHE_FILE).read_text())
    assert "gemini-4-flash-low" in saved["raw"]


@pytest.mark.parametrize(
    ("mode", "watchdog", "why"), [("fail", 30.0, "exited with status 1"), ("hang", 0.5, "did not answer within 0.5s")]
)
async def test_fallback_when_agy_cannot_answer(
    tmp_path: Path, fake_agy: Callable[..., Any], mode: str, watchdog: float, why: str
) -> None:
    fake = fake_agy("happy", models_mode=mode)
    engine = make_engine(tmp_path, fake.env, section={"models_timeout_seconds": watchdog})
    catalog = await engine.list_models()
    assert catalog.source == "fallback" and catalog.models == list(FALLBACK_MODELS)
    assert engine.models_error is not None and why in engine.models_error


async def test_a_stale_cache_beats_the_fallback(tmp_path: Path, fake_agy: Callable[..., Any]) -> None:
    fake = fake_agy("happy", models_mode="fail")
    engine = make_engine(tmp_path, fake.env, section={"models_cache_ttl_seconds": 1})
    write_cache(tmp_path / "state" / CACHE_FILE, RAW, now=time.time() - 120)
    catalog = await engine.list_models()
    assert catalog.source == "cache" and catalog.models[0].id == "gemini-3.8-flash"
