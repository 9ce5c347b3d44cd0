import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki.ranking import (
    LENGTH_BOUNDS,
    PAGE_SHARE,
    dbsf,
    densest_start,
    length_weight,
    min_max,
    page_fusion,
    rollup,
    rrf,
    score_fusion,
    snippet,
)


def test_rrf_rewards_agreement():
    fused = dict(rrf([[(1, 9.0), (2, 5.0)], [(2, 0.9), (3, 0.8)]], k=60))
    assert fused[2] > fused[1] > fused[3] > 0
    assert abs(fused[2] - (1 / 62 + 1 / 61)) < 1e-12


def test_score_fusion_normalizes_each_list():
    fused = score_fusion([[(1, 10.0), (2, 0.0)], [(2, 0.5), (1, 0.3)]])
    assert dict(fused) == {1: 0.5, 2: 0.5}
    assert score_fusion([[(7, 3.0)]]) == [(7, 1.0)]


def test_dbsf_places_scores_between_mean_minus_and_plus_three_deviations():
    std = math.sqrt(2 / 3)
    expected = {cid: (s - (2 - 3 * std)) / (6 * std) for cid, s in [(1, 1.0), (2, 2.0), (3, 3.0)]}
    got = dict(dbsf([(1, 1.0), (2, 2.0), (3, 3.0)]))
    assert got.keys() == expected.keys() and all(math.isclose(got[c], expected[c]) for c in got)
    assert got[2] == 0.5 and 0 < got[1] < got[3] < 1
    assert dbsf([(5, 0.4), (6, 0.4)]) == [(5, 1.0), (6, 1.0)] and dbsf([]) == []
    # A score below mean − 3 deviations counts as 0, as an absent chunk does, never below it.
    outlier = dbsf([(i, 10.0) for i in range(20)] + [(99, -1000.0)])
    assert dict(outlier)[99] == 0.0 and all(n > 0 for cid, n in outlier if cid != 99)


def test_score_fusion_by_default_keeps_a_ranked_chunk_above_an_absent_one():
    lexical = [(1, 3.0), (2, 2.0), (3, 1.0)]  # chunk 3: ranked last lexically
    dense = [(4, 0.6), (5, 0.6)]
    fused = dict(score_fusion([lexical, dense]))
    assert fused[3] > 0  # min-max would give the list's last chunk the 0 of a chunk it never ranked
    assert dict(score_fusion([lexical, dense], normalize=min_max))[3] == 0.0
    assert fused[1] > fused[2] > fused[3] and fused[4] == fused[5] == 0.5


def test_rollup_groups_chunks_per_page_best_first():
    ranked = [(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6), (5, 0.5)]
    page_of = {1: "a.md", 2: "b.md", 3: "a.md", 4: "a.md", 5: "c.md"}
    hits = rollup(ranked, page_of, top_files=2, chunks_per_file=2, limit=10)
    assert [(h.path, h.score, [c for c, _ in h.chunks]) for h in hits] == [("a.md", 0.9, [1, 3]), ("b.md", 0.8, [2])]


def test_rollup_limit_caps_chunks_in_all():
    ranked = [(1, 0.9), (2, 0.8), (3, 0.7)]
    hits = rollup(ranked, {1: "a", 2: "a", 3: "b"}, top_files=5, chunks_per_file=5, limit=2)
    assert [h.path for h in hits] == ["a"] and len(hits[0].chunks) == 2


def test_snippet_windows_on_query_terms():
    text = "alpha " * 100 + "the signing key is rotated here " + "omega " * 100
    s = snippet(text, {"signing", "key"}, 60)
    assert "signing key" in s and s.startswith("…") and s.endswith("…") and len(s) <= 62
    assert snippet("short text", {"x"}, 60) == "short text"


def _densest_start_by_counting(positions: list[int], width: int) -> int:
    """`densest_start` as it was first written, counting every position of every window: the bisect's oracle."""
    best_start, best_count = 0, -1
    for i, start in enumerate(positions):
        count = sum(1 for p in positions[i:] if p < start + width)
        if count > best_count:
            best_start, best_count = start, count
    return best_start


@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(st.sampled_from(["key", "keys", "sign", "a", "Rotate", "x" * 30, " ", "\n\t"]), max_size=120),
    terms=st.sets(st.sampled_from(["key", "sign", "rotate", "ke", ""]), max_size=3),
    max_chars=st.integers(min_value=1, max_value=120),
)
def test_snippet_is_the_window_counting_every_term_would_choose(words, terms, max_chars):
    lowered = " ".join(words).lower()
    positions = sorted(m.start() for t in terms if t for m in re.finditer(re.escape(t), lowered))
    assert densest_start(positions, max_chars) == _densest_start_by_counting(positions, max_chars)


def test_rollup_second_chunk_favours_the_page_several_chunks_match():
    ranked = [(1, 1.0), (2, 0.9), (3, 0.8), (4, 0.1), (5, 0.1), (6, 0.1), (7, 0.1)]
    page_of = {1: "mentions.md", 2: "explains.md", 3: "explains.md", 4: "long.md", 5: "long.md", 6: "long.md"}
    page_of[7] = "long.md"
    plain = rollup(ranked, page_of, top_files=3, chunks_per_file=1, limit=10)
    assert [h.path for h in plain] == ["mentions.md", "explains.md", "long.md"]
    boosted = rollup(ranked, page_of, top_files=3, chunks_per_file=1, limit=10, second=0.5)
    assert [h.path for h in boosted] == ["explains.md", "mentions.md", "long.md"]
    assert boosted[0].score == 0.9 + 0.5 / 2**0.5 * 0.8 and boosted[1].score == 1.0
    assert boosted[2].score == 0.1 + 0.5 / 2 * 0.1  # four faint chunks: the root keeps length from winning


def test_page_fusion_adds_up_evidence_that_different_chunks_of_a_page_hold():
    lexical = [(1, 8.0), (3, 6.0), (4, 0.0)]  # chunk 1: the page's words
    dense = [(2, 0.9), (3, 0.8), (4, 0.5)]  # chunk 2, same page: its meaning
    page_of = {1: "explains.md", 2: "explains.md", 3: "mentions.md", 4: "other.md"}
    chunks = score_fusion([lexical, dense], normalize=min_max)  # the figures below are min-max's
    assert chunks[0][0] == 3  # chunk by chunk, the page that is second in both lists wins
    pages = page_fusion([lexical, dense], page_of, normalize=min_max)
    assert pages == {"explains.md": 1.0, "mentions.md": 0.5 * 0.75 + 0.5 * 0.75, "other.md": 0.0}
    hits = rollup(chunks, page_of, top_files=3, chunks_per_file=2, limit=10, page_scores=pages)
    assert [h.path for h in hits] == ["explains.md", "mentions.md", "other.md"]
    best_chunk = dict(chunks)[1]
    assert hits[0].score == (1 - PAGE_SHARE) * best_chunk + PAGE_SHARE * 1.0
    assert [c for c, _ in hits[0].chunks] == [1, 2]  # the chunks keep their own order within the page
    # Without page scores the order is the chunks' own.
    assert [h.path for h in rollup(chunks, page_of, top_files=3, chunks_per_file=1, limit=10)][0] == "mentions.md"


def test_the_lexical_weight_is_even_at_100_terms_a_chunk_and_bounded():
    assert length_weight(100) == pytest.approx(0.5)
    assert length_weight(1000) == pytest.approx(0.65)  # 0.75 by the slope, held at the bound
    assert length_weight(10) == pytest.approx(0.35)
    assert length_weight(0) == LENGTH_BOUNDS[0]  # a corpus without chunks
    assert 0.5 < length_weight(150) < length_weight(300) < 0.65


@given(st.floats(min_value=0, max_value=1e9, allow_nan=False))
def test_the_lexical_weight_stays_within_its_bounds(mean_terms):
    assert LENGTH_BOUNDS[0] <= length_weight(mean_terms) <= LENGTH_BOUNDS[1]
