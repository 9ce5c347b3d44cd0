"""BM25 of a memory's topic pages kept warm in a process that searches again and again (the MCP server): each
page version's full-text rows are read once (`Store.blob_rows`) into postings, and a query is scored over the
pages searched with numpy, as FTS5's `bm25()` scores it (the same operations in the same order, so the same
doubles), with the statistics given: the index's own (`FullText.term_stats`), or those of every memory searched
together (`statistics.union`), so that a memory split across the project and the personal repository ranks as
one would.

Why: FTS5 scores every row holding any query term before it sorts them, old page versions and other corpora
included; at 10,000 entries that was ~5 ms of a ~9 ms warm lexical search, this ~0.3 ms (docs/research/
memory-search-speed.md). A command that searches once keeps FTS5: reading every row would cost more.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from gitwiki.index.statistics import K1, B, TermStats
from gitwiki.index.store.fulltext import FTS_WEIGHTS

if TYPE_CHECKING:
    import numpy as np

    from gitwiki.index.store import Store

Ranked = list[tuple[int, float]]
TERMS_KEPT = 4096  # terms whose postings over the pages searched are kept until those pages change


def plain(terms: Sequence[str]) -> bool:
    """Whether FTS5's unicode61 reads each of `terms` as one token equal to it (ASCII letters and digits, lower
    case), as it reads the pre-tokenized rows split on spaces: only then do the postings here count what it counts."""
    return bool(terms) and all(t.isascii() and t.isalnum() and t == t.lower() for t in terms)


class Rows(NamedTuple):
    """One page version's full-text rows: their chunk ids and lengths, and each term's rows and weighted frequency."""

    ids: np.ndarray  # int64 chunk id per row
    lengths: np.ndarray  # float64 tokens per row (FTS5's docsize)
    terms: np.ndarray  # int64 ids (`Lexicon.vocabulary`) of the terms the rows hold, ascending
    starts: np.ndarray  # int64, one more than `terms`: term i's slice of `at` and `freq` is starts[i]:starts[i + 1]
    at: np.ndarray  # int64 row positions, grouped by term
    freq: np.ndarray  # float64 weighted frequency (head 2, body 1: FTS_WEIGHTS) of the term in that row


class View(NamedTuple):
    """The rows of the page versions searched, one after another."""

    key: tuple[str, ...]  # the blobs asked
    blobs: tuple[str, ...]  # those with rows
    offsets: tuple[int, ...]  # where each blob's rows start
    ids: np.ndarray
    lengths: np.ndarray
    blob_at: np.ndarray  # int64 index into `blobs` per row


def _empty() -> Rows:
    """A page version without full-text rows (not indexed, or nothing to index)."""
    import numpy as np

    none = np.zeros(0, np.int64)
    return Rows(none, np.zeros(0, np.float64), none, np.zeros(1, np.int64), none, np.zeros(0, np.float64))


def rows_of(records: Iterable[tuple[int, str, str, str, int]], vocabulary: dict[str, int]) -> dict[str, Rows]:
    """The postings of each blob from its full-text rows (chunk id, blob, head, body, tokens); new terms are
    numbered in `vocabulary` (arrays per page, one dictionary in all: a dictionary per page was 14 MiB at
    10,000 entries)."""
    import numpy as np

    grouped: dict[str, list[tuple[int, str, str, int]]] = {}
    for cid, blob, head, body, length in records:
        grouped.setdefault(blob, []).append((cid, head, body, length))
    out: dict[str, Rows] = {}
    for blob, rows in grouped.items():
        rows.sort()
        counts: dict[int, dict[int, float]] = {}
        for pos, (_, head, body, _) in enumerate(rows):
            for weight, text in zip(FTS_WEIGHTS, (head, body), strict=False):
                for token in text.split():
                    term = vocabulary.get(token)
                    if term is None:
                        term = vocabulary[sys.intern(token)] = len(vocabulary)
                    held = counts.setdefault(term, {})
                    held[pos] = held.get(pos, 0.0) + weight
        terms = sorted(counts)
        starts = [0]
        at: list[int] = []
        freq: list[float] = []
        for term in terms:
            at.extend(counts[term])
            freq.extend(counts[term].values())
            starts.append(len(at))
        out[blob] = Rows(
            np.array([r[0] for r in rows], dtype=np.int64),
            np.array([r[3] for r in rows], dtype=np.float64),
            np.array(terms, dtype=np.int64),
            np.array(starts, dtype=np.int64),
            np.array(at, dtype=np.int64),
            np.array(freq, dtype=np.float64),
        )
    return out


class Lexicon:
    """The postings of every page version one memory searched in this process, by blob (a blob's rows do not
    change); versions no longer searched are forgotten when the pages searched change."""

    def __init__(self, store: Store) -> None:
        self.store = store  # a store opened again (a rebuilt index) starts a new lexicon
        self.blobs: dict[str, Rows] = {}
        self.vocabulary: dict[str, int] = {}  # term → its number in every page's `Rows.terms`
        self.view: View | None = None
        self.version = -1  # the store's data_version when the view was made
        self.terms: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # the view's postings of the terms asked

    def ranking(
        self, blobs: Iterable[str], terms: Sequence[str], stats: TermStats, depth: int
    ) -> tuple[Ranked, dict[int, str]]:
        """The best `depth` rows of `blobs` holding any of `terms`, by FTS5's BM25 with `stats`, best first (ties
        by chunk id), and each one's blob: what `Searcher._lexical` takes from FTS5 for these pages."""
        import numpy as np

        view = self._view(blobs)
        if not view.blobs or stats.rows <= 0:
            return [], {}
        avgdl = stats.tokens / stats.rows
        scores = np.zeros(len(view.ids), dtype=np.float64)
        held = np.zeros(len(view.ids), dtype=bool)
        for term in dict.fromkeys(terms):
            at, f = self._postings(view, term)
            if not len(at):
                continue
            d = view.lengths[at]
            # fts5Bm25Function's expression, term by term in query order.
            scores[at] += stats.idf(term) * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * d / avgdl)))
            held[at] = True
        found = np.flatnonzero(held)
        order = found[np.lexsort((view.ids[found], -scores[found]))][:depth]
        ranked = [(int(cid), float(s)) for cid, s in zip(view.ids[order], scores[order], strict=True)]
        blob_of = {int(view.ids[i]): view.blobs[int(view.blob_at[i])] for i in order}
        return ranked, blob_of

    def _view(self, blobs: Iterable[str]) -> View:
        import numpy as np

        wanted = tuple(sorted(set(blobs)))
        # Another process's commit (a rebuild, a gc) may have indexed a page version again, with new chunk ids.
        version = self.store.data_version()
        if self.view is not None and self.view.key == wanted and self.version == version:
            return self.view
        self.version = version
        # Rows read before count only while their chunk ids are the ones indexed now: a version dropped after
        # a write and written again (an entry stored, then deleted) is indexed with new ids.
        spans = self.store.blob_spans(wanted)
        for blob in [b for b in wanted if b in self.blobs]:
            ids = self.blobs[blob].ids
            held = (int(ids[0]), int(ids[-1]), len(ids)) if len(ids) else None
            if spans.get(blob) != held:
                del self.blobs[blob]
        missing = [b for b in wanted if b not in self.blobs]
        if missing:
            self.blobs.update(rows_of(self.store.blob_rows(missing), self.vocabulary))
            self.blobs.update((b, _empty()) for b in missing if b not in self.blobs)
        if len(self.blobs) > 2 * max(len(wanted), 1):  # a long-lived server: forget replaced page versions
            self.blobs = {b: r for b, r in self.blobs.items() if b in wanted}
        self.terms = {}
        present = tuple(b for b in wanted if b in self.blobs)
        parts = [self.blobs[b] for b in present]
        sizes = [len(p.ids) for p in parts]
        offsets = tuple(int(x) for x in np.cumsum([0, *sizes[:-1]])) if parts else ()
        self.view = View(
            wanted,
            present,
            offsets,
            np.concatenate([p.ids for p in parts]) if parts else np.zeros(0, dtype=np.int64),
            np.concatenate([p.lengths for p in parts]) if parts else np.zeros(0, dtype=np.float64),
            np.repeat(np.arange(len(parts), dtype=np.int64), sizes) if parts else np.zeros(0, dtype=np.int64),
        )
        return self.view

    def _postings(self, view: View, term: str) -> tuple[np.ndarray, np.ndarray]:
        """The view's rows holding `term` (positions) and the term's weighted frequency in each."""
        import numpy as np

        if term in self.terms:
            return self.terms[term]
        at: list[np.ndarray] = []
        freq: list[np.ndarray] = []
        number = self.vocabulary.get(term, -1)  # -1: no page searched so far holds it
        for blob, offset in zip(view.blobs, view.offsets, strict=True) if number >= 0 else ():
            rows = self.blobs[blob]
            i = int(rows.terms.searchsorted(number))
            if i < len(rows.terms) and rows.terms[i] == number:
                start, end = int(rows.starts[i]), int(rows.starts[i + 1])
                at.append(rows.at[start:end] + offset)
                freq.append(rows.freq[start:end])
        found = (np.concatenate(at), np.concatenate(freq)) if at else (np.zeros(0, np.int64), np.zeros(0, np.float64))
        if len(self.terms) >= TERMS_KEPT:
            self.terms.clear()
        self.terms[term] = found
        return found
