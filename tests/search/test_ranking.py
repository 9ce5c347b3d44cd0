import heapq
import math
import re
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki.agent_hooks.lookup import Lookup
from gitwiki.config import SearchConfig
from gitwiki.index.store import Store
from gitwiki.memory import search as memory_search
from gitwiki.memory.base import Memory
from gitwiki.search.lance_index import LanceReader
from gitwiki.search.ranking import (
    PAGE_SHARE,
    RECENCY_DAYS,
    SECOND_CHUNK,
    Candidates,
    PageHit,
    Weighting,
    best_of,
    dbsf,
    densest_start,
    fuse,
    fuse_pages,
    memory_score,
    min_max,
    page_fusion,
    rank_pages,
    recency,
    relative,
    rollup,
    rrf,
    score_fusion,
    snippet,
    snippet_window,
)
from gitwiki.search.searcher import Searcher, SearchOptions
from gitwiki.wiki import Wiki

LEXICAL_CONFIG = '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n'


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


def _snippet_by_regex(text: str, terms: set[str], max_chars: int) -> str:
    """`snippet` with each term's positions found by a regex of it, as it was written first: the oracle of its
    `find` loop (the window around the positions is `snippet_window` in both)."""
    flat = re.sub(r"\s+", " ", text).strip()
    if len(flat) <= max_chars:
        return flat
    lowered = flat.lower()
    positions = sorted(m.start() for t in terms if t for m in re.finditer(re.escape(t), lowered))
    return snippet_window(flat, positions, max_chars)


@settings(max_examples=400, deadline=None)
@given(
    words=st.lists(
        st.sampled_from(["aa", "aaa", "key", "Keys", "a.b", "(x)", "İi", "sign", " ", "\n\t", "ß", "x" * 30]),
        max_size=120,
    ),
    terms=st.sets(st.sampled_from(["aa", "a", "key", "a.b", "(x)", "i̇", "ß", "", "sign"]), max_size=4),
    max_chars=st.integers(min_value=1, max_value=120),
)
def test_snippet_finds_each_term_as_a_regex_of_it_would(words, terms, max_chars):
    text = "".join(words)
    assert snippet(text, terms, max_chars) == _snippet_by_regex(text, terms, max_chars)


def _dbsf_with_max(ranking: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """`dbsf` as it was first written (`max(0.0, x)`, a generator for the squares): its oracle."""
    if not ranking:
        return []
    scores = [s for _, s in ranking]
    mean = sum(scores) / len(scores)
    spread = 6 * math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    low = mean - spread / 2
    return [(cid, max(0.0, (s - low) / spread) if spread > 0 else 1.0) for cid, s in ranking]


def _rollup_by_key(ranked, page_of, top_files, chunks_per_file, limit, second=0.0, page_scores=None, page_share=0.5):
    """`rollup` as it was first written (grouped with setdefault, pages picked with a key function): its oracle."""
    grouped: dict[str, list[tuple[int, float]]] = {}
    for cid, score in ranked:
        path = page_of.get(cid)
        if path is not None:
            grouped.setdefault(path, []).append((cid, score))
    base = {path: chunks[0][1] for path, chunks in grouped.items()}
    if page_scores is not None:
        base = {path: (1 - page_share) * b + page_share * page_scores.get(path, b) for path, b in base.items()}
    scored = {
        path: base[path] + (second / math.sqrt(len(chunks)) * chunks[1][1] if len(chunks) > 1 else 0.0)
        for path, chunks in grouped.items()
    }
    pages = heapq.nsmallest(top_files, grouped.items(), key=lambda kv: (-scored[kv[0]], kv[0]))
    hits, budget = [], limit
    for path, chunks in pages:
        if budget <= 0:
            break
        kept = chunks[: min(chunks_per_file, budget)]
        budget -= len(kept)
        hits.append(PageHit(path, scored[path], kept))
    return hits


_scores = st.one_of(st.floats(-50, 50, allow_nan=False), st.sampled_from([0.0, -0.0, 1.0, 2.5]))


@settings(max_examples=300, deadline=None)
@given(
    ranking=st.lists(st.tuples(st.integers(0, 60), _scores), max_size=80, unique_by=lambda c: c[0]),
    pages=st.dictionaries(st.integers(0, 70), st.sampled_from(["a.md", "b.md", "c.md", "d/e.md", "f.md"])),
    top_files=st.integers(1, 6),
    chunks_per_file=st.integers(1, 4),
    limit=st.integers(1, 12),
    second=st.sampled_from([0.0, 0.5]),
    share=st.sampled_from([None, 0.0, 0.3, 1.0]),
)
def test_dbsf_and_rollup_give_what_they_were_first_written_to_give(
    ranking, pages, top_files, chunks_per_file, limit, second, share
):
    assert dbsf(ranking) == _dbsf_with_max(ranking)
    ranked = sorted(ranking, key=lambda c: (-c[1], c[0]))
    page_scores = None if share is None else {page: i / 7 for i, page in enumerate(sorted(set(pages.values())))}
    args = (ranked, pages, top_files, chunks_per_file, limit, second, page_scores, share or 0.0)
    assert rollup(*args) == _rollup_by_key(*args)


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


_rankings = st.lists(
    st.lists(st.tuples(st.integers(0, 30), st.floats(-50, 50, allow_nan=False)), max_size=12, unique_by=lambda t: t[0]),
    min_size=1,
    max_size=2,
).map(lambda rs: [sorted(r, key=lambda t: -t[1]) for r in rs])


@given(rankings=_rankings)
@settings(max_examples=200, deadline=None)
def test_the_default_weighting_is_even_dbsf_score_fusion(rankings):
    page_of = {cid: f"p{cid % 4}" for r in rankings for cid, _ in r}
    default = Weighting()
    expected = rankings[0] if len(rankings) == 1 else score_fusion(rankings)
    assert fuse(rankings, "score", default) == expected
    assert page_fusion(rankings, page_of, default.weights(rankings), default.normalizer) == page_fusion(
        rankings, page_of
    )
    assert fuse(rankings, "rrf", Weighting(0.9, "minmax", 0.1)) == (
        rankings[0] if len(rankings) == 1 else rrf(rankings)
    )


def test_weighting_weighs_lexical_against_dense_and_picks_the_normalization():
    lexical, dense = [(1, 9.0), (2, 1.0)], [(2, 0.9), (1, 0.1)]
    assert fuse([lexical, dense], "score", Weighting(1.0, "minmax"))[0][0] == 1
    assert fuse([lexical, dense], "score", Weighting(0.0, "minmax"))[0][0] == 2
    assert dict(fuse([lexical, dense], "score", Weighting(0.5, "minmax"))) == {1: 0.5, 2: 0.5}
    ranked, page_of = [(1, 0.8), (2, 0.6)], {1: "a", 2: "b"}
    whole_page = rollup(ranked, page_of, 2, 1, 10, page_scores={"a": 0.0, "b": 1.0}, page_share=1.0)
    assert [h.path for h in whole_page] == ["b", "a"]
    assert [h.path for h in rollup(ranked, page_of, 2, 1, 10, page_scores={"a": 0.0, "b": 1.0}, page_share=0.0)] == [
        "a",
        "b",
    ]


# ---- the one pipeline: every source's candidates through rank_pages --------------------------------------------


def _candidates(rankings: dict[str, list[tuple[int, float]]], page_of: dict[int, str], mode: str) -> Candidates:
    return Candidates(rankings, page_of, mode)


def test_rank_pages_is_fusion_page_fusion_and_rollup_of_the_candidates():
    lexical = [(1, 8.0), (3, 6.0), (4, 0.5)]
    dense = [(2, 0.9), (3, 0.8), (4, 0.5)]
    page_of = {1: "explains.md", 2: "explains.md", 3: "mentions.md", 4: "other.md"}
    found = _candidates({"lexical": lexical, "dense": dense}, page_of, "hybrid")
    hits = rank_pages(found, fusion="score", top_files=3, chunks_per_file=2, limit=10)
    fused = score_fusion([lexical, dense])
    expected = rollup(fused, page_of, 3, 2, 10, SECOND_CHUNK, page_fusion([lexical, dense], page_of))
    assert hits == expected
    # rrf and a lone ranking are neither gated by the second chunk nor fused per page.
    assert rank_pages(found, fusion="rrf", top_files=3, chunks_per_file=2, limit=10) == rollup(
        rrf([lexical, dense]), page_of, 3, 2, 10
    )
    alone = _candidates({"lexical": lexical}, page_of, "lexical")
    assert rank_pages(alone, fusion="score", top_files=3, chunks_per_file=2, limit=10) == rollup(
        lexical, page_of, 3, 2, 10
    )


def test_rank_pages_normalizes_each_ranking_once(monkeypatch):
    """Chunk fusion and page fusion take the same normalized lists: computed once each, the same hits."""
    from gitwiki.search import ranking

    lexical, dense = [(1, 8.0), (3, 6.0), (4, 0.5)], [(2, 0.9), (3, 0.8), (4, 0.5)]
    found = _candidates({"lexical": lexical, "dense": dense}, {1: "a.md", 2: "a.md", 3: "b.md", 4: "c.md"}, "hybrid")
    expected = rank_pages(found, fusion="score", top_files=3, chunks_per_file=2, limit=10)
    seen: list[object] = []

    def counted(ranking):
        seen.append(ranking)
        return dbsf(ranking)

    monkeypatch.setattr(ranking, "dbsf", counted)
    assert rank_pages(found, fusion="score", top_files=3, chunks_per_file=2, limit=10) == expected
    assert seen == [lexical, dense]


def test_rank_pages_with_a_reorder_keeps_its_order_and_drops_page_fusion():
    lexical, dense = [(1, 8.0), (2, 6.0)], [(2, 0.9), (1, 0.1)]
    found = _candidates({"lexical": lexical, "dense": dense}, {1: "a.md", 2: "b.md"}, "hybrid")
    hits = rank_pages(
        found, fusion="score", top_files=2, chunks_per_file=1, limit=5, reorder=lambda f: [(1, 5), (2, 1)]
    )
    assert [(h.path, h.score) for h in hits] == [("a.md", 5), ("b.md", 1)]
    traced = rank_pages(
        found, fusion="score", top_files=2, chunks_per_file=1, limit=5, reorder=lambda f: [(1, 5), (2, 1)], explain=True
    )
    assert all(h.trace.reranked and h.trace.page_fusion is None and h.trace.page_share == 0 for h in traced)
    assert traced[0].trace.chunk_score == 5 and traced[0].trace.second_share == 0.0


_scores = st.floats(min_value=-50, max_value=50, allow_nan=False)


@st.composite
def _found(draw):
    ids = draw(st.lists(st.integers(0, 30), min_size=1, max_size=25, unique=True))
    page_of = {cid: draw(st.sampled_from(["a.md", "b.md", "c.md", "d.md"])) for cid in ids}
    mode = draw(st.sampled_from(["hybrid", "lexical", "dense"]))
    names = {"hybrid": ["lexical", "dense"], "lexical": ["lexical"], "dense": ["dense"]}[mode]
    rankings = {}
    for name in names:
        chosen = draw(st.lists(st.sampled_from(ids), unique=True))
        rankings[name] = sorted(((cid, draw(_scores)) for cid in chosen), key=lambda kv: -kv[1])
    return Candidates(rankings, page_of, mode)


@settings(max_examples=150, deadline=None)
@given(found=_found(), fusion=st.sampled_from(["score", "rrf"]), top=st.integers(1, 5), per=st.integers(1, 3))
def test_the_trace_holds_the_numbers_that_made_the_order(found, fusion, top, per):
    plain = rank_pages(found, fusion=fusion, top_files=top, chunks_per_file=per, limit=50)
    traced = rank_pages(found, fusion=fusion, top_files=top, chunks_per_file=per, limit=50, explain=True)
    assert all(h.trace is None for h in plain)  # nothing traced unless asked
    assert [h._replace(trace=None) for h in traced] == plain  # and asking changes no number
    for hit in traced:
        t = hit.trace
        assert t is not None and t.score == hit.score and t.best_chunk == hit.chunks[0][0]
        assert math.isclose(t.base + t.second_share * (t.second_chunk or 0.0), t.score, rel_tol=1e-9, abs_tol=1e-9)
        assert t.normalization == ("raw" if len(found.rankings) == 1 else "dbsf" if fusion == "score" else "rrf")
        for r in t.rankers:  # each ranker's page rank is the page's place when that ranker alone ranks pages
            alone = rank_pages(
                Candidates({r.ranker: found.rankings[r.ranker]}, found.page_of, r.ranker),
                fusion=fusion,
                top_files=50,
                chunks_per_file=1,
                limit=50,
            )
            assert [h.path for h in alone].index(hit.path) + 1 == r.rank
            assert found.rankings[r.ranker][r.chunk_rank - 1] == (r.chunk, r.raw)
    scores = [h.score for h in traced]
    assert scores == sorted(scores, reverse=True)


def test_fuse_pages_fuses_ranked_page_lists_of_any_key():
    docs = [(("docs", "a.md"), 9.0), (("docs", "b.md"), 3.0)]
    handbook = [(("handbook", "c.md"), 0.8), (("handbook", "d.md"), 0.7)]
    both = fuse_pages([docs, handbook])
    assert sorted(k for k, _ in both) == sorted(k for k, _ in docs + handbook)
    assert [s for _, s in both] == sorted((s for _, s in both), reverse=True)
    assert dict(both) == {
        ("docs", "a.md"): dict(dbsf([(0, 9.0), (1, 3.0)]))[0] / 2,
        ("docs", "b.md"): dict(dbsf([(0, 9.0), (1, 3.0)]))[1] / 2,
        ("handbook", "c.md"): dict(dbsf([(0, 0.8), (1, 0.7)]))[0] / 2,
        ("handbook", "d.md"): dict(dbsf([(0, 0.8), (1, 0.7)]))[1] / 2,
    }
    assert [k for k, _ in fuse_pages([docs, handbook], "rrf")][:2] == [("docs", "a.md"), ("handbook", "c.md")]


def test_memory_score_is_relevance_times_confidence_and_staleness():
    assert memory_score(1.0, 1.0) == 1.0
    assert memory_score(0.5, 0.8, 0.7) == 0.5 * 0.8 * 0.7
    assert recency(RECENCY_DAYS) == 0.5  # what a listing without query words orders by
    assert relative(best_of([(1, 4.0), (2, 2.0), (3, 1.0)], {1: "x", 2: "y", 3: "x"})) == {"x": 1.0, "y": 0.5}
    assert relative({"x": 0.0}) == {"x": 0.0}


# ---- the same candidates, the same order: the Searcher, the LanceDB reader, the hooks' lookup, memory search -------

TOPICS = ("alpha", "beta", "gamma")


@pytest.fixture
def entry_chunks(repo):
    """A committed wiki whose memory folder holds three topics of one entry each, indexed: for each page its
    entry's chunk and its intro's chunk (id, blob)."""
    pages = {
        f"wiki/memory/{t}.md": f"# {t}\n\nAbout {t}.\n\n## 2026-11-22T00:00:00Z — cache note {t}\n\ncache note {t}\n\n"
        for t in TOPICS
    }
    repo.commit("memory", {".gitwiki.toml": LEXICAL_CONFIG, **pages})
    wiki = Wiki.open(repo.path)
    wiki.search("cache")  # indexes
    chunks, intros = {}, {}
    for path, blob in wiki.store.pages("wiki").items():
        entry, intro = sorted(wiki.store.chunks_of([blob]), key=lambda r: -r.start_line)
        chunks[path], intros[path] = (entry.id, blob), (intro.id, blob)
    return repo, wiki, chunks, intros


def _synthetic(chunks, monkeypatch, rankings_by_key, mode):
    """Every source's candidate stage answers `rankings_by_key` (ranker → [(key of `chunks`, score)], best first)."""
    rankings = {name: [(chunks[k][0], s) for k, s in ranked] for name, ranked in rankings_by_key.items()}
    page_of = {cid: path for path, (cid, _) in chunks.items()}
    blob_of = dict(chunks.values())
    found = Candidates(rankings, page_of, mode)
    monkeypatch.setattr(Searcher, "_candidates", lambda *a, **k: (found, blob_of, None))
    return found


def _lance_order(wiki, found, monkeypatch, mode):
    rows = wiki.store.chunks_by_id(found.page_of)
    by_id = {
        cid: {"path": found.page_of[cid], "title": "", "breadcrumb": list(r.breadcrumb), "text": r.text}
        | {"start_line": r.start_line, "end_line": r.end_line}
        for cid, r in rows.items()
    }
    monkeypatch.setattr(LanceReader, "_candidates", lambda *a, **k: (found, by_id))
    reader = object.__new__(LanceReader)  # the table is not asked: its candidate stage is replaced
    reader.commits = {}
    options = SearchOptions.build(SearchConfig(), mode=mode)
    return [d.path for d in reader.search("cache", "wiki", options, None, refresh=False).docs]


def _memory_order(repo):
    found = memory_search.search(
        Memory.open(repo.path), memory_search.MemoryQuery("cache", now=datetime(2026, 11, 23, tzinfo=UTC))
    )
    return [f"wiki/memory/{h.entry.topic}.md" for h in found.hits]


def test_the_same_lexical_candidates_give_the_same_order_through_each_entry_point(entry_chunks, monkeypatch):
    repo, wiki, chunks, _ = entry_chunks
    # An order BM25 would not give (the three entries say the same): the candidates alone decide it.
    wanted = ["wiki/memory/gamma.md", "wiki/memory/alpha.md", "wiki/memory/beta.md"]
    found = _synthetic(chunks, monkeypatch, {"lexical": list(zip(wanted, [9.0, 5.0, 2.0], strict=True))}, "lexical")
    searcher = [d.path for d in wiki.search("cache", mode="lexical").docs]
    lance = _lance_order(wiki, found, monkeypatch, "lexical")
    hits = [(cid, chunks[p][1], s) for p, (cid, s) in zip(wanted, found.rankings["lexical"], strict=True)]
    monkeypatch.setattr(Store, "lexical", lambda self, match, limit: hits)
    lookup = Lookup(repo.path, repo.path / ".git", wiki.config, wiki.index_dir, wiki.store)
    hook = [n.path for n in lookup.pick(lookup.ranked("cache"), lambda key: False)]
    assert searcher == lance == hook == _memory_order(repo) == wanted


def test_the_same_hybrid_candidates_give_the_same_order_through_each_entry_point(entry_chunks, monkeypatch):
    repo, wiki, chunks, intros = entry_chunks
    alpha, beta, gamma = (f"wiki/memory/{t}.md" for t in TOPICS)
    lexical = [(alpha, 9.0), (beta, 8.0), (gamma, 1.0)]
    dense = [(gamma, 0.9), (beta, 0.8), (alpha, 0.1)]
    found = _synthetic(chunks, monkeypatch, {"lexical": lexical, "dense": dense}, "hybrid")
    expected = [h.path for h in rank_pages(found, fusion="score", top_files=5, chunks_per_file=3, limit=50)]
    assert expected[0] == beta  # second in both lists, first fused: fusion decided
    searcher = [d.path for d in wiki.search("cache", mode="lexical").docs]  # the candidates say hybrid
    lance = _lance_order(wiki, found, monkeypatch, "hybrid")
    # Memory asks each ranker on its own (BM25 from its kept postings, the dense one once the query is embedded):
    # its candidate stage answers the same rankings.
    blob_of = dict(chunks.values())
    monkeypatch.setattr(memory_search, "_rankings", lambda *a, **k: (dict(found.rankings), blob_of, "hybrid"))
    assert searcher == lance == _memory_order(repo) == expected


def test_the_searcher_and_the_lance_reader_fuse_a_page_whose_evidence_two_chunks_hold(entry_chunks, monkeypatch):
    repo, wiki, chunks, intros = entry_chunks
    alpha, beta, gamma = (f"wiki/memory/{t}.md" for t in TOPICS)
    both = chunks | {p + "#intro": c for p, c in intros.items()}
    # gamma's words are in its entry, its meaning in its intro: only page-level fusion adds them up.
    lexical = [(gamma, 9.0), (beta, 8.0), (alpha, 7.0)]
    dense = [(gamma + "#intro", 0.9), (beta, 0.88), (alpha, 0.2)]
    found = _synthetic(both, monkeypatch, {"lexical": lexical, "dense": dense}, "hybrid")
    found = found._replace(page_of={cid: path.partition("#")[0] for cid, path in found.page_of.items()})
    monkeypatch.setattr(Searcher, "_candidates", lambda *a, **k: (found, dict(both.values()), None))
    expected = rank_pages(found, fusion="score", top_files=5, chunks_per_file=3, limit=50)
    chunk_only = rollup(score_fusion(list(found.rankings.values())), found.page_of, 5, 3, 50, SECOND_CHUNK)
    assert [h.path for h in expected] == [gamma, beta, alpha] != [h.path for h in chunk_only]  # page fusion did
    searcher = wiki.search("cache", mode="lexical")
    assert [d.path for d in searcher.docs] == _lance_order(wiki, found, monkeypatch, "hybrid")
    assert [(d.path, d.score) for d in searcher.docs] == [(h.path, h.score) for h in expected]


@given(st.dictionaries(st.integers(-50, 50), st.sampled_from([0.0, -0.0, 0.25, 0.5, 1.0, 1e-9]) | st.floats(-2, 2)))
def test_fused_chunks_are_ordered_by_score_then_id(scores):
    """Score and RRF fusion order the chunks best first, ties by chunk id (two sorts, as one by (-score, id) did)."""
    from gitwiki.search.ranking import _best_first

    assert _best_first(scores) == sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


@given(st.dictionaries(st.text("ab/", min_size=1, max_size=3), st.floats(0, 1)), st.integers(1, 6))
def test_rollup_keeps_the_best_pages_in_the_order_a_full_sort_gives(page_scores, top_files):
    from gitwiki.search.ranking import rollup

    page_of = dict(enumerate(page_scores))
    ranked = sorted(((i, page_scores[p]) for i, p in page_of.items()), key=lambda kv: (-kv[1], kv[0]))
    hits = rollup(ranked, page_of, top_files, 1, 100)
    best = sorted(page_scores.items(), key=lambda kv: (-kv[1], kv[0]))[:top_files]
    assert [(h.path, h.score) for h in hits] == best
