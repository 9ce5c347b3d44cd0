"""One ranking over separate indexes (the checkout's, each synced repository's): the candidates each index gives
(`searcher.Pool`, BM25 already scored with the statistics of all of them) merged into the candidates one index
holding every page would have given, so that they are fused, normalized and rolled up once. Pure."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import NamedTuple

from gitwiki.search.ranking import Candidates, PageHit, Ranked
from gitwiki.search.relevance import Background
from gitwiki.search.searcher import Pool, candidates

RANKERS = ("lexical", "dense")  # the order `Searcher` runs them in, which score fusion's weights follow


class Merged(NamedTuple):
    found: Candidates  # chunk ids numbered across the pools; page_of names a page by `page(shard, path)`
    origin: dict[int, tuple[int, int]]  # merged chunk id → (the pool it came from, its id there)
    pages: dict[str, tuple[int, str]]  # merged page name → (its pool, its path there)
    background: Background | None


def page(shard: int, path: str) -> str:
    """A page's name among the pages of several indexes (two may hold the same path): the path first, so that
    pages of equal score are ordered by path as in one index (`ranking.rollup`)."""
    return f"{path}\x00{shard}"


def merge(pools: Sequence[Pool], keys: Sequence[Callable[[str], Hashable]], depth: int, pages: int) -> Merged:
    """The pools' candidates as one index's: each ranker's chunks of every pool in one list, best first, cut as
    `Searcher` cuts one index's (`candidates`: the best `depth`, then one chunk of each further page until
    `pages` pages are in). A page two indexes hold (the same `keys` value: one repository declared twice) is
    taken from the first pool that offers it."""
    ids: dict[tuple[int, int], int] = {}
    owner: dict[Hashable, int] = {}
    named: dict[str, tuple[int, str]] = {}
    lists: dict[str, list[tuple[int, str, float]]] = {}
    for shard, pool in enumerate(pools):
        for ranker, ranked in pool.found.rankings.items():
            for cid, score in ranked:
                path = pool.found.page_of[cid]
                if owner.setdefault(keys[shard](path), shard) != shard:
                    continue
                name = page(shard, path)
                named[name] = (shard, path)
                lists.setdefault(ranker, []).append((ids.setdefault((shard, cid), len(ids)), name, score))
    rankings: dict[str, Ranked] = {}
    page_of: dict[int, str] = {}
    for ranker in sorted(lists, key=lambda r: RANKERS.index(r) if r in RANKERS else len(RANKERS)):
        cut = candidates(sorted(lists[ranker], key=lambda c: -c[2]), pages, depth)
        rankings[ranker] = [(cid, score) for cid, _, score in cut]
        page_of.update((cid, name) for cid, name, _ in cut)
    modes = {pool.found.mode for pool in pools}
    mode = "hybrid" if "hybrid" in modes else min(modes, default="lexical")
    origin = {gid: key for key, gid in ids.items()}
    return Merged(Candidates(rankings, page_of, mode), origin, named, background(pools))


def background(pools: Sequence[Pool]) -> Background | None:
    """The query's cosine over every chunk of every pool (their means and deviations pooled by chunk count)."""
    parts = [(p.searched, p.background) for p in pools if p.background is not None and p.searched > 0]
    total = sum(n for n, _ in parts)
    if not total:
        return None
    mean = sum(n * b.mean for n, b in parts) / total
    square = sum(n * (b.std**2 + b.mean**2) for n, b in parts) / total
    return Background(mean, math.sqrt(max(0.0, square - mean**2)))


def split(hits: Sequence[PageHit], merged: Merged, shards: int) -> list[list[PageHit]]:
    """The ranked pages of each pool, in the merged order, with that pool's own paths and chunk ids."""
    out: list[list[PageHit]] = [[] for _ in range(shards)]
    for hit in hits:
        shard, path = merged.pages[hit.path]
        local = {cid: merged.origin[cid][1] for cid, _ in hit.chunks}
        trace = hit.trace
        if trace is not None:  # its chunk ids too: `ground --explain` names them as that index numbers them
            rankers = tuple(r._replace(chunk=merged.origin[r.chunk][1]) for r in trace.rankers)
            trace = trace._replace(rankers=rankers, best_chunk=local[trace.best_chunk])
        out[shard].append(hit._replace(path=path, chunks=[(local[cid], s) for cid, s in hit.chunks], trace=trace))
    return out


def kept(merged: Merged, shard: int, pool: Pool) -> Pool:
    """`pool` with only its candidates the merge kept: what one index would have judged its pages by (the weak
    flag reads a page's cosine only among the dense candidates)."""
    rankings = {
        ranker: [(merged.origin[cid][1], score) for cid, score in ranked if merged.origin[cid][0] == shard]
        for ranker, ranked in merged.found.rankings.items()
    }
    return pool._replace(found=pool.found._replace(rankings=rankings))
