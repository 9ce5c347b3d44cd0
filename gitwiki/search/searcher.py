"""Hybrid search over one corpus view: BM25 (FTS5) + exact dense search, fused, rolled up per page."""

from __future__ import annotations

import functools
import itertools
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from gitwiki.config import FUSIONS, MODES, SearchConfig
from gitwiki.errors import EmbeddingUnavailable, UsageError
from gitwiki.index.embed import Embedder
from gitwiki.index.statistics import TermStats, bm25
from gitwiki.index.store import BlobInfo, ChunkRow, IndexDamaged, Store, lead_description, vector_matrix
from gitwiki.index.tokens import STOP_WORDS, fts_any, query_terms, tokenize, words
from gitwiki.markdown.chunker import fallback_title
from gitwiki.native import numpy
from gitwiki.search.helper_thread import helper_thread
from gitwiki.search.lexicon import Lexicon, plain
from gitwiki.search.query_vectors import QueryVectors
from gitwiki.search.ranking import (
    DEFAULT_WEIGHTING,
    Candidates,
    PageHit,
    PageTrace,
    Ranked,
    Weighting,
    judge_pages,
    rank_pages,
    snippet,
)
from gitwiki.search.relevance import Background, known_share
from gitwiki.search.rerank import Reranker, load_reranker, rerank

if TYPE_CHECKING:  # numpy loads on the first dense query: the lexical CLI path stays fast
    import numpy as np

    from gitwiki.search.request import SearchRequest

CANDIDATES = SearchConfig().depth  # chunks taken from each ranker before fusion, unless [search] depth says


class CorpusView(NamedTuple):
    corpus: str
    commit: str
    pages: dict[str, str]  # path → blob id, as searched (worktree overlay applied when `dirty`)
    dirty: tuple[str, ...]
    key: str  # identifies this exact page set, for caches
    lexical_only: tuple[str, ...] = ()  # uncommitted pages past the query-time embedding budget
    # path → the title a docs site's navigation gives the page (gitwiki.pages.sites.nav_titles): shown for a page
    # without a front-matter title or H1. Applied here, not indexed, so an edited nav re-titles no page version.
    titles: Mapping[str, str] = MappingProxyType({})


# The longest query searched, in characters. A query is what someone types or an agent writes: a question, keywords,
# a pasted error line with its frame; 4,000 characters hold about 600 words, twice what the embedding model reads
# (it truncates at 256 tokens, some 1,000-1,500 characters) and far more than BM25 needs to rank. Past it a query
# is a pasted file or log, and it was searched whole: 100 MB took 42 s and 1.55 GB of memory.
MAX_QUERY_CHARS = 4_000
# chunk ids whose blob a searcher keeps at most (`Searcher._matches`): 64k of them hold about 6 MB
MAX_KEPT_BLOBS = 1 << 16
# The largest index (its full-text tokens, every page version and corpus) whose views' postings a long-lived process
# keeps (`Searcher.keep_postings`): 1,000 tldr pages are 88,000 tokens and ~3 MiB of postings
KEEP_TOKENS = 1_000_000


def check_query(query: str) -> None:
    """UsageError for a query longer than MAX_QUERY_CHARS, before any work is done for it."""
    if len(query) > MAX_QUERY_CHARS:
        raise UsageError(
            f"the query is {len(query):,} characters; at most {MAX_QUERY_CHARS:,} are searched: say what to look "
            "for in a sentence or some keywords (from a log or a file, its telling line)"
        )


class SearchOptions(NamedTuple):
    """One query's settings. Build them with `SearchOptions.build`, which checks what the caller gave and
    takes the rest from config.SearchConfig."""

    mode: str
    fusion: str
    top_files: int
    chunks_per_file: int
    limit: int
    snippet_chars: int
    full: bool = False
    explain: bool = False  # trace each page's numbers (DocResult.explain)

    @classmethod
    def build(cls, defaults: SearchConfig, asked: SearchRequest | None = None, **given: Any) -> SearchOptions:
        """The options for one query (the CLI, MCP, the LanceDB reader and `Wiki.search` all come here), from the
        option fields of `asked` and the keywords `given`: None takes the [search] default; a bad value is a
        UsageError naming it. Any other field of this record is taken as asked, else its default."""
        values = {name: getattr(asked, name) for name in cls._fields if hasattr(asked, name)} if asked else {}
        unknown = set(given) - set(cls._fields)
        if unknown:
            raise TypeError(f"SearchOptions.build() got unexpected keyword(s): {', '.join(sorted(unknown))}")
        values.update(given)
        mode = values.get("mode") or defaults.mode
        if mode not in MODES:
            raise UsageError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        fusion = values.get("fusion") or defaults.fusion
        if fusion not in FUSIONS:
            raise UsageError(f"fusion must be one of {', '.join(FUSIONS)}, not {fusion!r}")
        checked: dict[str, Any] = {"mode": mode, "fusion": fusion}
        for name in ("top_files", "chunks_per_file", "limit", "snippet_chars"):
            checked[name] = _positive(values.get(name), getattr(defaults, name), name)
        rest: dict[str, Any] = {n: values.get(n, cls._field_defaults.get(n)) for n in cls._fields if n not in checked}
        return cls(**checked, **rest)


def _positive(value: int | None, default: int, name: str) -> int:
    value = default if value is None else value
    if not isinstance(value, int) or value < 1:
        raise UsageError(f"{name} must be a whole number ≥ 1, not {value!r}")
    return value


class ChunkResult(NamedTuple):
    breadcrumb: list[str]
    start_line: int
    end_line: int
    score: float
    text: str


class DocResult(NamedTuple):
    path: str
    title: str
    score: float
    chunks: list[ChunkResult]
    weak: bool = False  # gitwiki.search.relevance: few query terms and no standout embedding match
    corpus: str | None = None  # the corpus it came from, when a search spanned several (`sources.fuse`)
    explain: PageTrace | None = None  # every number that placed the page, when asked (SearchOptions.explain)


class SearchResult(NamedTuple):
    query: str
    corpus: str
    commit: str
    mode: str
    docs: list[DocResult]
    dirty: tuple[str, ...] = ()
    lexical_only: tuple[str, ...] = ()  # pages searched without vectors (query-time embedding budget spent)
    # (folder, summary) for the folders of `docs` that have an index.md gloss, in result order: where a hit sits
    folders: tuple[tuple[str, str], ...] = ()
    # (corpus, commit) of each corpus a search over several spanned (`sources.fuse`); () for one corpus
    corpora: tuple[tuple[str, str], ...] = ()

    @property
    def weak(self) -> bool:
        """Nothing matched well: no page at all, or the best page is a weak match."""
        return not self.docs or self.docs[0].weak

    def to_json(self) -> dict[str, Any]:
        """The stable `gitwiki ground --json` contract (docs/json-contract.md)."""
        return {
            "query": self.query,
            "corpus": self.corpus,
            "commit": self.commit,
            "mode": self.mode,
            "docs": [
                {
                    "path": d.path,
                    "title": d.title,
                    "score": round(d.score, 6),
                    "chunks": [
                        {
                            "breadcrumb": list(c.breadcrumb),
                            "start_line": c.start_line,
                            "end_line": c.end_line,
                            "score": round(c.score, 6),
                            "text": c.text,
                        }
                        for c in d.chunks
                    ],
                    "weak": d.weak,
                    **({"corpus": d.corpus} if d.corpus is not None else {}),
                }
                | ({"explain": d.explain.to_json()} if d.explain is not None else {})
                for d in self.docs
            ],
            "dirty": list(self.dirty),
            "weak": self.weak,
            "lexical_only": list(self.lexical_only),
            "folders": dict(self.folders),
            **({"corpora": dict(self.corpora)} if self.corpora else {}),
        }


@runtime_checkable
class RanksElsewhere(Protocol):
    """An embedder whose model runs in another process that ranks there too (a new owner's first searches,
    `model_process`): `Searcher.dense_ranking` of a view, its mean and deviation apart; None to rank here."""

    def rank(
        self, index_dir: str, key: str, blobs: list[str], query: str, pages: int, depth: int
    ) -> tuple[list[tuple[int, str, float]], float, float] | None: ...

    # The view a first `rank` will be asked about, named ahead: its vectors are read there while the model loads.
    def read_ahead(self, index_dir: str, key: str, blobs: list[str], depth: int) -> None: ...


class Searcher:
    """Runs queries; keeps the dense matrix of recent views in memory for long-lived processes."""

    def __init__(
        self,
        store: Store,
        cache_size: int = 4,
        reranker: Reranker | None = None,
        rerank_depth: int = 20,
        weighting: Weighting = DEFAULT_WEIGHTING,
        depth: int = CANDIDATES,
    ) -> None:
        self.store = store
        self.reranker = reranker
        self.rerank_depth = rerank_depth
        self.weighting = weighting
        self.depth = depth
        self._matrices: OrderedDict[tuple[str, str], DenseMatrix] = OrderedDict()
        self._cache_size = cache_size
        self._paths: tuple[str, dict[str, str]] | None = None  # (view key, blob → path)
        # chunk id → blob of the chunks BM25 has returned, while the database's generation holds (`_matches`)
        self._blobs: tuple[tuple[int, int], dict[int, str]] = ((-1, -1), {})
        self._ahead: tuple[str, str] | None = None  # the matrix `read_ahead` made, until a search's takes its rows
        self.queries = QueryVectors()
        self._lexicon: Lexicon | None = None  # BM25's postings, kept when `keep_postings` was asked

    def keep_postings(self) -> None:
        """For a long-lived process: rank BM25 from the postings of the views searched, kept in memory
        (`search.lexicon`: FTS5's scores, to the bit) while the index holds at most KEEP_TOKENS tokens."""
        if self._lexicon is None:
            self._lexicon = Lexicon(self.store, gathered=True)

    @classmethod
    def configured(cls, store: Store, config: SearchConfig) -> Searcher:
        """A searcher with the [search] reranker, fusion and depth, for the local index and each repository's
        alike."""
        return cls(
            store,
            reranker=load_reranker(config.reranker),
            rerank_depth=config.rerank_depth,
            weighting=Weighting(config.fusion_weight, config.normalization, config.page_share),
            depth=config.depth,
        )

    def _candidates(
        self,
        view: CorpusView,
        query: str,
        mode: str,
        embedder: Embedder | None,
        pages: int,
        stats: TermStats | None = None,
    ) -> tuple[Candidates, dict[int, str], Background | None]:
        """Each ranker's candidates, each chunk's blob, and the query's cosine over every chunk searched (None
        without dense); BM25 by this index's own statistics, or by `stats` when given (`pool`)."""
        mode = mode if embedder is not None else "lexical"
        blob_paths = self._blob_paths(view)
        blob_of: dict[int, str] = {}  # chunk id → blob, filled by the rankers
        rankings: dict[str, Ranked] = {}
        background: Background | None = None
        if (
            mode == "hybrid"
            and embedder is not None
            and stats is None
            and (embedder.model_id, view.key) in self._matrices  # the dense ranking reads nothing from the index
            and self.queries.kept(embedder, query) is None  # and runs the model
        ):
            return self._beside(view, query, embedder, blob_paths, pages)
        if mode in ("hybrid", "lexical"):
            rankings["lexical"] = (
                self._lexical(query, blob_paths, blob_of, pages, view.key)
                if stats is None
                else self._lexical_with(query, blob_paths, blob_of, pages, stats)
            )
        if embedder is not None and mode in ("hybrid", "dense"):
            # Last: onnxruntime's threads spin for a while after a run and slow whatever follows.
            try:
                rankings["dense"], background = self._dense(view, query, embedder, blob_paths, blob_of, pages)
            except EmbeddingUnavailable:
                if not isinstance(embedder, RanksElsewhere):
                    raise
                mode = "lexical"  # a model lent by another process that did not load there, nor here: said once
        page_of = {cid: blob_paths[blob] for cid, blob in blob_of.items()}
        return Candidates(rankings, page_of, mode), blob_of, background

    def _beside(
        self, view: CorpusView, query: str, embedder: Embedder, blob_paths: dict[str, str], pages: int
    ) -> tuple[Candidates, dict[int, str], Background | None]:
        """`_candidates` in hybrid mode with BM25 ranked on another thread while this one embeds the query (SQLite
        and onnxruntime let go of the GIL): the model's run hides BM25's, and this thread, which runs the model as
        it would alone, seldom waits. Only the other thread uses the index meanwhile: the dense matrix is kept."""
        lexical_of: dict[int, str] = {}
        ranking = helper_thread("gitwiki-bm25").submit(self._lexical, query, blob_paths, lexical_of, pages, view.key)
        time.sleep(0)  # let go of the GIL: the worker starts now, not when this thread next waits
        dense_of: dict[int, str] = {}
        try:
            dense, background = self._dense(view, query, embedder, blob_paths, dense_of, pages)
        finally:
            ranking.exception()  # waits for it: the read transaction must not end under the other thread's statement
        rankings = {"lexical": ranking.result(), "dense": dense}
        blob_of = {**lexical_of, **dense_of}  # as the rankers fill it in turn
        page_of = {cid: blob_paths[blob] for cid, blob in blob_of.items()}
        return Candidates(rankings, page_of, "hybrid"), blob_of, background

    def rankings(
        self,
        view: CorpusView,
        query: str,
        mode: str,
        embedder: Embedder | None,
        pages: int,
        stats: TermStats | None = None,
    ) -> tuple[Candidates, dict[int, str]]:
        """Each ranker's candidates in `mode` and each chunk's blob, inside a read the caller holds (memory search
        ranks its entries from them)."""
        found, blob_of, _ = self._candidates(view, query, mode, embedder, pages, stats)
        return found, blob_of

    def candidates(
        self, view: CorpusView, query: str, embedder: Embedder | None, pages: int
    ) -> tuple[list[Ranked], dict[int, str]]:
        """Each ranker's candidates for `query` in hybrid mode ([lexical, dense], or lexical alone without
        `embedder`) and each chunk's page: `gitwiki eval --tune` fuses them again under every setting it tries."""
        with self.store.read():
            found, _, _ = self._candidates(view, query, "hybrid", embedder, pages)
        return list(found.rankings.values()), found.page_of

    def search(self, view: CorpusView, query: str, options: SearchOptions, embedder: Embedder | None) -> SearchResult:
        with self.store.read():
            found, _, background = self._candidates(view, query, options.mode, embedder, options.top_files)
            hits = rank_pages(
                found,
                fusion=options.fusion,
                top_files=options.top_files,
                chunks_per_file=options.chunks_per_file,
                limit=options.limit,
                reorder=functools.partial(self._rerank, query) if self.reranker is not None else None,
                explain=options.explain,
                weighting=self.weighting,
            )
            content = set(tokenize(query))
            # Only the dense standout needs it: lexical coverage already reads a term the index lacks as missing. Looked
            # up only for a page whose verdict depends on it, unless a trace shows it (0.25 ms of a warm hybrid query).
            known: float | Callable[[], float] = 1.0
            if background is not None:
                known = functools.cache(lambda: known_share(content, self.store.term_chunks(content)))
                known = known() if options.explain else known
            docs = self._documents(view, query, hits, found, background, known, options)
        lexical_only = view.lexical_only if found.mode != "lexical" else ()
        return SearchResult(query, view.corpus, view.commit, found.mode, docs, view.dirty, lexical_only)

    def statistics(self, query: str) -> TermStats:
        """This index's BM25 statistics for the query's terms (`FullText.term_stats`): a search over several
        indexes adds them up and scores every index with the sum (`sources.source.search_shards`)."""
        with self.store.read():
            return self.store.term_stats(query_terms(query))

    def pool(
        self, view: CorpusView, query: str, options: SearchOptions, embedder: Embedder | None, stats: TermStats
    ) -> Pool:
        """Each ranker's candidates as `search` takes them, but BM25 scored with `stats` (the statistics of every
        index searched together), so that candidates of separate indexes compare: dense cosines already do."""
        with self.store.read():
            found, _, background = self._candidates(view, query, options.mode, embedder, options.top_files, stats)
        searched = 0
        if background is not None and embedder is not None:  # the matrix `_candidates` just used, cached
            searched = len(self._matrix(view.key, embedder.model_id, self._blob_paths(view)).ids)
        return Pool(found, background, searched)

    def documents(
        self,
        view: CorpusView,
        query: str,
        hits: list[PageHit],
        found: Candidates,
        background: Background | None,
        known: float | Callable[[], float],
        options: SearchOptions,
    ) -> list[DocResult]:
        """The pages `hits` of this index as `search` shows them (a search over several indexes ranks them)."""
        with self.store.read():
            return self._documents(view, query, hits, found, background, known, options)

    def _documents(
        self,
        view: CorpusView,
        query: str,
        hits: list[PageHit],
        found: Candidates,
        background: Background | None,
        known: float | Callable[[], float],
        options: SearchOptions,
    ) -> list[DocResult]:
        content = set(tokenize(query))
        rows, infos, indexed = self._page_rows(view, hits)
        titles = {h.path: (info.title if (info := infos.get(view.pages[h.path])) else "") for h in hits}
        titles = {path: title or view.titles.get(path) or fallback_title(path) for path, title in titles.items()}
        # The FTS row's head holds the page's tags and not the fallback title: those terms are taken here, with the
        # description a page's first chunk is searched by (a page found by its description alone is no weak match).
        tokens = {
            h.path: indexed[h.chunks[0][0]].union(
                tokenize(" ".join((titles[h.path], *rows[h.chunks[0][0]].breadcrumb, _described(h, rows, infos, view))))
            )
            for h in hits
        }
        terms = {w.lower() for w in words(query) if w.lower() not in STOP_WORDS}
        docs = [
            DocResult(
                hit.path,
                titles[hit.path],
                hit.score,
                _chunks(hit, rows, terms, options),
                judged.weak,
                explain=hit.trace,
            )
            for hit, judged in judge_pages(hits, content, tokens, found, background, known)
        ]
        return docs

    def _rerank(self, query: str, fused: Ranked) -> Ranked:
        assert self.reranker is not None  # only passed to rank_pages with one
        head = self.store.chunks_by_id(cid for cid, _ in fused[: self.rerank_depth])
        texts = {cid: "\n".join((" > ".join(r.breadcrumb), r.text)) for cid, r in head.items()}
        return rerank(fused, texts, query, self.reranker, self.rerank_depth)

    def _page_rows(
        self, view: CorpusView, hits: list[PageHit]
    ) -> tuple[dict[int, ChunkRow], dict[str, BlobInfo], dict[int, set[str]]]:
        """The rows of the chunks shown, the pages' blob info, and the indexed terms of each page's best chunk."""
        rows = self.store.chunks_by_id(cid for hit in hits for cid, _ in hit.chunks)
        missing = {cid for hit in hits for cid, _ in hit.chunks} - rows.keys()
        if missing:  # the rankers saw chunks the table does not hold: only a damaged file does that
            raise IndexDamaged(self.store.index_dir, f"{len(missing)} ranked chunk(s) missing from the chunks table")
        infos = self.store.blob_info(view.pages[h.path] for h in hits)
        # The weak flag's terms of each best chunk, as indexed: tokenizing the texts again was a fifth of a warm
        # lexical query.
        indexed = self.store.indexed_terms((hit.chunks[0][0] for hit in hits), head=False)
        if len(indexed) < len(hits):
            raise IndexDamaged(self.store.index_dir, f"{len(hits) - len(indexed)} ranked chunk(s) not in the FTS table")
        return rows, infos, indexed

    def _blob_paths(self, view: CorpusView) -> dict[str, str]:
        """blob → its first path in the view, kept for the last view: at 20,000 pages building it was 40 % of a
        warm lexical query."""
        if self._paths is None or self._paths[0] != view.key:
            blob_paths: dict[str, str] = {}
            for path, blob in sorted(view.pages.items()):
                blob_paths.setdefault(blob, path)
            self._paths = (view.key, blob_paths)
        return self._paths[1]

    def _lexical(
        self, query: str, blob_paths: dict[str, str], blob_of: dict[int, str], pages: int, key: str | None = None
    ) -> Ranked:
        terms = query_terms(query)
        match = fts_any(terms)
        if match is None:
            return []
        kept = self._kept(terms)
        limit = self.depth * 4 if kept is None else self.depth  # the kept postings rank the view's rows alone
        while True:
            if kept is None:
                found = self._matches(match, limit)
                viewed = [(cid, blob, s) for cid, blob, s in found if blob in blob_paths]
            else:
                found = viewed = kept[0].rows(blob_paths, terms, kept[1], limit, key)
            pool = candidates(viewed, pages, self.depth)
            # Other corpora and old page versions share the table, and one page can own most matches: look
            # deeper while they crowd out the pages asked for.
            if (len(pool) >= self.depth and len({blob for _, blob, _ in pool}) >= pages) or len(found) < limit:
                blob_of.update((cid, blob) for cid, blob, _ in pool)
                return [(cid, s) for cid, _, s in pool]
            limit *= 8

    def _kept(self, terms: list[str]) -> tuple[Lexicon, TermStats] | None:
        """The kept postings and the statistics of `terms`, when BM25 is ranked from them (`keep_postings`, terms
        FTS5 reads as they are, an index within KEEP_TOKENS)."""
        lexicon = self._lexicon
        if lexicon is None or not plain(terms):
            return None
        stats = lexicon.term_stats(terms)
        if stats.tokens > KEEP_TOKENS:
            lexicon.forget()
            return None
        return lexicon, stats

    def _matches(self, match: str, limit: int) -> list[tuple[int, str, float]]:
        """`store.lexical(match, limit)`, each chunk's blob taken from those kept: a chunk id names the same blob until
        the database changes (ids of deleted chunks may be given again), so they are kept for one generation."""
        generation = self.store.generation()
        if self._blobs[0] != generation or len(self._blobs[1]) > MAX_KEPT_BLOBS:
            # nothing kept: the join, which costs no more than looking each blob up (a search after every memory
            # store comes here), and its blobs kept
            found = self.store.lexical(match, limit)
            self._blobs = (generation, {cid: sys.intern(blob) for cid, blob, _ in found})
            return found
        ranked = self.store.lexical_ranked(match, limit)
        blobs = self._blobs[1]
        missing = [cid for cid, _ in ranked if cid not in blobs]
        if missing:
            blobs.update((cid, sys.intern(blob)) for cid, blob in self.store.chunk_blobs(missing).items())
        # a chunk missing from the table is left out, as the join left it out
        return [(cid, blobs[cid], s) for cid, s in ranked if cid in blobs]

    def _lexical_with(
        self, query: str, blob_paths: dict[str, str], blob_of: dict[int, str], pages: int, stats: TermStats
    ) -> Ranked:
        """`_lexical` with BM25 scored by `stats` (`statistics.bm25`, FTS5's formula): FTS5 finds the matches by its
        own statistics, at least 4 × depth of them, and they are scored and cut again."""
        terms = query_terms(query)
        match = fts_any(terms)
        if match is None:
            return []
        limit = self.depth * 4
        while True:
            found = self.store.lexical(match, limit)
            held = [(cid, blob) for cid, blob, _ in found if blob in blob_paths]
            counts = self.store.term_counts((cid for cid, _ in held), terms)
            scored = sorted(
                ((cid, blob, bm25(*counts[cid], stats)) for cid, blob in held if cid in counts), key=lambda c: -c[2]
            )
            pool = candidates(scored, pages, self.depth)
            if (len(pool) >= self.depth and len({blob for _, blob, _ in pool}) >= pages) or len(found) < limit:
                blob_of.update((cid, blob) for cid, blob, _ in pool)
                return [(cid, s) for cid, _, s in pool]
            limit *= 8

    def _dense(
        self,
        view: CorpusView,
        query: str,
        embedder: Embedder,
        blob_paths: dict[str, str],
        blob_of: dict[int, str],
        pages: int,
    ) -> tuple[Ranked, Background | None]:
        got: DenseRanking | None = None
        if isinstance(embedder, RanksElsewhere):  # this process then needs neither numpy nor the matrix
            elsewhere = embedder.rank(str(self.store.index_dir), view.key, list(blob_paths), query, pages, self.depth)
            got = None if elsewhere is None else (elsewhere[0], Background(elsewhere[1], elsewhere[2]))
        if got is None:
            got = self.dense_ranking(
                view.key, embedder.model_id, blob_paths, lambda: self.queries.vector(embedder, query), pages
            )
        if got is None:
            return [], None
        pool, background = got
        blob_of.update([(cid, blob) for cid, blob, _ in pool])
        return [(cid, score) for cid, _, score in pool], background

    def dense_ranking(
        self, key: str, model: str, blob_paths: dict[str, str], vector: Callable[[], np.ndarray], pages: int
    ) -> DenseRanking | None:
        """The chunks of the pages in `blob_paths` (the view `key`) closest to the query `vector` gives, as
        (chunk id, blob, cosine) best first (`candidates`), and the query's cosine over all of them; None when
        none of them has a vector of `model`."""
        np = numpy()

        dense = self._matrix(key, model, blob_paths)
        if not len(dense.ids):
            return None
        # einsum, not BLAS: one matrix-vector product is faster on one core than on a thread pool that
        # has to wait for onnxruntime's spinning threads to let go of the CPU.
        scores = np.einsum("ij,j->i", dense.matrix, vector())
        top = np.argpartition(-scores, min(self.depth, len(scores) - 1))[: self.depth]
        top = top[np.argsort(-scores[top], kind="stable")]
        top_blobs = dense.blobs[top].tolist()
        if pages < dense.distinct and _few_pages(top_blobs, pages):  # one page owns the top: every row, in order
            top = np.argsort(-scores, kind="stable")
            top_blobs = dense.blobs[top].tolist()
        # The rows' ids, blobs and scores as Python lists taken by numpy's indexing, zipped in C: a generator that
        # looked each up in lists was 0.15 ms a query.
        ranked = zip(dense.ids[top].tolist(), top_blobs, scores[top].tolist(), strict=True)
        return candidates(ranked, pages, self.depth), Background(float(scores.mean()), float(scores.std()))

    def rank_ahead(self, view: CorpusView, embedder: Embedder) -> None:
        """Name `view` to a model ranking in another process (`model_process.Lent.read_ahead`), which reads its
        vectors while its model still loads; nothing for a model in this process."""
        if isinstance(embedder, RanksElsewhere):
            embedder.read_ahead(str(self.store.index_dir), view.key, list(self._blob_paths(view)), self.depth)

    def read_ahead(self, view: CorpusView, model: str) -> None:
        """Read the vectors `view`'s dense search by `model` needs, before its query vector is there: a search of a
        view that shares its pages reads only the rest, and the matrix read here is dropped once it has."""
        self._matrix(view.key, model, self._blob_paths(view))
        self._ahead = (model, view.key)

    def _matrix(self, view_key: str, model: str, blob_paths: dict[str, str]) -> DenseMatrix:
        np = numpy()

        key = (model, view_key)
        if key in self._matrices:
            self._matrices.move_to_end(key)
            return self._matrices[key]
        # A view that differs from a cached one by a few page versions (an edit, a memory store) reuses the
        # cached rows of the unchanged pages: reloading them all was the cost of the first search after every
        # memory store.
        base = next((m for (mdl, _), m in reversed(self._matrices.items()) if mdl == model), None)
        kept = [i for i, blob in enumerate(base.blobs.tolist()) if blob in blob_paths] if base else []
        known = set(base.blobs[kept].tolist()) if base else set()
        if base is None:  # a first read: through the model's vector file (index.store.vector_file)
            rows, matrix = self.store.vector_rows(model, blob_paths)
        else:
            rows, raw = self.store.vectors(model, [b for b in blob_paths if b not in known])
            matrix = vector_matrix(raw, len(rows))
        ids = np.array([cid for cid, _ in rows], np.int64)
        blobs = np.array([blob for _, blob in rows], object)
        if base is not None and kept:
            ids, blobs = np.concatenate([base.ids[kept], ids]), np.concatenate([base.blobs[kept], blobs])
            matrix = np.vstack([base.matrix[kept], matrix]) if rows else base.matrix[kept]
        entry = DenseMatrix(ids, blobs, matrix, len(set(blobs.tolist())))
        self._matrices[key] = entry
        if self._ahead is not None:  # its rows are in this one now: not a second copy (39 MB at 20,000 tldr pages)
            self._matrices.pop(self._ahead, None)
            self._ahead = None
        if len(self._matrices) > self._cache_size:
            self._matrices.popitem(last=False)
        return entry


def _described(hit: PageHit, rows: dict[int, ChunkRow], infos: dict[str, BlobInfo], view: CorpusView) -> str:
    """The description the page's best chunk is indexed with ("" unless it is the page's first chunk)."""
    info = infos.get(view.pages[hit.path])
    return (lead_description(rows[hit.chunks[0][0]].ord, info.description) if info else None) or ""


def _chunks(hit: PageHit, rows: dict[int, ChunkRow], terms: set[str], options: SearchOptions) -> list[ChunkResult]:
    """A page's chunks as shown: whole (`full`) or a snippet around the query's terms."""
    return [
        ChunkResult(
            list(rows[cid].breadcrumb),
            rows[cid].start_line,
            rows[cid].end_line,
            score,
            rows[cid].text if options.full else snippet(rows[cid].text, terms, options.snippet_chars),
        )
        for cid, score in hit.chunks
    ]


def candidates(
    ranked: Iterable[tuple[int, str, float]], pages: int, depth: int = CANDIDATES
) -> list[tuple[int, str, float]]:
    """The best `depth` of (chunk id, blob, score), best first, then the best chunk of each further page
    until `pages` pages are in: one page owning most matches must not leave `--top-files 5` with two."""
    rest = iter(ranked)
    pool = list(itertools.islice(rest, depth))
    seen = {blob for _, blob, _ in pool}
    for item in rest:
        if len(seen) >= pages:
            break
        if item[1] not in seen:
            seen.add(item[1])
            pool.append(item)
    return pool


def _few_pages(blobs: list[str], pages: int) -> bool:
    """Whether the rows of `blobs` hold fewer than `pages` distinct blobs: counted until there are that many (the
    first rows of a query's dense top hold five pages; a set of all 200 took 0.09 ms)."""
    seen: set[str] = set()
    for blob in blobs:
        seen.add(blob)
        if len(seen) >= pages:
            return False
    return True


class Pool(NamedTuple):
    """One index's candidates for a search over several (`Searcher.pool`)."""

    found: Candidates  # chunk ids of this index; page_of gives paths of its view
    background: Background | None  # the query's cosine over every chunk this index searched (None: no dense)
    searched: int  # how many chunks that was


# A dense ranking: (chunk id, blob, cosine) best first, and the query's cosine over every chunk searched.
DenseRanking = tuple[list[tuple[int, str, float]], Background]


class DenseMatrix(NamedTuple):
    ids: np.ndarray  # chunk id per row (int64): arrays, so that numpy's indexing takes the top rows'
    blobs: np.ndarray  # blob per row (object)
    matrix: np.ndarray
    distinct: int  # how many blobs (page versions) the rows hold
