"""The cumulative-resend guard."""

from __future__ import annotations

from agy_host.engine.textguard import FLIP_THRESHOLD, FLIP_WINDOW, CumulativeGuard


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


def test_a_guard_that_keeps_no_text_drops_it_past_the_window_and_stops_flipping() -> None:
    """The ACP engine's guard: the host keeps the deltas, so a long answer is
    not held a second time; past the window nothing can flip it any more."""
    g = CumulativeGuard(keep_text=False)
    head = "a" * (FLIP_WINDOW - 1)
    assert g.feed(head) == head and g.complete and g.text == head
    assert g.feed_many(["b", "c"]) == "bc"
    assert not g.complete and g.text == ""
    resend = head + "bc" + "d" * 10
    assert g.feed(resend) == resend, "no flip once the text is no longer kept"
    assert g.feed_many(["x" * 200_000]) == "x" * 200_000
    assert not g.cumulative and g.flips == 0


def test_a_guard_that_keeps_no_text_still_catches_a_resending_agent() -> None:
    base = "x" * FLIP_THRESHOLD
    g = CumulativeGuard(keep_text=False)
    out = [g.feed(c) for c in [base, base + "ab", base + "abcd"]]
    assert out == [base, "ab", "cd"] and g.cumulative and g.complete
    assert g.text == base + "abcd"


def test_in_cumulative_mode_the_text_is_the_agents_last_chunk() -> None:
    """A resend is kept as the agent sent it, not joined from the previous
    text and the delta (a copy of the whole answer per chunk)."""
    base = "z" * FLIP_THRESHOLD
    g = CumulativeGuard()
    g.feed(base)
    last = base + "abc"
    g.feed(base + "a")
    g.feed(last)
    assert g.text is last
