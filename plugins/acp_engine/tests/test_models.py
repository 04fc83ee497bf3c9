"""The ACP model catalog: Antigravity's tier slugs fold into families with
``efforts`` (the same catalog the stream-json engine shows), and a family
plus an effort selects the right slug; other agents' ids stay as they are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from agy_host.contract.events import NoticeActivity
from agy_host.testing.contract import collect, outcome_of
from agy_host_acp import models
from agy_host_acp import schema as s

from .test_driver import Fake, driver_for, make_engine, req

SLUGS = [
    ("gemini-3.8-flash-high", "Gemini 3.8 Flash (High)"),
    ("gemini-3.8-flash-low", "Gemini 3.8 Flash (Low)"),
    ("gemini-3.1-pro-high", "Gemini 3.1 Pro (High)"),
    ("gemini-3.1-pro-low", "Gemini 3.1 Pro (Low)"),
    ("claude-sonnet-4-6", "Claude Sonnet 4.6 (Thinking)"),
]


def as_option(current: str) -> dict[str, Any]:
    return {
        "id": "model",
        "name": "Model",
        "type": "select",
        "currentValue": current,
        "options": [{"value": v, "name": n} for v, n in SLUGS],
    }


def setup_from(**wire: Any) -> s.SessionSetup:
    return msgspec.convert({"sessionId": "x", **wire}, s.SessionSetup)


def test_antigravity_tiers_fold_from_the_config_option() -> None:
    catalog = models.catalog(setup_from(configOptions=[as_option("gemini-3.1-pro-low")]), antigravity=True)
    assert [(m.id, m.efforts, m.current) for m in catalog.models] == [
        ("gemini-3.8-flash", ["low", "high"], False),
        ("gemini-3.1-pro", ["low", "high"], True),
        ("claude-sonnet-4-6", [], False),
    ]
    assert catalog.current == "gemini-3.1-pro-low", "the agent's own current id is kept as it said it"


def test_the_models_field_is_read_when_there_is_no_config_option() -> None:
    field = {"availableModels": [{"modelId": v, "name": n} for v, n in SLUGS], "currentModelId": "claude-sonnet-4-6"}
    catalog = models.catalog(setup_from(models=field), antigravity=True)
    assert [m.id for m in catalog.models] == ["gemini-3.8-flash", "gemini-3.1-pro", "claude-sonnet-4-6"]
    assert [m.id for m in catalog.models if m.current] == ["claude-sonnet-4-6"]


def test_other_agents_ids_are_never_folded() -> None:
    catalog = models.catalog(setup_from(configOptions=[as_option("gemini-3.8-flash-low")]), antigravity=False)
    assert [m.id for m in catalog.models] == [v for v, _ in SLUGS]
    assert all(not m.efforts for m in catalog.models)
    assert models.catalog(None, antigravity=True).models == []


def test_a_family_and_an_effort_select_a_slug() -> None:
    offered = models.catalog(setup_from(configOptions=[as_option("gemini-3.8-flash-low")]), antigravity=True).models
    assert models.antigravity_slug("gemini-3.8-flash", "high", offered) == ("gemini-3.8-flash-high", None)
    assert models.antigravity_slug("gemini-3.8-flash", None, offered) == ("gemini-3.8-flash-low", None)
    assert models.antigravity_slug("gemini-3.8-flash-high", None, offered) == ("gemini-3.8-flash-high", None)
    slug, note = models.antigravity_slug("gemini-3.1-pro", "medium", offered)
    assert slug == "gemini-3.1-pro-high" and note is not None and "no medium effort" in note
    slug, note = models.antigravity_slug("claude-sonnet-4-6", "low", offered)
    assert slug == "claude-sonnet-4-6" and note is not None and "fixed thinking budget" in note


async def test_antigravity_lists_families_and_a_missing_tier_is_said(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "happy", config_options=[as_option("gemini-3.8-flash-low")])
    engine = make_engine(tmp_path, None, env=fake.as_agy(tmp_path))
    listed = await engine.list_models()
    assert [(m.id, m.efforts) for m in listed.models][:2] == [
        ("gemini-3.8-flash", ["low", "high"]),
        ("gemini-3.1-pro", ["low", "high"]),
    ]
    async with driver_for(engine) as drv:
        acts = await collect(await drv.run(req(model="gemini-3.1-pro", effort="medium")))
    assert outcome_of(acts).status == "ok"
    sets = [m["params"]["value"] for m in fake.of("session/set_config_option") if m["params"]["configId"] == "model"]
    assert sets == ["gemini-3.1-pro-high"]
    notes = [a.message for a in acts if isinstance(a, NoticeActivity)]
    assert any("no medium effort" in n for n in notes), notes


async def test_another_agents_catalog_is_listed_as_it_is(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "happy", config_options=[as_option("gemini-3.8-flash-low")])
    engine = make_engine(tmp_path, fake.command_line)
    listed = await engine.list_models()
    assert [m.id for m in listed.models] == [v for v, _ in SLUGS]
