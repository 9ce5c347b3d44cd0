"""The scale-out path: the indexed corpora as one LanceDB table, at a local path or in object storage.

`export` brings the table `chunks` at `[storage] uri` (e.g. s3://bucket/wiki) to the current corpus states,
one row per page chunk (key, corpus, path, blob, title, breadcrumb, lines, text, vector). It is incremental:
rows are keyed by corpus, path, blob and chunk position, so one `merge_insert` adds the chunks of new or
changed pages and deletes those of removed ones in a single commit; an unchanged tree writes nothing. Each
export ends by tagging the version it produced `gitwiki-v<version>-<commit>`, after the indexes are updated;
a `LanceReader` reads the newest tagged version, so it never sees a missing table, a half-updated index or
rows of a commit whose state is not recorded yet. Above `[storage] ann_min_rows` rows the vectors get an
IVF-HNSW-SQ index. S3 credentials and endpoint come from the usual AWS_* variables.

lancedb and pyarrow are imported inside functions: nothing on the hook or lint path pays for them.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from gitwiki.errors import NotFoundError, StoreError, UnknownCorpus, UsageError
from gitwiki.index.embed import Embedder, load_embedder
from gitwiki.index.onnx_embed import config_for, model_key
from gitwiki.index.statistics import TermStats, bm25, frequencies
from gitwiki.index.store import ChunkRow, State, Store, vector_matrix
from gitwiki.index.store.fulltext import FTS_WEIGHTS
from gitwiki.index.tokens import STOP_WORDS, query_terms, tokenize, words
from gitwiki.markdown.chunker import fallback_title
from gitwiki.search.ranking import Candidates, PageHit, Ranked, judge_pages, rank_pages, snippet
from gitwiki.search.relevance import Background
from gitwiki.search.searcher import (
    CANDIDATES,
    ChunkResult,
    DocResult,
    Pool,
    SearchOptions,
    SearchResult,
    candidates,
    check_query,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from lancedb import DBConnection
    from lancedb.query import LanceVectorQueryBuilder
    from lancedb.table import Table

    from gitwiki.config import Config

TABLE = "chunks"
TAG_PREFIX = "gitwiki-v"
# The row layout. A table written with another one is rewritten whole (in one commit) by the next export.
# 3: the vector index is IVF-HNSW-SQ (was IVF-PQ, which a reader had to refine).
# 4: `terms`, each chunk's full-text head and body as the SQLite index holds them (a line each), with a full-text
# index of its own: a search of the table beside other indexes scores BM25 as they do, on one scale (`statistics`).
LAYOUT = "4"

# Above this share of changed rows one overwrite commit is cheaper than a merge (and a long IN list).
REWRITE_SHARE = 0.5
REWRITE_MIN_PAGES = 100  # a diff of fewer pages always merges, however small the table
# The ANN index is an HNSW graph in each IVF partition over 8-bit scalar-quantized vectors, searched with EF
# candidates: recall@10 0.989 where lancedb's default IVF-PQ reached 0.481 (docs/research/lancedb.md).
EF = 150
TAGS_KEPT = 2  # the newest and the one before: a reader that just resolved the older one can still open it


class ExportReport(NamedTuple):
    uri: str
    corpora: tuple[str, ...]
    rows: int  # rows in the table after the export
    model: str | None
    seconds: float
    inserted: int  # rows written by this export (0: the table already held this state)
    deleted: int
    version: int  # the table version readers now see
    tag: str
    ann_index: bool  # the vectors have an ANN index


class _Chunk(NamedTuple):
    key: str
    corpus: str
    path: str
    title: str
    chunk: ChunkRow


def connect(uri: str) -> DBConnection:
    # lance logs routine events ("no existing dataset, it will be created") as warnings on stderr.
    os.environ.setdefault("LANCEDB_LOG", "error")
    from gitwiki.native import numpy

    numpy()  # first, by one thread at a time: pyarrow's extension imports numpy's core (gitwiki.native.numpy)
    import lancedb

    try:
        return lancedb.connect(uri)
    except Exception as e:  # lancedb raises ValueError/OSError/its own errors for a bad URI or credentials
        raise StoreError(f"cannot open LanceDB at {uri} ({e}); check [storage] uri and the AWS_* credentials") from None


def _open(db: DBConnection) -> Table | None:
    try:
        return db.open_table(TABLE)
    except Exception:  # lancedb raises ValueError or FileNotFoundError for a missing table
        return None


def page_id(corpus: str, path: str, blob: str) -> str:
    return f"{corpus}|{path}|{blob}"


def row_key(corpus: str, path: str, blob: str, ord: int) -> str:
    """A chunk row's identity: the same page content at the same path is the same rows, whatever the commit."""
    return f"{page_id(corpus, path, blob)}|{ord}"


def _state_of(states: list[State], model: str | None) -> dict[str, Any]:
    """What an export records in the table: enough to tell that a later export has nothing to do."""
    return {
        "layout": LAYOUT,
        "model": model or "",
        "corpora": {s.corpus: {"commit": s.commit, "tree": s.tree} for s in states},
    }


def _recorded(table: Table) -> dict[str, Any]:
    raw = (table.schema.field("key").metadata or {}).get(b"gitwiki.state") if "key" in table.schema.names else None
    return json.loads(raw) if raw else {}


def _pages(store: Store, states: list[State]) -> dict[str, tuple[str, str, str]]:
    """Page id (corpus|path|blob, a row key without its chunk position) → (corpus, path, blob)."""
    return {
        page_id(state.corpus, path, blob): (state.corpus, path, blob)
        for state in states
        for path, blob in store.pages(state.corpus).items()
    }


def _chunks(store: Store, pages: Iterable[tuple[str, str, str]]) -> list[_Chunk]:
    """The chunk rows of `pages`: read only for pages the table lacks (all of them took 1.2 s at 47,772 rows)."""
    pages = sorted(pages)
    blobs = {blob for _, _, blob in pages}
    infos = store.blob_info(blobs)
    by_blob: dict[str, list[ChunkRow]] = {}
    for chunk in store.chunks_of(blobs):
        by_blob.setdefault(chunk.blob, []).append(chunk)
    return [
        _Chunk(row_key(corpus, path, blob, chunk.ord), corpus, path, infos[blob].title if blob in infos else "", chunk)
        for corpus, path, blob in pages
        for chunk in by_blob.get(blob, ())
    ]


def _rows(store: Store, model: str | None, chunks: Iterable[_Chunk]) -> Iterator[dict[str, Any]]:
    chunks = list(chunks)
    indexed = store.indexed_text(c.chunk.id for c in chunks)
    vectors: dict[int, Any] = {}
    if model:
        ids, raw = store.vectors(model, {c.chunk.blob for c in chunks})
        vectors = dict(zip((cid for cid, _ in ids), vector_matrix(raw, len(ids)), strict=False))
    for c in chunks:
        row = {
            "key": c.key,
            "corpus": c.corpus,
            "path": c.path,
            "blob": c.chunk.blob,
            "title": c.title,
            "breadcrumb": list(c.chunk.breadcrumb),
            "start_line": c.chunk.start_line,
            "end_line": c.chunk.end_line,
            "text": c.chunk.text,
            "fts": " ".join((c.title, *c.chunk.breadcrumb, c.chunk.text)),
            "terms": "\n".join(indexed.get(c.chunk.id, ())[:2]),
        }
        if model:
            if c.chunk.id not in vectors:
                raise StoreError(f"chunk {c.chunk.id} of {c.path} has no {model} vector; run `gitwiki index` first")
            row["vector"] = vectors[c.chunk.id]
        yield row


def _schema(model: str | None, dim: int | None, state: dict[str, Any]) -> pa.Schema:
    import pyarrow as pa

    fields = [
        pa.field("key", pa.string(), metadata={"gitwiki.state": json.dumps(state, sort_keys=True)}),
        pa.field("corpus", pa.string()),
        pa.field("path", pa.string()),
        pa.field("blob", pa.string()),
        pa.field("title", pa.string()),
        pa.field("breadcrumb", pa.list_(pa.string())),
        pa.field("start_line", pa.int32()),
        pa.field("end_line", pa.int32()),
        pa.field("text", pa.string()),
        pa.field("fts", pa.string()),
        pa.field("terms", pa.string()),
    ]
    if model and dim:
        fields.append(pa.field("vector", pa.list_(pa.float32(), dim)))
    return pa.schema(fields, metadata={"gitwiki.model": model or ""})


def _dimension(store: Store, model: str | None, pages: dict[str, tuple[str, str, str]]) -> int | None:
    if not model or not pages:
        return None
    ids, raw = store.vectors(model, [next(iter(pages.values()))[2]])
    return len(raw) // 4 // len(ids) if ids else None


def export(store: Store, uri: str, ann_min_rows: int) -> ExportReport:
    """Bring the table at `uri` to the current state of every indexed corpus, writing only what changed."""
    import pyarrow as pa

    started = time.perf_counter()
    states = sorted(store.states(), key=lambda s: s.corpus)
    if not states:
        raise StoreError("the index holds no corpus yet; run `gitwiki index` first")
    models = {s.model for s in states}
    if len(models) > 1:
        raise StoreError("corpora were indexed with different models; run `gitwiki index` first")
    model = models.pop()
    state = _state_of(states, model)
    db = connect(uri)
    table = _open(db)
    recorded = _recorded(table) if table is not None else {}
    inserted = deleted = 0
    if table is None or recorded != state:
        with store.read():
            pages = _pages(store, states)
            rewrite = table is None or recorded.get("layout") != LAYOUT or recorded.get("model") != (model or "")
            existing: set[str] = set()
            if not rewrite:
                assert table is not None
                existing = set(table.search().select(["key"]).limit(None).to_arrow().column("key").to_pylist())
            held = {key.rsplit("|", 1)[0] for key in existing}
            added = [page for pid, page in pages.items() if pid not in held]
            gone = sorted(key for key in existing if key.rsplit("|", 1)[0] not in pages)
            removed = {key.rsplit("|", 1)[0] for key in gone}
            rewrite = rewrite or len(added) + len(removed) > max(REWRITE_SHARE * len(held), REWRITE_MIN_PAGES)
            schema = _schema(model, _dimension(store, model, pages), state)
            new = _chunks(store, pages.values() if rewrite else added)
            if rewrite:
                # All rows in one commit: `add(mode="overwrite")` keeps the table (and its tags) in place, so
                # a reader never finds it missing, unlike dropping and creating it.
                data = pa.Table.from_pylist(list(_rows(store, model, new)), schema=schema)
                if table is None:
                    table = db.create_table(TABLE, data=data)
                else:
                    deleted = table.count_rows()
                    table.add(data, mode="overwrite")
                inserted = len(new)
            elif new or gone:
                assert table is not None
                merge = table.merge_insert("key").when_not_matched_insert_all()
                if gone:
                    merge = merge.when_not_matched_by_source_delete(
                        "key IN (" + ",".join("'" + k.replace("'", "''") + "'" for k in gone) + ")"
                    )
                result = merge.execute(pa.Table.from_pylist(list(_rows(store, model, new)), schema=schema))
                inserted, deleted = result.num_inserted_rows, result.num_deleted_rows
        assert table is not None
        _update_indexes(table, bool(inserted or deleted), rewrite, ann_min_rows)
        if not rewrite:  # a rewrite wrote the state with its schema
            table.update_field_metadata(
                {"path": "key", "metadata": {"gitwiki.state": json.dumps(state, sort_keys=True)}}
            )
    assert table is not None
    tag = _tag(table, states[0].commit)
    return ExportReport(
        uri,
        tuple(s.corpus for s in states),
        table.count_rows(),
        model,
        time.perf_counter() - started,
        inserted,
        deleted,
        table.version,
        tag,
        _has_vector_index(table),
    )


def _has_vector_index(table: Table) -> bool:
    return any(i.columns == ["vector"] for i in table.list_indices())


def _update_indexes(table: Table, changed: bool, rewritten: bool, ann_min_rows: int) -> None:
    from gitwiki.native import numpy

    numpy()  # (imported already by `connect`: the guard's rule, tests/test_native.py)
    from lancedb.index import FTS, IvfHnswSq

    indexed = {tuple(i.columns) for i in table.list_indices()}
    if rewritten or ("fts",) not in indexed:
        table.create_index("fts", config=FTS(), replace=True)
    if rewritten or ("terms",) not in indexed:
        # The tokens as they are: the SQLite index's, already lower-cased and stemmed.
        plain = FTS(
            base_tokenizer="whitespace",
            lower_case=False,
            stem=False,
            remove_stop_words=False,
            ascii_folding=False,
            max_token_length=None,
        )
        table.create_index("terms", config=plain, replace=True)
    elif changed:
        # Folds the new rows into the full-text and vector indexes and compacts small fragments; until then
        # they are searched unindexed, so this is for speed only. Old versions stay 7 days (lancedb's default).
        table.optimize()
    if (
        "vector" in table.schema.names
        and table.count_rows() >= ann_min_rows
        and (rewritten or ("vector",) not in indexed)
    ):
        # lancedb's defaults: about sqrt(rows) partitions, m = 20, ef_construction = 300 (EF says why HNSW).
        table.create_index("vector", config=IvfHnswSq(distance_type="cosine"), replace=True)


def _tag(table: Table, commit: str) -> str:
    """Tag the table's version as the one readers use (unless it already is), and drop the older tags."""
    ours = sorted(((t["version"], name) for name, t in table.tags.list().items() if name.startswith(TAG_PREFIX)))
    if ours and ours[-1][0] == table.version:
        return ours[-1][1]
    name = f"{TAG_PREFIX}{table.version}-{commit or 'none'}"
    table.tags.create(name, table.version)
    for _, old in ours[: max(0, len(ours) + 1 - TAGS_KEPT)]:
        with contextlib.suppress(Exception):  # another export running at the same time deleted it first
            table.tags.delete(old)
    return name


class LanceReader:
    """Search a table written by `export`, as of its newest tagged version. Keep one per process: it checks
    the tags before each query (one listing: ~1 ms on a local disk, one LIST request on S3) and moves to a
    newer export when there is one."""

    def __init__(self, uri: str):
        # A local folder that is not there is a typo, not a table to wait for: lancedb.connect would make it
        if "://" not in uri and not Path(uri).expanduser().is_dir():
            table = None
        else:
            table = _open(connect(uri))
        if table is None:
            raise NotFoundError(
                f"no gitwiki table at {uri}; run `gitwiki lance export` (or the Action with publish: s3)"
            )
        self.table = table
        self.uri = uri
        self.version = -1
        self._tokens: tuple[int, int] | None = None  # (version, the tokens of `terms`): `statistics`
        self.refresh()

    def refresh(self) -> None:
        """Move to the newest tagged version (the latest one for a table exported before tags)."""
        try:
            tags = self.table.tags.list()
        except Exception:  # lance raises RuntimeError "Not found" (and others alike)
            # An export dropped an old tag between the listing and the read of its file (bench_concurrency saw
            # 1 such read in 3,896). The version already open is complete: answer from it, look again next time.
            if self.version >= 0:
                return
            tags = self.table.tags.list()
        tagged = [t["version"] for name, t in tags.items() if name.startswith(TAG_PREFIX)]
        if not tagged:
            self.table.checkout_latest()
        elif max(tagged) != self.version:
            self.table.checkout(max(tagged))
        else:
            return
        self.version = self.table.version
        schema = self.table.schema
        if _recorded(self.table).get("layout") != LAYOUT:
            raise StoreError(
                f"the table at {self.uri} was written by another gitwiki version; run `gitwiki lance export` "
                "(the export rewrites it in place)"
            )
        self.model = (schema.metadata or {}).get(b"gitwiki.model", b"").decode() or None
        self.has_vectors = "vector" in schema.names
        self.ann = self.has_vectors and _has_vector_index(self.table)
        self.commits = {name: s["commit"] for name, s in _recorded(self.table).get("corpora", {}).items()}

    def corpora(self) -> dict[str, str]:
        """Corpus name → the commit its rows reflect."""
        self.refresh()
        return dict(self.commits)

    def corpus(self, name: str | None, default: str) -> str:
        """The corpus a query names, else `default` (the configured one) if the table holds it, else its first."""
        names = sorted(self.commits)
        if name is None:
            name = default if default in self.commits or not names else names[0]
        if names and name not in self.commits:
            raise UnknownCorpus(f"the table at {self.uri} holds no corpus {name!r}; choose one of: {', '.join(names)}")
        return name

    def ground(self, config: Config, query: str, corpus: str | None, options: SearchOptions) -> SearchResult:
        """What `gitwiki ground` answers from the table: the embedder is the table's model (a reader has no
        index of its own to pick one), loaded only when the mode needs it."""
        self.refresh()
        embedder = self.embedder(config, options.mode)
        return self.search(query, self.corpus(corpus, config.corpus().name), options, embedder, refresh=False)

    def embedder(self, config: Config, mode: str) -> Embedder | None:
        """The table's model, loaded when `mode` needs it and the table has vectors."""
        if mode == "lexical" or not self.has_vectors or not self.model:
            return None
        settings = config.embeddings
        if model_key(settings) != self.model:  # a model path configured for another model would not fit
            settings = config_for(self.model, settings)
        return load_embedder(settings) if settings.enabled else None

    def search(
        self, query: str, corpus: str, options: SearchOptions, embedder: Embedder | None, refresh: bool = True
    ) -> SearchResult:
        check_query(query)
        if not query.strip():
            raise UsageError("the query is empty; say what to look for")
        if refresh:
            self.refresh()
        found, by_id = self._candidates(query, corpus, options, embedder)
        hits = rank_pages(
            found,
            fusion=options.fusion,
            top_files=options.top_files,
            chunks_per_file=options.chunks_per_file,
            limit=options.limit,
            explain=options.explain,
        )
        # with dense, the weak flag needs every chunk's cosine: the table gives its top
        judge = found.mode == "lexical"
        docs = self.documents(query, hits, by_id, found, None, 1.0, options, judge)
        return SearchResult(query, corpus, self.commits.get(corpus, ""), found.mode, docs)

    def documents(
        self,
        query: str,
        hits: list[PageHit],
        by_id: dict[int, dict[str, Any]],
        found: Candidates,
        background: Background | None,
        known: float,
        options: SearchOptions,
        judge: bool = True,
    ) -> list[DocResult]:
        """The pages `hits` as shown, from their candidate rows `by_id`; the weak flag when `judge`."""
        titles = {h.path: by_id[h.chunks[0][0]]["title"] or fallback_title(h.path) for h in hits}
        weak: dict[str, bool] = {}
        if judge:
            tokens = {h.path: _tokens(titles[h.path], by_id[h.chunks[0][0]]) for h in hits}
            judged = judge_pages(hits, set(tokenize(query)), tokens, found, background, known)
            hits, weak = [h for h, _ in judged], {h.path: j.weak for h, j in judged}
        terms = {w.lower() for w in words(query) if w.lower() not in STOP_WORDS}
        return [
            DocResult(
                hit.path,
                titles[hit.path],
                hit.score,
                _shown(hit, by_id, terms, options),
                weak.get(hit.path, False),
                explain=hit.trace,
            )
            for hit in hits
        ]

    def statistics(self, query: str) -> TermStats:
        """The table's BM25 statistics for the query's terms, as `FullText.term_stats` gives an index's: its rows,
        their tokens and the rows holding each term, all in `terms` (the tokens the SQLite index holds)."""
        self.refresh()
        if self._tokens is None or self._tokens[0] != self.version:
            column = self.table.search().select(["terms"]).limit(None).to_arrow().column("terms")
            self._tokens = (self.version, sum(len(t.split()) for t in column.to_pylist() if t))
        rows = self.table.count_rows()
        holding = {}
        for term in query_terms(query):
            fts = self.table.search(term, query_type="fts", fts_columns="terms").select(["_score"])
            holding[term] = fts.limit(max(rows, 1)).to_arrow().num_rows
        return TermStats(rows, self._tokens[1], holding)

    def pool(
        self, query: str, corpora: list[str], options: SearchOptions, embedder: Embedder | None, stats: TermStats
    ) -> tuple[Pool, dict[int, dict[str, Any]]]:
        """The candidates of `corpora` for a search beside other indexes (`sources.shared_index.LanceShard`): BM25
        scored with `stats` over `terms` (`statistics.bm25`, as a SQLite index scores), cosines as they are; a
        page of two of the corpora is taken from the first. No background: the table gives only its top cosines."""
        self.refresh()
        usable = embedder is not None and self.has_vectors and embedder.model_id == self.model
        vector = embedder.embed_query(query) if embedder is not None and usable and options.mode != "lexical" else None
        mode = options.mode if vector is not None else "lexical"
        where = "corpus IN (" + ",".join("'" + c.replace("'", "''") + "'" for c in corpora) + ")"
        limit = max(CANDIDATES, options.limit)
        order = {c: i for i, c in enumerate(corpora)}
        columns = ["key", "corpus", "path", "title", "breadcrumb", "start_line", "end_line", "text", "terms"]
        rows: dict[tuple[str, int], dict[str, Any]] = {}  # (path, start line) → its row of the first corpus

        def kept(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
            for row in sorted(found, key=lambda r: order.get(r["corpus"], len(order))):
                rows.setdefault((row["path"], row["start_line"]), row)
            return [row for row in found if rows[(row["path"], row["start_line"])] is row]

        ids: dict[str, int] = {}
        rankings: dict[str, Ranked] = {}
        terms = query_terms(query)
        if mode in ("hybrid", "lexical") and terms:
            fts = self.table.search(" ".join(terms), query_type="fts", fts_columns="terms")
            found = kept(fts.where(where, prefilter=True).select([*columns, "_score"]).limit(4 * limit).to_list())
            scored = [(row, bm25(*frequencies(row["terms"].split("\n"), terms, FTS_WEIGHTS), stats)) for row in found]
            scored.sort(key=lambda rs: -rs[1])
            cut = candidates(((ids.setdefault(r["key"], len(ids)), r["path"], s) for r, s in scored), options.top_files)
            rankings["lexical"] = [(cid, s) for cid, _, s in cut]
        if vector is not None:
            dense = cast(
                "LanceVectorQueryBuilder", self.table.search(vector, query_type="vector", vector_column_name="vector")
            ).distance_type("cosine")
            if self.ann:
                dense = dense.ef(max(EF, limit))
            found = kept(dense.where(where, prefilter=True).select([*columns, "_distance"]).limit(limit).to_list())
            rankings["dense"] = [(ids.setdefault(row["key"], len(ids)), 1.0 - row["_distance"]) for row in found]
        by_key = {row["key"]: row for row in rows.values()}
        by_id = {i: by_key[key] for key, i in ids.items()}
        page_of = {i: row["path"] for i, row in by_id.items()}
        return Pool(Candidates(rankings, page_of, mode), None, 0), by_id

    def _candidates(
        self, query: str, corpus: str, options: SearchOptions, embedder: Embedder | None
    ) -> tuple[Candidates, dict[int, dict[str, Any]]]:
        """Each ranker's candidates from the table, and the row of each candidate chunk (ids numbered per query)."""
        usable = embedder is not None and self.has_vectors and embedder.model_id == self.model
        vector = embedder.embed_query(query) if embedder is not None and usable and options.mode != "lexical" else None
        mode = options.mode if vector is not None else "lexical"
        where = "corpus = '" + corpus.replace("'", "''") + "'"
        limit = max(CANDIDATES, options.limit)
        rows: dict[str, dict[str, Any]] = {}  # key → row, for every chunk either ranker returned
        ids: dict[str, int] = {}
        rankings: dict[str, Ranked] = {}

        def ranked(found: list[dict[str, Any]], score: str) -> Ranked:
            for row in found:
                rows.setdefault(row["key"], row)
            return [(ids.setdefault(row["key"], len(ids)), float(row[score])) for row in found]

        columns = ["key", "path", "title", "breadcrumb", "start_line", "end_line", "text"]
        if mode in ("hybrid", "lexical"):
            fts = self.table.search(query, query_type="fts", fts_columns="fts")
            found = fts.where(where, prefilter=True).select([*columns, "_score"]).limit(limit).to_list()
            rankings["lexical"] = ranked(found, "_score")
        if vector is not None:
            # lancedb annotates search() with the base builder; a vector query returns its vector builder.
            dense = cast(
                "LanceVectorQueryBuilder", self.table.search(vector, query_type="vector", vector_column_name="vector")
            ).distance_type("cosine")
            if self.ann:
                dense = dense.ef(max(EF, limit))  # lancedb refuses fewer candidates than rows asked for
            # Scores are named in the projection: lancedb 0.40 still adds them unasked, and says (in a warning on
            # some query shapes) that a later version will stop.
            found = dense.where(where, prefilter=True).select([*columns, "_distance"]).limit(limit).to_list()
            for row in found:  # cosine distance → cosine similarity, so higher is better everywhere
                row["_distance"] = 1.0 - row["_distance"]
            rankings["dense"] = ranked(found, "_distance")
        by_id = {i: rows[key] for key, i in ids.items()}
        return Candidates(rankings, {i: row["path"] for i, row in by_id.items()}, mode), by_id


def _tokens(title: str, row: dict[str, Any]) -> set[str]:
    """The terms the weak flag reads in a chunk: its page title, breadcrumb and text, as the index tokenizes."""
    return set(tokenize(" ".join((title, *row["breadcrumb"], row["text"]))))


def _shown(
    hit: PageHit, by_id: dict[int, dict[str, Any]], terms: set[str], options: SearchOptions
) -> list[ChunkResult]:
    """A page's chunks as shown: whole (`full`) or a snippet around the query's terms."""
    return [
        ChunkResult(
            list(by_id[i]["breadcrumb"]),
            by_id[i]["start_line"],
            by_id[i]["end_line"],
            s,
            by_id[i]["text"] if options.full else snippet(by_id[i]["text"], terms, options.snippet_chars),
        )
        for i, s in hit.chunks
    ]


def storage_uri(start: str | os.PathLike[str]) -> str | None:
    """`[storage] uri` as seen from `start`, a folder in no checkout (the user config and a .gitwiki.toml there)."""
    from gitwiki import config as config_mod

    return config_mod.load(Path(start).resolve()).storage.uri
