"""Hybrid search over one corpus view: BM25 (FTS5) + exact dense search, fused, rolled up per page."""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, NamedTuple

from gitwiki.config import FUSIONS, MODES, SearchConfig
from gitwiki.embed import Embedder
from gitwiki.errors import UsageError
from gitwiki.markdown.chunker import fallback_title
from gitwiki.ranking import FUSERS, Ranked, rollup, snippet
from gitwiki.store import Store, vector_matrix
from gitwiki.tokens import STOP_WORDS, fts_query, words

if TYPE_CHECKING:  # numpy loads on the first dense query: the lexical CLI path stays fast
    import numpy as np

CANDIDATES = 200  # chunks taken from each ranker before fusion


class CorpusView(NamedTuple):
    corpus: str
    commit: str
    pages: dict[str, str]  # path → blob id, as searched (worktree overlay applied when `dirty`)
    dirty: tuple[str, ...]
    key: str  # identifies this exact page set, for caches


class SearchOptions(NamedTuple):
    """One query's settings. Build them with `SearchOptions.build`, which checks what the caller gave and
    takes the rest from config.SearchConfig."""

    mode: str
    fusion: str
    top_files: int
    chunks_per_file: int
    limit: int
    snippet_chars: int
    full: bool

    @classmethod
    def build(
        cls,
        defaults: SearchConfig,
        *,
        mode: str | None = None,
        fusion: str | None = None,
        top_files: int | None = None,
        chunks_per_file: int | None = None,
        limit: int | None = None,
        snippet_chars: int | None = None,
        full: bool = False,
    ) -> SearchOptions:
        """The options for one query (the CLI, MCP, the LanceDB reader and `Wiki.search` all come here):
        None takes the [search] default; a bad value is a UsageError naming it."""
        mode = mode or defaults.mode
        if mode not in MODES:
            raise UsageError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        fusion = fusion or defaults.fusion
        if fusion not in FUSIONS:
            raise UsageError(f"fusion must be one of {', '.join(FUSIONS)}, not {fusion!r}")
        return cls(
            mode=mode,
            fusion=fusion,
            top_files=_positive(top_files, defaults.top_files, "top_files"),
            chunks_per_file=_positive(chunks_per_file, defaults.chunks_per_file, "chunks_per_file"),
            limit=_positive(limit, defaults.limit, "limit"),
            snippet_chars=_positive(snippet_chars, defaults.snippet_chars, "snippet_chars"),
            full=full,
        )


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


class SearchResult(NamedTuple):
    query: str
    corpus: str
    commit: str
    mode: str
    docs: list[DocResult]
    dirty: tuple[str, ...] = ()

    def to_json(self) -> dict:
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
                }
                for d in self.docs
            ],
            "dirty": list(self.dirty),
        }


class Searcher:
    """Runs queries; keeps the dense matrix of recent views in memory for long-lived processes."""

    def __init__(self, store: Store, cache_size: int = 4) -> None:
        self.store = store
        self._matrices: OrderedDict[tuple[str, str], DenseMatrix] = OrderedDict()
        self._cache_size = cache_size
        self._paths: tuple[str, dict[str, str]] | None = None  # (view key, blob → path)

    def search(self, view: CorpusView, query: str, options: SearchOptions, embedder: Embedder | None) -> SearchResult:
        mode = options.mode if embedder is not None else "lexical"
        blob_paths = self._blob_paths(view)
        blob_of: dict[int, str] = {}  # chunk id → blob, filled by the rankers
        with self.store.read():
            rankings: list[Ranked] = []
            if mode in ("hybrid", "lexical"):
                rankings.append(self._lexical(query, blob_paths, blob_of))
            if embedder is not None and mode in ("hybrid", "dense"):
                # Last: onnxruntime's threads spin for a while after a run and slow whatever follows.
                rankings.append(self._dense(view, query, embedder, blob_paths, blob_of))
            fused = rankings[0] if len(rankings) == 1 else FUSERS[options.fusion](rankings)
            page_of = {cid: blob_paths[blob_of[cid]] for cid, _ in fused}
            hits = rollup(fused, page_of, options.top_files, options.chunks_per_file, options.limit)
            rows = self.store.chunks_by_id(cid for hit in hits for cid, _ in hit.chunks)
            infos = self.store.blob_info(view.pages[h.path] for h in hits)
        terms = {w.lower() for w in words(query) if w.lower() not in STOP_WORDS}
        docs = []
        for hit in hits:
            info = infos.get(view.pages[hit.path])
            chunks = [
                ChunkResult(
                    list(rows[cid].breadcrumb),
                    rows[cid].start_line,
                    rows[cid].end_line,
                    score,
                    rows[cid].text if options.full else snippet(rows[cid].text, terms, options.snippet_chars),
                )
                for cid, score in hit.chunks
            ]
            title = (info.title if info else "") or fallback_title(hit.path)
            docs.append(DocResult(hit.path, title, hit.score, chunks))
        return SearchResult(query, view.corpus, view.commit, mode, docs, view.dirty)

    def _blob_paths(self, view: CorpusView) -> dict[str, str]:
        """blob → its first path in the view, kept for the last view: at 20,000 pages building it took 10 of a
        warm lexical query's 24 ms."""
        if self._paths is None or self._paths[0] != view.key:
            blob_paths: dict[str, str] = {}
            for path, blob in sorted(view.pages.items()):
                blob_paths.setdefault(blob, path)
            self._paths = (view.key, blob_paths)
        return self._paths[1]

    def _lexical(self, query: str, blob_paths: dict[str, str], blob_of: dict[int, str]) -> Ranked:
        match = fts_query(query)
        if match is None:
            return []
        limit = CANDIDATES * 4
        while True:
            found = self.store.lexical(match, limit)
            live = [(cid, blob, s) for cid, blob, s in found if blob in blob_paths]
            # Other corpora and old page versions share the table; look deeper if they crowded us out.
            if len(live) >= CANDIDATES or len(found) < limit:
                blob_of.update((cid, blob) for cid, blob, _ in live[:CANDIDATES])
                return [(cid, s) for cid, _, s in live[:CANDIDATES]]
            limit *= 8

    def _dense(
        self, view: CorpusView, query: str, embedder: Embedder, blob_paths: dict[str, str], blob_of: dict[int, str]
    ) -> Ranked:
        import numpy as np

        dense = self._matrix(view, embedder.model_id, blob_paths)
        if not dense.ids:
            return []
        # einsum, not BLAS: one matrix-vector product is faster on one core than on a thread pool that
        # has to wait for onnxruntime's spinning threads to let go of the CPU.
        scores = np.einsum("ij,j->i", dense.matrix, embedder.embed_query(query))
        top = np.argpartition(-scores, min(CANDIDATES, len(scores) - 1))[:CANDIDATES]
        top = top[np.argsort(-scores[top], kind="stable")]
        blob_of.update((dense.ids[i], dense.blobs[i]) for i in top)
        return [(dense.ids[i], float(scores[i])) for i in top]

    def _matrix(self, view: CorpusView, model: str, blob_paths: dict[str, str]) -> DenseMatrix:
        key = (model, view.key)
        if key in self._matrices:
            self._matrices.move_to_end(key)
            return self._matrices[key]
        rows, raw = self.store.vectors(model, blob_paths)
        entry = DenseMatrix([cid for cid, _ in rows], [blob for _, blob in rows], vector_matrix(raw, len(rows)))
        self._matrices[key] = entry
        if len(self._matrices) > self._cache_size:
            self._matrices.popitem(last=False)
        return entry


class DenseMatrix(NamedTuple):
    ids: list[int]  # chunk id per row
    blobs: list[str]  # blob per row
    matrix: np.ndarray
