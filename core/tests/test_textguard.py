"""The cumulative-resend guard."""

from __future__ import annotations

from agy_host.engine.textguard import FLIP_THRESHOLD, CumulativeGuard


def feed_all(chunks: list[str]) -> tuple[list[str], str]:
    g = CumulativeGuard()
    out = [g.feed(c) for c in chunks]
    return out, g.text


def test_deltas_pass_through() -> None:
    out, text = feed_all(["HE", "LLO", " world"])
    assert out == ["HE", "LLO", " world"]
    assert text == "HELLO world"


def test_cumulative_resend_flips_after_threshold_and_emits_suffix_only() -> None:
    base = "x" * FLIP_THRESHOLD
    out, text = feed_all([base, base + "ab", base + "abcd", base + "ab"])
    assert out == [base, "ab", "cd", ""]
    assert text == base + "abcd"


def test_short_answers_never_misflip() -> None:
    out, text = feed_all(["a", "a cat", " sat"])
    assert out == ["a", "a cat", " sat"]
    assert text == "aa cat sat"


def test_mid_token_splits_never_flip() -> None:
    chunks = ["\n39\n40\n4", "1\n42\n43", "\n44" * 20]
    out, text = feed_all(chunks)
    assert out == chunks
    assert text == "".join(chunks)


def test_contradicting_evidence_falls_back_to_append() -> None:
    base = "y" * FLIP_THRESHOLD
    g = CumulativeGuard()
    g.feed(base)
    assert g.feed(base + "1") == "1"
    assert g.cumulative
    assert g.feed("new text") == "new text"
    assert not g.cumulative
    assert g.text == base + "1new text"


def test_many_chunks_join_once() -> None:
    g = CumulativeGuard()
    for _ in range(10000):
        g.feed("abc")
    assert len(g.text) == 30000
