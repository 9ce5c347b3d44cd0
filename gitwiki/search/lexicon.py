"""BM25 of the page versions a long-lived process searches again and again (the owner: its wiki's views and its
memories' topic pages), kept warm: each page version's full-text rows are read once (`Store.blob_rows`) into
postings, and a query is scored over the pages searched with numpy as FTS5's `bm25()` scores it (the same operations
in the same order, so the same doubles), with the statistics given or this index's own, kept while the database does
not change (`Lexicon.term_stats`).

Why: FTS5 scores every row holding any query term before it sorts them, old page versions and other corpora
included, and reads each one's length with a statement of its own: at 10,000 memory entries that was ~5 ms of a
~9 ms warm lexical search, this ~0.3 ms (docs/research/memory-search-speed.md); over 1,000 wiki pages 0.54 ms a
query against 0.21 ms (docs/research/sessions-lexicon.md). A command that searches once keeps FTS5: reading every
row would cost more.

A wiki's lexicon (`gathered`) has each view's postings gathered into one table sorted by term (`Postings`), once
per view: collected page by page, a term cost 30-36 ms over 1,000 pages. A memory's topic pages are few and their
versions change with every store: each term is collected page by page, which costs no gathering.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from gitwiki.index.statistics import K1, B, TermStats
from gitwiki.index.store.fulltext import FTS_WEIGHTS
from gitwiki.native import numpy

if TYPE_CHECKING:
    import numpy as np
    from numpy import ndarray

    from gitwiki.index.store import Store

Ranked = list[tuple[int, float]]
TERMS_KEPT = 4096  # terms whose postings over the pages searched (and whose row counts) are kept
VIEWS_KEPT = 4  # page sets whose rows are kept side by side (the corpora of a wiki searched in turn)


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


class Postings(NamedTuple):
    """Every row of a view by term: term `numbers[i]` is held by the rows at `at[starts[i]:starts[i + 1]]`
    (positions in the view) with the weighted frequencies beside them."""

    numbers: np.ndarray  # int64 term numbers (`Lexicon.vocabulary`), ascending
    starts: np.ndarray  # int64, one more than `numbers`
    at: np.ndarray  # int64 row positions in the view
    freq: np.ndarray  # float64


class View(NamedTuple):
    """The rows of the page versions searched, one after another."""

    key: tuple[str, ...]  # the blobs asked
    blobs: tuple[str, ...]  # those with rows
    offsets: tuple[int, ...]  # where each blob's rows start
    ids: np.ndarray
    lengths: np.ndarray
    blob_at: np.ndarray  # int64 index into `blobs` per row
    postings: Postings | None  # a gathered lexicon's; None: each term collected page by page
    parts: tuple[Rows, ...]  # each blob's rows, as read when the view was made
    terms: dict[str, tuple[np.ndarray, np.ndarray]]  # the postings of the terms asked so far (`Lexicon._postings`)


def _empty() -> Rows:
    """A page version without full-text rows (not indexed, or nothing to index)."""
    np = numpy()

    none = np.zeros(0, np.int64)
    return Rows(none, np.zeros(0, np.float64), none, np.zeros(1, np.int64), none, np.zeros(0, np.float64))


def gather(parts: Sequence[Rows], offsets: Sequence[int]) -> Postings:
    """The postings of page versions `parts` (whose rows start at `offsets` in the view) as one table by term."""
    np = numpy()

    numbers = np.concatenate([np.repeat(p.terms, np.diff(p.starts)) for p in parts])
    at = np.concatenate([p.at + offset for p, offset in zip(parts, offsets, strict=True)])
    freq = np.concatenate([p.freq for p in parts])
    order = np.argsort(numbers, kind="stable")
    numbers = numbers[order]
    unique, first = np.unique(numbers, return_index=True)
    return Postings(unique, np.append(first, len(numbers)), at[order], freq[order])


def rows_of(records: Iterable[tuple[int, str, str, str, int]], vocabulary: dict[str, int]) -> dict[str, Rows]:
    """The postings of each blob from its full-text rows (chunk id, blob, head, body, tokens); new terms are
    numbered in `vocabulary` (arrays per page, one dictionary in all: a dictionary per page was 14 MiB at
    10,000 entries)."""
    np = numpy()

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
    """The postings of every page version searched in this process from one index, by blob (a blob's rows do not
    change), and the last VIEWS_KEPT page sets searched; versions no page set kept holds are forgotten when many."""

    def __init__(self, store: Store, gathered: bool = False) -> None:
        self.store = store  # a store opened again (a rebuilt index) starts a new lexicon
        self.gathered = gathered  # each view's postings in one table (many pages that seldom change: a wiki's)
        self.blobs: dict[str, Rows] = {}
        self.vocabulary: dict[str, int] = {}  # term → its number in every page's `Rows.terms`
        # page set → (the store's generation when its rows were last checked, its view), the last used last
        self.views: OrderedDict[tuple[str, ...], tuple[tuple[int, int], View]] = OrderedDict()
        self.named: dict[str, tuple[str, ...]] = {}  # the caller's name for a page set (`CorpusView.key`) → the set
        self.view: View | None = None  # the last searched
        # (the store's generation, (rows, tokens) of its full-text table, rows holding each term asked)
        self._stats: tuple[tuple[int, int], tuple[int, int] | None, dict[str, int]] = ((-1, -1), None, {})

    def term_stats(self, terms: Sequence[str]) -> TermStats:
        """`FullText.term_stats(terms)`, kept while the database does not change: two statements a query (FTS5's
        averages record and its vocabulary table), a fifth of what FTS5's own ranking costs here."""
        generation = self.store.generation()
        if generation != self._stats[0]:
            self._stats = (generation, None, {})
        _, totals, holding = self._stats
        if totals is None:
            whole = self.store.term_stats(())
            totals = (whole.rows, whole.tokens)
            self._stats = (generation, totals, holding)
        missing = [t for t in dict.fromkeys(terms) if t not in holding]
        if missing:
            if len(holding) + len(missing) > TERMS_KEPT:
                holding.clear()
                missing = list(dict.fromkeys(terms))  # this query's terms held before are gone too
            found = self.store.term_chunks(missing)
            holding.update((t, found.get(t, 0)) for t in missing)
        return TermStats(totals[0], totals[1], {t: holding[t] for t in terms if holding.get(t)})

    def ranking(
        self, blobs: Iterable[str], terms: Sequence[str], stats: TermStats, depth: int, key: str | None = None
    ) -> tuple[Ranked, dict[int, str]]:
        """The best `depth` rows of `blobs` holding any of `terms`, by FTS5's BM25 with `stats`, best first (ties
        by chunk id), and each one's blob: what `Searcher._lexical` takes from FTS5 for these pages. `key` names
        the set of `blobs` (the same key, the same set), so that a set asked again is known without sorting it."""
        found = self.rows(blobs, terms, stats, depth, key)
        return [(cid, score) for cid, _, score in found], {cid: blob for cid, blob, _ in found}

    def rows(
        self, blobs: Iterable[str], terms: Sequence[str], stats: TermStats, depth: int, key: str | None = None
    ) -> list[tuple[int, str, float]]:
        """`ranking`'s rows as (chunk id, blob, score)."""
        np = numpy()

        view = self._view(blobs, key)
        if not view.blobs or stats.rows <= 0:
            return []
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
        # whole arrays to Python at once: a numpy scalar per row cost 0.2 ms at 800 rows
        names = view.blobs
        return list(
            zip(
                view.ids[order].tolist(),
                [names[i] for i in view.blob_at[order].tolist()],
                scores[order].tolist(),
                strict=True,
            )
        )

    def forget(self) -> None:
        """Hold no postings (an index grown past what a caller keeps)."""
        self.blobs, self.vocabulary, self.views, self.named, self.view = {}, {}, OrderedDict(), {}, None

    def _view(self, blobs: Iterable[str], key: str | None = None) -> View:
        # Another process's commit (a rebuild, a gc), or this connection's own, may have indexed a page version
        # again, with new chunk ids: a set's rows are checked again whenever the database has changed.
        generation = self.store.generation()
        wanted = self.named.get(key) if key is not None else None
        if wanted is None:
            wanted = tuple(sorted(set(blobs)))
            if key is not None:
                if len(self.named) >= 4 * VIEWS_KEPT:
                    self.named.clear()
                self.named[key] = wanted
        held = self.views.get(wanted)
        if held is None or held[0] != generation:
            view = self._checked(wanted, held[1] if held is not None else None)
            self.views[wanted] = (generation, view)
            while len(self.views) > VIEWS_KEPT:
                self.views.popitem(last=False)
            kept = {b for w in self.views for b in w}
            if len(self.blobs) > 2 * max(len(kept), 1):  # a long-lived server: forget replaced page versions
                self.blobs = {b: r for b, r in self.blobs.items() if b in kept}
        self.views.move_to_end(wanted)
        self.view = self.views[wanted][1]
        return self.view

    def _checked(self, wanted: tuple[str, ...], before: View | None) -> View:
        """The view of page set `wanted`, its rows read again where the index holds them under other chunk ids
        (`before`, the set's view made earlier, if its rows are all still the ones held)."""
        np = numpy()

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
        present = tuple(b for b in wanted if b in self.blobs)
        parts = tuple(self.blobs[b] for b in present)
        if (
            before is not None
            and before.blobs == present
            and all(a is b for a, b in zip(before.parts, parts, strict=True))
        ):
            return before  # the same rows (a write elsewhere in the index): nothing to gather again
        sizes = [len(p.ids) for p in parts]
        offsets = tuple(int(x) for x in np.cumsum([0, *sizes[:-1]])) if parts else ()
        return View(
            wanted,
            present,
            offsets,
            np.concatenate([p.ids for p in parts]) if parts else np.zeros(0, dtype=np.int64),
            np.concatenate([p.lengths for p in parts]) if parts else np.zeros(0, dtype=np.float64),
            np.repeat(np.arange(len(parts), dtype=np.int64), sizes) if parts else np.zeros(0, dtype=np.int64),
            gather(parts, offsets) if self.gathered and parts else None,
            parts,
            {},
        )

    def _postings(self, view: View, term: str) -> tuple[np.ndarray, np.ndarray]:
        """The view's rows holding `term` (positions) and the term's weighted frequency in each."""
        np = numpy()

        if term in view.terms:
            return view.terms[term]
        at: list[ndarray] = []
        freq: list[ndarray] = []
        number = self.vocabulary.get(term, -1)  # -1: no page searched so far holds it
        if number >= 0 and view.postings is not None:
            table = view.postings
            held = _held(table.numbers, table.starts, table.at, table.freq, number)
            if held is not None:
                at.append(held[0])
                freq.append(held[1])
        elif number >= 0:
            for blob, offset in zip(view.blobs, view.offsets, strict=True):
                rows = self.blobs[blob]
                held = _held(rows.terms, rows.starts, rows.at, rows.freq, number)
                if held is not None:
                    at.append(held[0] + offset)
                    freq.append(held[1])
        found = (np.concatenate(at), np.concatenate(freq)) if at else (np.zeros(0, np.int64), np.zeros(0, np.float64))
        if len(view.terms) >= TERMS_KEPT:
            view.terms.clear()
        view.terms[term] = found
        return found


def _held(
    numbers: np.ndarray, starts: np.ndarray, at: np.ndarray, freq: np.ndarray, number: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """Term `number`'s slice of a table sorted by term (a page's `Rows`, a view's `Postings`): the rows holding it
    and its weighted frequency in each; None when the table has no such term."""
    i = int(numbers.searchsorted(number))
    if i < len(numbers) and numbers[i] == number:
        start, end = int(starts[i]), int(starts[i + 1])
        return at[start:end], freq[start:end]
    return None
