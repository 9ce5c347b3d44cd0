"""Pure ranking: fuse lexical and dense chunk rankings, roll chunks up to pages, cut snippets."""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Callable
from typing import NamedTuple

RRF_K = 60
# A page several ranked chunks match is more often the page that explains the topic than one that mentions it
# once, so its second-best chunk adds SECOND_CHUNK / sqrt(n) of its score (n: its ranked chunks; the root keeps
# long pages with many faint matches from winning on length). Used with the hybrid default, score fusion (issue 15,
# docs/benchmarks.md): tldr MRR@10 0.518 → 0.597, hit@1 0.367 → 0.467; wiki-dev and docs/ ±0.001; Cranfield
# and SciFact, one chunk a page, unchanged. Without the root (0.3 flat) wiki-dev gained 0.015 but docs/ lost 0.03.
SECOND_CHUNK = 0.5

# A page's lexical and dense evidence often sits in different chunks (the words in one section, the meaning in
# another), and chunk-level fusion then gives each chunk only half. So with score fusion a page also scores at page
# level, each ranking's best chunk of the page fused (`page_fusion`), and its base score is PAGE_SHARE of that plus
# the rest of its best fused chunk (issue 15, docs/benchmarks.md): wiki-dev MRR@10 0.903 → 0.916, hit@1 0.851 →
# 0.874; docs/ 0.789 → 0.799; one-chunk pages (Cranfield, SciFact) unchanged. All page-level (1.0): docs/ −0.006.
PAGE_SHARE = 0.5

# Score fusion's lexical weight follows the corpus's mean chunk length in indexed terms (`length_weight`): BM25 has
# more evidence in a long chunk and one vector blurs it. Formula fixed before measuring, against the even split
# (docs/research/query-feedback-and-fields.md): no metric of seven sets lost more than 0.003, tldr MRR@10
# +0.021, click (held out) +0.009, wiki-dev +0.002, docs/ +0.004, SciFact nDCG@10 +0.0015, Cranfield +0.0007.
EVEN_LENGTH = 100.0  # mean indexed terms a chunk at which lexical and dense weigh the same
LENGTH_SLOPE = 0.25  # lexical weight added per tenfold mean chunk length
LENGTH_BOUNDS = (0.35, 0.65)

# (chunk id, score), best first
Ranked = list[tuple[int, float]]
# One ranking's scores on a common scale, for score fusion
Normalizer = Callable[[Ranked], list[tuple[int, float]]]


class PageHit(NamedTuple):
    path: str
    score: float
    chunks: list[tuple[int, float]]  # best first, at most chunks_per_file


def rrf(rankings: list[Ranked], k: int = RRF_K) -> Ranked:
    """Reciprocal rank fusion: each list adds 1 / (k + rank) for every chunk it ranks."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, (cid, _) in enumerate(ranking, 1):
            fused[cid] = fused.get(cid, 0.0) + 1.0 / (k + rank)
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))


def score_fusion(
    rankings: list[Ranked], weights: list[float] | None = None, normalize: Normalizer | None = None
) -> Ranked:
    """Convex combination of normalized scores (`dbsf` unless told; a chunk absent from a list gets 0 there)."""
    fused: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights or _even(rankings), strict=False):
        for cid, norm in (normalize or dbsf)(ranking):
            fused[cid] = fused.get(cid, 0.0) + weight * norm
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))


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
        for cid, norm in (normalize or dbsf)(ranking):
            page = page_of.get(cid)
            if page is not None and norm > best.get(page, -1.0):
                best[page] = norm
        for page, norm in best.items():
            fused[page] = fused.get(page, 0.0) + weight * norm
    return fused


def length_weight(mean_terms: float) -> float:
    """The lexical share of score fusion for a corpus whose chunks hold `mean_terms` indexed terms on average
    (dense gets the rest): even at EVEN_LENGTH, LENGTH_SLOPE more per tenfold length, within LENGTH_BOUNDS."""
    low, high = LENGTH_BOUNDS
    return min(high, max(low, 0.5 + LENGTH_SLOPE * math.log10(max(mean_terms, 1.0) / EVEN_LENGTH)))


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

    The default for score fusion over `min_max` (issue 15, docs/benchmarks.md, third round): min-max stretches
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
    spread = 6 * math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    low = mean - spread / 2
    return [(cid, max(0.0, (s - low) / spread) if spread > 0 else 1.0) for cid, s in ranking]


FUSERS: dict[str, Callable[[list[Ranked]], Ranked]] = {"rrf": rrf, "score": score_fusion}


def rollup(
    ranked: Ranked,
    page_of: dict[int, str],
    top_files: int,
    chunks_per_file: int,
    limit: int,
    second: float = 0.0,
    page_scores: dict[str, float] | None = None,
) -> list[PageHit]:
    """Group chunks by page, best page first; a page scores as its best chunk plus `second` / sqrt(n) times its
    second-best, n being how many of its chunks were ranked (SECOND_CHUNK measures why; 0 is the best chunk alone).
    With `page_scores` (`page_fusion`), PAGE_SHARE of the best chunk's score is that of the page.

    `limit` caps the chunks returned in all; pages keep their order.
    """
    grouped: dict[str, list[tuple[int, float]]] = {}
    for cid, score in ranked:
        path = page_of.get(cid)
        if path is not None:
            grouped.setdefault(path, []).append((cid, score))
    base = {path: chunks[0][1] for path, chunks in grouped.items()}
    if page_scores is not None:
        base = {path: (1 - PAGE_SHARE) * b + PAGE_SHARE * page_scores.get(path, b) for path, b in base.items()}
    scored = {
        path: base[path] + (second / math.sqrt(len(chunks)) * chunks[1][1] if len(chunks) > 1 else 0.0)
        for path, chunks in grouped.items()
    }
    pages = sorted(grouped.items(), key=lambda kv: (-scored[kv[0]], kv[0]))[:top_files]
    hits, budget = [], limit
    for path, chunks in pages:
        if budget <= 0:
            break
        kept = chunks[: min(chunks_per_file, budget)]
        budget -= len(kept)
        hits.append(PageHit(path, scored[path], kept))
    return hits


def snippet(text: str, terms: set[str], max_chars: int) -> str:
    """The `max_chars` window of `text` that holds the most query terms, on word boundaries."""
    flat = re.sub(r"\s+", " ", text).strip()
    if len(flat) <= max_chars:
        return flat
    lowered = flat.lower()
    positions = sorted(m.start() for t in terms if t for m in re.finditer(re.escape(t), lowered))
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
