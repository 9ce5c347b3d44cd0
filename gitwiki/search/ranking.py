"""The one ranking pipeline, pure Python (the hooks import it): every search source generates its own
candidates (FTS5 and the dense matrix, LanceDB, the hooks' lean FTS5 lookup, memory's topic pages) and hands
them here to be normalized, fused, rolled up per page and, when asked, explained; memory's relevance × confidence
(and recency, for a listing without query words) is scored here too. Also cuts snippets."""

from __future__ import annotations

import bisect
import heapq
import math
import re
from collections.abc import Callable, Collection, Hashable, Mapping
from operator import itemgetter
from typing import Any, NamedTuple, TypeVar

from gitwiki.config import PAGE_SHARE
from gitwiki.search.relevance import Background, Judgement, judge

RRF_K = 60
# A page several ranked chunks match is more often the page that explains the topic than one that mentions it
# once, so its second-best chunk adds SECOND_CHUNK / sqrt(n) of its score (n: its ranked chunks; the root keeps
# long pages with many faint matches from winning on length). Used with the hybrid default, score fusion
# (docs/research/ranking.md): tldr MRR@10 0.518 → 0.597, hit@1 0.367 → 0.467; wiki-dev and docs/ ±0.001; Cranfield
# and SciFact, one chunk a page, unchanged. Without the root (0.3 flat) wiki-dev gained 0.015 but docs/ lost 0.03.
SECOND_CHUNK = 0.5

# Memory's recency, for a listing without query words: an entry RECENCY_DAYS old weighs half as much as one from today.
RECENCY_DAYS = 30.0

# (chunk id, score), best first
Ranked = list[tuple[int, float]]
# One ranking's scores on a common scale, for score fusion
Normalizer = Callable[[Ranked], list[tuple[int, float]]]


class PageHit(NamedTuple):
    path: str
    score: float
    chunks: list[tuple[int, float]]  # best first, at most chunks_per_file
    trace: PageTrace | None = None  # every number that placed the page, when explained (`rank_pages`)


class Weighting(NamedTuple):
    """How score fusion weighs the rankers: `[search] fusion_weight`, `normalization` and `page_share`
    (docs/configuration.md; `gitwiki eval --tune` fits them to a wiki's own questions). The defaults are the
    measured global ones."""

    fusion_weight: float = 0.5  # the lexical ranking's weight; the dense ranking gets the rest
    normalization: str = "dbsf"  # or "minmax"
    page_share: float = PAGE_SHARE

    def weights(self, rankings: list[Ranked]) -> list[float] | None:
        """Per ranking, for [lexical, dense] (the order the rankers run in); one ranking alone weighs 1."""
        return [self.fusion_weight, 1.0 - self.fusion_weight] if len(rankings) == 2 else None

    @property
    def normalizer(self) -> Normalizer:
        return min_max if self.normalization == "minmax" else dbsf


DEFAULT_WEIGHTING = Weighting()


def rrf(rankings: list[Ranked], k: int = RRF_K) -> Ranked:
    """Reciprocal rank fusion: each list adds 1 / (k + rank) for every chunk it ranks."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, (cid, _) in enumerate(ranking, 1):
            fused[cid] = fused.get(cid, 0.0) + 1.0 / (k + rank)
    return _best_first(fused)


def score_fusion(
    rankings: list[Ranked], weights: list[float] | None = None, normalize: Normalizer | None = None
) -> Ranked:
    """Convex combination of normalized scores (`dbsf` unless told; a chunk absent from a list gets 0 there)."""
    fused: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights or _even(rankings), strict=False):
        for cid, norm in (normalize or dbsf)(ranking):
            fused[cid] = fused.get(cid, 0.0) + weight * norm
    return _best_first(fused)


def _best_first(scores: dict[int, float]) -> Ranked:
    """(chunk id, score) by score, highest first, ties by id: two sorts without a Python key function, a quarter
    faster than one by (-score, id) (a stable sort keeps the ids' order among equal scores)."""
    ranked = sorted(scores.items())
    ranked.sort(key=itemgetter(1), reverse=True)
    return ranked


def page_fusion(
    rankings: list[Ranked],
    page_of: dict[int, str],
    weights: list[float] | None = None,
    normalize: Normalizer | None = None,
) -> dict[str, float]:
    """Score fusion of pages: in each ranking a page counts as its best chunk (normalized as in `score_fusion`),
    so its lexical and dense evidence add up even when different chunks hold them."""
    fused: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights or _even(rankings), strict=False):
        best: dict[str, float] = {}
        page_get, best_get = page_of.get, best.get
        for cid, norm in (normalize or dbsf)(ranking):
            page = page_get(cid)
            if page is not None and norm > best_get(page, -1.0):
                best[page] = norm
        for page, norm in best.items():
            fused[page] = fused.get(page, 0.0) + weight * norm
    return fused


def _even(rankings: list[Ranked]) -> list[float]:
    return [1.0 / len(rankings)] * len(rankings)


def min_max(ranking: Ranked) -> list[tuple[int, float]]:
    """Each score placed between the list's lowest (0) and highest (1)."""
    if not ranking:
        return []
    scores = [s for _, s in ranking]
    low, high = min(scores), max(scores)
    span = high - low
    return [(cid, (s - low) / span if span > 0 else 1.0) for cid, s in ranking]


def dbsf(ranking: Ranked) -> list[tuple[int, float]]:
    """Distribution-based score normalization: each score placed between the list's mean − 3 standard deviations
    (0, and below it 0) and mean + 3 (1; the top of a skewed list may pass 1).

    The default for score fusion over `min_max` (docs/research/ranking.md, DBSF): min-max stretches
    every list to 0–1, so a near-flat cosine list weighs its small differences as much as a BM25 list with a
    clear leader, and the list's last chunk ties with one the ranker never returned. Hybrid MRR@10 on wiki-dev
    0.916 → 0.924, nDCG@10 Cranfield 0.5796 → 0.5813 and SciFact 0.7370 → 0.7459; tldr MRR 0.613 → 0.606 (one
    question from rank 1 to 2; nDCG 0.631 → 0.646), docs/ unchanged. Clipped at 1 as well, the top of a list
    loses its lead and everything drops (wiki-dev 0.854, SciFact 0.683); z-scores gave the same on the BEIR sets
    but tldr 0.593."""
    if not ranking:
        return []
    scores = [s for _, s in ranking]
    mean = sum(scores) / len(scores)
    spread = 6 * math.sqrt(sum([(s - mean) ** 2 for s in scores]) / len(scores))
    low = mean - spread / 2
    if not spread > 0:
        return [(cid, 1.0) for cid, _ in ranking]
    # `max(0.0, x)` without the call (max keeps 0.0 unless x > 0.0): 100 → 60 µs for two lists of 200
    return [(cid, x if (x := (s - low) / spread) > 0.0 else 0.0) for cid, s in ranking]


FUSERS: dict[str, Callable[[list[Ranked]], Ranked]] = {"rrf": rrf, "score": score_fusion}


def rollup(
    ranked: Ranked,
    page_of: dict[int, str],
    top_files: int,
    chunks_per_file: int,
    limit: int,
    second: float = 0.0,
    page_scores: dict[str, float] | None = None,
    page_share: float = PAGE_SHARE,
) -> list[PageHit]:
    """Group chunks by page, best page first; a page scores as its best chunk plus `second` / sqrt(n) times its
    second-best, n being how many of its chunks were ranked (SECOND_CHUNK measures why; 0 is the best chunk alone).
    With `page_scores` (`page_fusion`), `page_share` of the best chunk's score is that of the page.

    `limit` caps the chunks returned in all; pages keep their order.
    """
    grouped: dict[str, list[tuple[int, float]]] = {}
    page_get, group = page_of.get, grouped.setdefault
    for chunk in ranked:
        path = page_get(chunk[0])
        if path is not None:
            group(path, []).append(chunk)
    keep = 1 - page_share
    scored: dict[str, float] = {}
    for path, chunks in grouped.items():
        base = chunks[0][1]
        if page_scores is not None:
            base = keep * base + page_share * page_scores.get(path, base)
        scored[path] = base + (second / math.sqrt(len(chunks)) * chunks[1][1] if len(chunks) > 1 else 0.0)
    # the first top_files of the sorted list, without sorting the rest (hundreds of pages for five); (-score, path)
    # pairs compared as they are, no key function called per page
    pages = heapq.nsmallest(top_files, [(-score, path) for path, score in scored.items()])
    hits, budget = [], limit
    for _, path in pages:
        if budget <= 0:
            break
        kept = grouped[path][: min(chunks_per_file, budget)]
        budget -= len(kept)
        hits.append(PageHit(path, scored[path], kept))
    return hits


class Candidates(NamedTuple):
    """What one source's rankers returned for a query, before any ranking math."""

    rankings: dict[str, Ranked]  # ranker (lexical, dense) → its (chunk id, raw score), best first; lexical first
    page_of: dict[int, str]  # chunk id → page path, for every candidate
    mode: str  # the mode that ran: hybrid, lexical or dense


class RankerTrace(NamedTuple):
    """How one ranker saw a page: through its best chunk there."""

    ranker: str  # lexical or dense
    rank: int  # the page's place among the pages this ranker returned (each by its best chunk), from 1
    chunk: int  # the page's best chunk in this ranker
    chunk_rank: int  # that chunk's place in the ranker's list, from 1
    raw: float  # its score as the ranker gave it (BM25, cosine)
    normalized: float  # what fusion took from it before the weights (PageTrace.normalization says how)


class PageTrace(NamedTuple):
    """Every number that placed one page (`rank_pages(..., explain=True)`)."""

    rankers: tuple[RankerTrace, ...]  # the rankers that returned a chunk of the page
    normalization: str  # dbsf or minmax (score fusion), rrf (1 / (RRF_K + chunk rank)) or raw (one ranker alone)
    reranked: bool  # a reranker reordered the fused chunks: the chunk scores are its own
    best_chunk: int
    chunk_score: float  # the best chunk's fused score
    page_fusion: float | None  # the page's own fused score (each ranker's best chunk of it); hybrid score only
    page_share: float  # the share of page_fusion in the base score (0 without it)
    base: float  # (1 − page_share) × chunk_score + page_share × page_fusion
    second_chunk: float | None  # the page's second-best fused chunk score
    chunks: int  # how many of the page's chunks were ranked
    second_share: float  # the factor on second_chunk: `second` / sqrt(chunks), 0 when off
    score: float  # base + second_share × second_chunk: the final score, which orders the pages
    weak: Judgement | None = None  # what the weak flag saw; None where the source does not judge

    def to_json(self) -> dict[str, Any]:
        """The `explain` object of `gitwiki ground --json` (docs/json-contract.md)."""
        weak = self.weak
        return {
            "rankers": {
                r.ranker: {
                    "rank": r.rank,
                    "chunk_rank": r.chunk_rank,
                    "raw": round(r.raw, 6),
                    "normalized": round(r.normalized, 6),
                }
                for r in self.rankers
            },
            "normalization": self.normalization,
            "reranked": self.reranked,
            "chunk_score": round(self.chunk_score, 6),
            "page_fusion": None if self.page_fusion is None else round(self.page_fusion, 6),
            "page_share": self.page_share,
            "base": round(self.base, 6),
            "second_chunk": None if self.second_chunk is None else round(self.second_chunk, 6),
            "chunks": self.chunks,
            "second_share": round(self.second_share, 6),
            "score": round(self.score, 6),
            "weak": None if weak is None else weak.to_json(),
        }


def fuse(rankings: list[Ranked], fusion: str, weighting: Weighting = DEFAULT_WEIGHTING) -> Ranked:
    """The chunks of every ranking in one order: a lone ranking as it is (its raw scores), several by `fusion`
    ("rrf", or "score" weighted and normalized by `weighting`)."""
    if len(rankings) == 1:
        return rankings[0]
    if not rankings:
        return []
    if fusion != "score":
        return FUSERS[fusion](rankings)
    return score_fusion(rankings, weighting.weights(rankings), weighting.normalizer)


def rank_pages(
    found: Candidates,
    *,
    fusion: str,
    top_files: int,
    chunks_per_file: int,
    limit: int,
    reorder: Callable[[Ranked], Ranked] | None = None,
    explain: bool = False,
    weighting: Weighting = DEFAULT_WEIGHTING,
) -> list[PageHit]:
    """The pages of one query, best first: the candidates fused (score fusion as `weighting` says), reordered (a
    reranker) when given, rolled up. `explain` also traces each page's numbers; without it nothing more is
    computed."""
    rankings = list(found.rankings.values())
    # Chunk and page fusion normalize the same lists: each once (0.1 ms of a warm hybrid query).
    normalize = _once(weighting.normalizer)
    if fusion == "score" and len(rankings) > 1:
        fused = score_fusion(rankings, weighting.weights(rankings), normalize)
    else:
        fused = fuse(rankings, fusion, weighting)
    if reorder is not None:
        fused = reorder(fused)
    # Measured only on normalized fused scores: raw cosines and RRF scores lie close together, and there a
    # second chunk outweighs the first (wiki-dev MRR dense 0.818 → 0.763, RRF 0.873 → 0.845).
    gated = found.mode == "hybrid" and fusion == "score"
    second = SECOND_CHUNK if gated else 0.0
    # Page-level fusion scores the rankers' own lists; a reranker's order replaces them.
    by_page = (
        page_fusion(rankings, found.page_of, weighting.weights(rankings), normalize)
        if gated and reorder is None
        else None
    )
    hits = rollup(fused, found.page_of, top_files, chunks_per_file, limit, second, by_page, weighting.page_share)
    if not explain:
        return hits
    traces = _trace(hits, fused, found, fusion, second, by_page, reorder is not None, weighting)
    return [hit._replace(trace=trace) for hit, trace in zip(hits, traces, strict=True)]


def _once(normalize: Normalizer) -> Normalizer:
    """`normalize`, keeping its answer for each ranking it was given (the same list object) while it lives."""
    done: list[tuple[Ranked, list[tuple[int, float]]]] = []

    def once(ranking: Ranked) -> list[tuple[int, float]]:
        for seen, normalized in done:
            if seen is ranking:
                return normalized
        done.append((ranking, normalize(ranking)))
        return done[-1][1]

    return once


def _trace(
    hits: list[PageHit],
    fused: Ranked,
    found: Candidates,
    fusion: str,
    second: float,
    by_page: dict[str, float] | None,
    reranked: bool,
    weighting: Weighting,
) -> list[PageTrace]:
    normalization = "raw" if len(found.rankings) == 1 else ("rrf" if fusion == "rrf" else weighting.normalization)
    seen = {name: _pages_seen(name, ranking, found.page_of, normalization) for name, ranking in found.rankings.items()}
    wanted = {hit.path for hit in hits}
    fused_of: dict[str, list[float]] = {}
    for cid, score in fused:
        path = found.page_of.get(cid)
        if path in wanted:
            fused_of.setdefault(path, []).append(score)
    share = weighting.page_share if by_page is not None else 0.0
    traces = []
    for hit in hits:
        scores = fused_of[hit.path]
        page = by_page.get(hit.path, scores[0]) if by_page is not None else None
        traces.append(
            PageTrace(
                rankers=tuple(seen[name][hit.path] for name in found.rankings if hit.path in seen[name]),
                normalization=normalization,
                reranked=reranked,
                best_chunk=hit.chunks[0][0],
                chunk_score=scores[0],
                page_fusion=page,
                page_share=share,
                base=scores[0] if page is None else (1 - share) * scores[0] + share * page,
                second_chunk=scores[1] if len(scores) > 1 else None,
                chunks=len(scores),
                second_share=second / math.sqrt(len(scores)) if len(scores) > 1 else 0.0,
                score=hit.score,
            )
        )
    return traces


def _pages_seen(name: str, ranking: Ranked, page_of: dict[int, str], normalization: str) -> dict[str, RankerTrace]:
    """Each page of one ranker's list as its best chunk there, with that chunk's normalized score; pages placed
    as `rollup` would place them on this list alone (ties by path)."""
    normalized = {"raw": lambda r: r, "rrf": _rrf_terms, "dbsf": dbsf, "minmax": min_max}[normalization](ranking)
    best: dict[str, tuple[int, int, float, float]] = {}
    for place, ((cid, raw), (_, norm)) in enumerate(zip(ranking, normalized, strict=True), 1):
        path = page_of.get(cid)
        if path is not None and path not in best:
            best[path] = (cid, place, raw, norm)
    order = sorted(best, key=lambda path: (-best[path][2], path))
    return {path: RankerTrace(name, rank, *best[path]) for rank, path in enumerate(order, 1)}


def _rrf_terms(ranking: Ranked) -> list[tuple[int, float]]:
    return [(cid, 1.0 / (RRF_K + place)) for place, (cid, _) in enumerate(ranking, 1)]


def judge_pages(
    hits: list[PageHit],
    terms: set[str],
    tokens: Mapping[str, Collection[str]],
    found: Candidates,
    background: Background | None,
    known: float | Callable[[], float] = 1.0,
) -> list[tuple[PageHit, Judgement]]:
    """The weak flag of each page (gitwiki.search.relevance) from its best chunk's `tokens` (by path: title, breadcrumb
    and text as indexed), its best cosine among the dense candidates and the share of `terms` the index `known`s
    (a callable: asked only for a page whose verdict depends on it, see `judge`); a trace, if any, records it."""
    cosines = dict(found.rankings.get("dense", ()))
    judged = []
    for hit in hits:
        cosine = max((cosines[cid] for cid, _ in hit.chunks if cid in cosines), default=None)
        judgement = judge(terms, tokens[hit.path], cosine, background, known)
        trace = hit.trace._replace(weak=judgement) if hit.trace is not None else None
        judged.append((hit._replace(trace=trace), judgement))
    return judged


Key = TypeVar("Key", bound=Hashable)


def fuse_pages(rankings: list[list[tuple[Key, float]]], fusion: str = "score") -> list[tuple[Key, float]]:
    """Several ranked lists of pages (one per corpus, say, keyed by (corpus, path)) as one list, best first, by
    the fusion chunks use: `score` puts each list on a common scale (dbsf) before adding them, `rrf` adds
    1 / (RRF_K + rank). Ties keep the order the keys first appeared in."""
    ids: dict[Key, int] = {}
    numbered = [[(ids.setdefault(key, len(ids)), score) for key, score in ranking] for ranking in rankings]
    keys = list(ids)
    return [(keys[i], score) for i, score in FUSERS[fusion](numbered)]


def relative(scores: Mapping[Key, float]) -> dict[Key, float]:
    """Scores divided by the best, so the best is 1: raw BM25 is in arbitrary units. Unchanged when none is > 0."""
    top = max(scores.values(), default=0.0)
    return {k: v / top for k, v in scores.items()} if top > 0 else dict(scores)


def best_of(fused: Ranked, key_of: Mapping[int, Key]) -> dict[Key, float]:
    """Each key's best positive chunk score (memory: the best section of each entry)."""
    out: dict[Key, float] = {}
    for cid, score in fused:
        key = key_of.get(cid)
        if key is not None and score > out.get(key, 0.0):
            out[key] = score
    return out


def recency(age_days: float) -> float:
    """Memory's recency weight: 1 today, 1/2 after RECENCY_DAYS, 1/3 after twice that."""
    return 1.0 / (1.0 + age_days / RECENCY_DAYS)


def memory_score(relevance: float, confidence: float, stale_factor: float = 1.0) -> float:
    """A memory entry's score for a query: relevance × confidence × (the stale factor when its source changed). Its
    age is not a factor, only a tie-break (memory search): × recency buried a note asked for under any newer
    neighbour once the notes spanned a few months (MRR@10 0.837 → 0.524 over 90 days, docs/research/memory-dates.md)."""
    return relevance * confidence * stale_factor


_SPACES = re.compile(r"\s+")


def snippet(text: str, terms: set[str], max_chars: int) -> str:
    """The `max_chars` window of `text` that holds the most query terms, on word boundaries."""
    flat = _SPACES.sub(" ", text).strip()
    if len(flat) <= max_chars:
        return flat
    lowered = flat.lower()
    # Each term's occurrences, left to right without overlaps, as a regex of the escaped term finds them; `str.find`
    # takes no escape and compile per term (the 15 snippets of a query: 75 of each)
    positions = []
    for term in terms:
        if term:
            at = lowered.find(term)
            while at >= 0:
                positions.append(at)
                at = lowered.find(term, at + len(term))
    positions.sort()
    return snippet_window(flat, positions, max_chars)


def snippet_window(flat: str, positions: list[int], max_chars: int) -> str:
    """The `max_chars` window of `flat` (longer than that) around the densest of the sorted term `positions`, cut
    on word boundaries, with an ellipsis where text was left out."""
    start = max(0, min(densest_start(positions, max_chars) - max_chars // 4, len(flat) - max_chars))
    if start > 0:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < start + 20 else start
    window = flat[start : start + max_chars]
    if start + max_chars < len(flat) and " " in window[-20:]:
        window = window[: window.rfind(" ")]
    return ("…" if start > 0 else "") + window + ("…" if start + len(window) < len(flat) else "")


def densest_start(positions: list[int], width: int) -> int:
    """The first of the sorted `positions` whose `width`-wide window holds the most of them (0 when none)."""
    best_start, best_count = 0, -1
    for i, start in enumerate(positions):
        # positions is sorted: a bisect counts the terms in the window; counting them one by one was quadratic
        # in the matches (the snippets of a warm tldr query: 0.15 -> 0.12 ms, more on long full-text chunks)
        count = bisect.bisect_left(positions, start + width, i) - i
        if count > best_count:
            best_start, best_count = start, count
    return best_start
