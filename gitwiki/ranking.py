"""Pure ranking: fuse lexical and dense chunk rankings, roll chunks up to pages, cut snippets."""

from __future__ import annotations

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

# (chunk id, score), best first
Ranked = list[tuple[int, float]]


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


def score_fusion(rankings: list[Ranked], weights: list[float] | None = None) -> Ranked:
    """Convex combination of min-max normalized scores (a chunk absent from a list gets 0 there)."""
    fused: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights or _even(rankings), strict=False):
        for cid, norm in _min_max(ranking):
            fused[cid] = fused.get(cid, 0.0) + weight * norm
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))


def page_fusion(
    rankings: list[Ranked], page_of: dict[int, str], weights: list[float] | None = None
) -> dict[str, float]:
    """Score fusion of pages: in each ranking a page counts as its best chunk (min-max normalized as in
    `score_fusion`), so its lexical and dense evidence add up even when different chunks hold them."""
    fused: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights or _even(rankings), strict=False):
        best: dict[str, float] = {}
        for cid, norm in _min_max(ranking):
            page = page_of.get(cid)
            if page is not None and norm > best.get(page, -1.0):
                best[page] = norm
        for page, norm in best.items():
            fused[page] = fused.get(page, 0.0) + weight * norm
    return fused


def _even(rankings: list[Ranked]) -> list[float]:
    return [1.0 / len(rankings)] * len(rankings)


def _min_max(ranking: Ranked) -> list[tuple[int, float]]:
    if not ranking:
        return []
    scores = [s for _, s in ranking]
    low, high = min(scores), max(scores)
    span = high - low
    return [(cid, (s - low) / span if span > 0 else 1.0) for cid, s in ranking]


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
    best_start, best_count = 0, -1
    for i, start in enumerate(positions):
        count = sum(1 for p in positions[i:] if p < start + max_chars)
        if count > best_count:
            best_start, best_count = start, count
    start = max(0, min(best_start - max_chars // 4, len(flat) - max_chars))
    if start > 0:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < start + 20 else start
    window = flat[start : start + max_chars]
    if start + max_chars < len(flat) and " " in window[-20:]:
        window = window[: window.rfind(" ")]
    return ("…" if start > 0 else "") + window + ("…" if start + len(window) < len(flat) else "")
