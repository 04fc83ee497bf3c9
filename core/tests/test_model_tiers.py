"""Antigravity's tiered model ids, folded and resolved once for both engines:
the same rows give the same catalog, the same level gives the same tier."""

from __future__ import annotations

import pytest

from agy_host.engine.model_tiers import fold_tiers, pick_effort, resolve_effort, split_tier

ROWS = [
    ("gemini-3.8-flash-high", "Gemini 3.8 Flash (High)"),
    ("gemini-3.8-flash-medium", "Gemini 3.8 Flash (Medium)"),
    ("gemini-3.8-flash-low", "Gemini 3.8 Flash (Low)"),
    ("gemini-3.1-pro-high", "Gemini 3.1 Pro (High)"),
    ("gemini-3.1-pro-low", "Gemini 3.1 Pro (Low)"),
    ("claude-sonnet-4-6", "Claude Sonnet 4.6 (Thinking)"),
    ("gpt-oss-120b-medium", "GPT-OSS 120B (Medium)"),
    ("gemini-2.5-solo-high", "A Gemini listed at one tier only"),
]


def test_gemini_families_fold_and_everything_else_stays_as_listed() -> None:
    models = fold_tiers(ROWS, current="gemini-3.1-pro-low")
    assert [(m.id, m.name, m.efforts, m.current) for m in models] == [
        ("gemini-3.8-flash", "Gemini 3.8 Flash", ["low", "medium", "high"], False),
        ("gemini-3.1-pro", "Gemini 3.1 Pro", ["low", "high"], True),
        ("claude-sonnet-4-6", "Claude Sonnet 4.6 (Thinking)", [], False),
        ("gpt-oss-120b-medium", "GPT-OSS 120B (Medium)", [], False),  # not a Gemini family
        ("gemini-2.5-solo-high", "A Gemini listed at one tier only", [], False),
    ]
    assert [m.current for m in fold_tiers(ROWS, current="claude-sonnet-4-6")].count(True) == 1
    assert split_tier("gemini-3.8-flash-medium") == ("gemini-3.8-flash", "medium")
    assert split_tier("claude-sonnet-4-6") == ("claude-sonnet-4-6", None)


@pytest.mark.parametrize(
    ("level", "efforts", "expected"),
    [
        ("medium", ["low", "high"], "high"),  # Pro has no medium: up first
        (None, ["low", "medium", "high"], "low"),
        (None, ["low", "high"], "low"),
        ("minimal", ["low", "medium", "high"], "low"),
        ("xhigh", ["low", "medium", "high"], "high"),
        ("high", ["low", "medium"], "medium"),  # then down
        ("max", ["medium"], "medium"),
    ],
)
def test_effort_search_up_then_down(level: str | None, efforts: list[str], expected: str) -> None:
    assert pick_effort(level, efforts) == expected


def test_resolve_effort_per_model_family() -> None:
    catalog = fold_tiers(ROWS)
    assert resolve_effort("gemini-3.8-flash", "medium", catalog) == ("medium", None)
    assert resolve_effort("gemini-3.8-flash", None, catalog) == ("low", None)
    effort, note = resolve_effort("gemini-3.1-pro", "medium", catalog)
    assert effort == "high" and note is not None and "no medium effort" in note
    effort, note = resolve_effort("claude-sonnet-4-6", "high", catalog)
    assert effort is None and note is not None and "fixed thinking budget" in note
    assert resolve_effort("claude-sonnet-4-6", None, catalog) == (None, None)
    assert resolve_effort("gemini-3.9-flash", "high", []) == ("high", None)  # not listed: by family
    assert resolve_effort("gemini-3.9-pro", "medium", [])[0] == "high"
    assert resolve_effort("Gemini 3.7 Flash (Low)", None, catalog) == (None, None)
    effort, note = resolve_effort("gemini-3.8-flash", "turbo", catalog)
    assert effort == "low" and note is not None and "unknown effort 'turbo'" in note
    effort, note = resolve_effort(None, "high", catalog)
    assert effort is None and note is not None
