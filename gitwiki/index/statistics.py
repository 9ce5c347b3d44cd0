"""BM25 as SQLite FTS5's `bm25()` computes it, with statistics given from outside: so that indexes in separate
files (the checkout's, each synced repository's) score a query's chunks on one scale, the statistics of all of
them (rows, tokens, the rows holding each term) are added up first and every index scores with the sum
(`sources.source.search_shards`). Pure: the store reads the counts (`FullText.term_stats`, `FullText.term_counts`).

FTS5 (fts5_aux.c): per query phrase, idf = ln((N - n + 0.5) / (n + 0.5)), at least 1e-6; the phrase's frequency
in a row is the sum of its column weights over its instances; score = Σ idf × f (k1 + 1) / (f + k1 (1 - b + b D /
avgdl)) with D the row's tokens in all columns, avgdl the table's tokens over its rows, k1 = 1.2, b = 0.75.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6


class TermStats(NamedTuple):
    """What BM25 needs to know of an index for one query: its rows, their tokens, and the rows holding each term."""

    rows: int
    tokens: int
    holding: Mapping[str, int]  # query term → rows holding it (absent: none)

    def idf(self, term: str) -> float:
        n = self.holding.get(term, 0)
        idf = math.log((self.rows - n + 0.5) / (n + 0.5))
        return idf if idf > 0.0 else MIN_IDF  # as fts5_aux.c: only a value not above 0 is replaced


def union(parts: Iterable[TermStats]) -> TermStats:
    """The statistics of one index holding every row of `parts`."""
    rows = tokens = 0
    holding: dict[str, int] = {}
    for part in parts:
        rows += part.rows
        tokens += part.tokens
        for term, n in part.holding.items():
            holding[term] = holding.get(term, 0) + n
    return TermStats(rows, tokens, holding)


def frequencies(columns: Sequence[str], terms: Iterable[str], weights: Sequence[float]) -> tuple[dict[str, float], int]:
    """A row's weighted frequency of each of `terms` and its tokens, from its full-text columns as indexed
    (pre-tokenized text, `tokens.fts_text`: FTS5's unicode61 only splits it on the spaces); a column past
    `weights` weighs 1, as in FTS5."""
    found = dict.fromkeys(terms, 0.0)
    length = 0
    for i, text in enumerate(columns):
        weight = weights[i] if i < len(weights) else 1.0
        tokens = text.split()
        length += len(tokens)
        for token in tokens:
            if token in found:
                found[token] += weight
    return found, length


def bm25(frequencies: Mapping[str, float], length: int, stats: TermStats) -> float:
    """One row's score for the query terms of `frequencies` (term → weighted frequency in the row, 0 when absent;
    every query term once), `length` its tokens: FTS5's `-bm25()` with `stats` in place of its own table's."""
    if stats.rows <= 0:
        return 0.0
    avgdl = stats.tokens / stats.rows
    if stats.tokens <= 0:
        return sum(stats.idf(term) * ((f * (K1 + 1.0)) / (f + K1)) for term, f in frequencies.items() if f > 0)
    # fts5Bm25Function's expression as written, so that the doubles are FTS5's to the last bit.
    return sum(
        stats.idf(term) * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * length / avgdl)))
        for term, f in frequencies.items()
        if f > 0
    )
