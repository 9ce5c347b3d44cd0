"""The scale-out path: the indexed corpora as one LanceDB table, at a local path or in object storage.

`export` writes every current corpus state (one row per page chunk: path, blob, breadcrumb, lines,
text, vector) to the table `chunks` at `[storage] uri` (e.g. s3://bucket/wiki); a `LanceReader` answers
queries from it with LanceDB's own full-text, vector or hybrid (RRF) search, so many readers share one
index without a local copy. S3 credentials and endpoint come from the usual AWS_* variables.

lancedb and pyarrow are imported inside functions: nothing on the hook or lint path pays for them.
"""

from __future__ import annotations

import os
import time
import warnings
from typing import TYPE_CHECKING, NamedTuple, cast

from gitwiki.embed import Embedder
from gitwiki.errors import NotFoundError, StoreError, UsageError
from gitwiki.markdown.chunker import fallback_title
from gitwiki.ranking import rollup, snippet
from gitwiki.search import CANDIDATES, ChunkResult, DocResult, SearchOptions, SearchResult
from gitwiki.store import Store, vector_matrix
from gitwiki.tokens import STOP_WORDS, words

if TYPE_CHECKING:
    from lancedb import DBConnection
    from lancedb.query import LanceQueryBuilder, LanceVectorQueryBuilder

TABLE = "chunks"


class ExportReport(NamedTuple):
    uri: str
    corpora: tuple[str, ...]
    rows: int
    model: str | None
    seconds: float


def _connect(uri: str) -> DBConnection:
    # lance logs routine events ("no existing dataset, it will be created") as warnings on stderr.
    os.environ.setdefault("LANCEDB_LOG", "error")
    import lancedb

    try:
        return lancedb.connect(uri)
    except Exception as e:  # lancedb raises ValueError/OSError/its own errors for a bad URI or credentials
        raise StoreError(f"cannot open LanceDB at {uri} ({e}); check [storage] uri and the AWS_* credentials") from None


def export(store: Store, uri: str) -> ExportReport:
    """Replace the table at `uri` with the current state of every indexed corpus."""
    import pyarrow as pa

    started = time.perf_counter()
    states = store.states()
    if not states:
        raise StoreError("the index holds no corpus yet; run `gitwiki index` first")
    models = {s.model for s in states}
    if len(models) > 1:
        raise StoreError("corpora were indexed with different models; run `gitwiki index` first")
    model = models.pop()
    rows: list[dict] = []
    dim = None
    with store.read():
        for state in states:
            pages = store.pages(state.corpus)
            blobs = set(pages.values())
            infos = store.blob_info(blobs)
            chunks = store.chunks_of(blobs)
            vectors = {}
            if model:
                rows_of, raw = store.vectors(model, blobs)
                matrix = vector_matrix(raw, len(rows_of))
                vectors = dict(zip((cid for cid, _ in rows_of), matrix, strict=False))
                dim = matrix.shape[1] if rows_of else dim
            by_blob: dict[str, list] = {}
            for chunk in chunks:
                by_blob.setdefault(chunk.blob, []).append(chunk)
            for path, blob in sorted(pages.items()):
                title = infos[blob].title if blob in infos else ""
                for chunk in by_blob.get(blob, ()):
                    row = {
                        "corpus": state.corpus,
                        "commit": state.commit,
                        "path": path,
                        "blob": blob,
                        "title": title,
                        "breadcrumb": list(chunk.breadcrumb),
                        "start_line": chunk.start_line,
                        "end_line": chunk.end_line,
                        "text": chunk.text,
                        "fts": " ".join((title, *chunk.breadcrumb, chunk.text)),
                    }
                    if model:
                        if chunk.id not in vectors:
                            raise StoreError(
                                f"chunk {chunk.id} of {path} has no {model} vector; run `gitwiki index` first"
                            )
                        row["vector"] = vectors[chunk.id]
                    rows.append(row)
    fields = [
        ("corpus", pa.string()),
        ("commit", pa.string()),
        ("path", pa.string()),
        ("blob", pa.string()),
        ("title", pa.string()),
        ("breadcrumb", pa.list_(pa.string())),
        ("start_line", pa.int32()),
        ("end_line", pa.int32()),
        ("text", pa.string()),
        ("fts", pa.string()),
    ]
    if model and dim:
        fields.append(("vector", pa.list_(pa.float32(), dim)))
    schema = pa.schema(fields, metadata={"gitwiki.model": model or ""})
    db = _connect(uri)
    table = db.create_table(TABLE, data=pa.Table.from_pylist(rows, schema=schema), mode="overwrite")
    with warnings.catch_warnings():  # create_fts_index is deprecated in name only; the native index is what we want
        warnings.simplefilter("ignore")
        table.create_fts_index("fts", use_tantivy=False, replace=True)
    return ExportReport(uri, tuple(s.corpus for s in states), len(rows), model, time.perf_counter() - started)


class LanceReader:
    """Search a table written by `export`. Holds the open table: keep one per process."""

    def __init__(self, uri: str):
        db = _connect(uri)
        try:
            self.table = db.open_table(TABLE)
        except Exception:  # lancedb raises ValueError or FileNotFoundError for a missing table
            raise NotFoundError(
                f"no gitwiki table at {uri}; run `gitwiki lance export` (or the Action with publish: s3)"
            ) from None
        self.uri = uri
        schema = self.table.schema
        self.model = (schema.metadata or {}).get(b"gitwiki.model", b"").decode() or None
        self.has_vectors = "vector" in schema.names

    def search(self, query: str, corpus: str, options: SearchOptions, embedder: Embedder | None) -> SearchResult:
        if not query.strip():
            raise UsageError("the query is empty; say what to look for")
        usable = embedder is not None and self.has_vectors and embedder.model_id == self.model
        vector = embedder.embed_query(query) if embedder is not None and usable and options.mode != "lexical" else None
        mode = options.mode if vector is not None else "lexical"
        where = "corpus = '" + corpus.replace("'", "''") + "'"
        limit = max(CANDIDATES, options.limit)
        search: LanceQueryBuilder
        if vector is None:
            search = self.table.search(query, query_type="fts", fts_columns="fts")
            score = "_score"
        elif mode == "dense":
            # lancedb annotates search() with the base builder; a vector query returns its vector builder.
            search = cast(
                "LanceVectorQueryBuilder", self.table.search(vector, query_type="vector", vector_column_name="vector")
            ).distance_type("cosine")
            score = "_distance"
        else:
            search = (
                self.table.search(query_type="hybrid", vector_column_name="vector", fts_columns="fts")
                .vector(vector)
                .text(query)
            )
            score = "_relevance_score"
        rows = search.where(where, prefilter=True).limit(limit).to_list()
        if score == "_distance":  # cosine distance: turn into the cosine similarity so higher is better everywhere
            for row in rows:
                row[score] = 1.0 - row[score]
        ranked = [(i, float(row[score])) for i, row in enumerate(rows)]
        hits = rollup(
            ranked,
            {i: row["path"] for i, row in enumerate(rows)},
            options.top_files,
            options.chunks_per_file,
            options.limit,
        )
        terms = {w.lower() for w in words(query) if w.lower() not in STOP_WORDS}
        docs = []
        for hit in hits:
            first = rows[hit.chunks[0][0]]
            chunks = [
                ChunkResult(
                    list(rows[i]["breadcrumb"]),
                    rows[i]["start_line"],
                    rows[i]["end_line"],
                    s,
                    rows[i]["text"] if options.full else snippet(rows[i]["text"], terms, options.snippet_chars),
                )
                for i, s in hit.chunks
            ]
            docs.append(DocResult(hit.path, first["title"] or fallback_title(hit.path), hit.score, chunks))
        commit = rows[0]["commit"] if rows else ""
        return SearchResult(query, corpus, commit, mode, docs)
