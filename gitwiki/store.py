"""The local index: one SQLite database in the index dir, content-addressed by git blob id.

- `blobs`/`chunks`: a page version's chunks, keyed by its blob id (so renames and reverts cost nothing);
- `fts`: an FTS5 table over pre-tokenized chunk text (BM25), rowid = chunk id;
- `vectors`: the embedding cache, keyed by (model id, sha256 of the embedded text);
- `pages`/`states`: per corpus, the indexed commit, corpus tree id, model and path → blob listing.

SQLite gives atomic transactions and consistent reads for free: a crash mid-update leaves the last
committed state, and readers in WAL mode never see a half-written one. Writers also take a file lock
(`lock`) so that whole index runs, not only single transactions, are serialized.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sized
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from gitwiki.errors import StoreError
from gitwiki.fs import atomic_write
from gitwiki.tokens import TOKENS_VERSION, fts_text

if TYPE_CHECKING:
    import filelock
    import numpy as np

    from gitwiki.markdown.chunker import ParsedPage

T = TypeVar("T")

SCHEMA_VERSION = 1
DB_NAME = "index.sqlite"
LOCK_NAME = "lock"
HOLDER_NAME = "lock.pid"  # who holds the writer lock; left behind only by a writer that died holding it
DAMAGED_SUFFIX = ".damaged"  # a damaged database is moved aside to index.sqlite.damaged, not deleted
PREVIOUS_SUFFIX = ".previous"  # a sound one rebuilt on request is kept as index.sqlite.previous
REBUILD_ASKED = "rebuilding it as asked (--rebuild)"  # the `rebuild` reason of `gitwiki index --rebuild`
# Written when a query meets a row it cannot read (quick_check cannot see those): the next open, or the
# next `gitwiki index` in a long-lived process, moves the database aside and rebuilds it from git.
DAMAGED_MARK = "index.sqlite.unreadable"
LOCK_TIMEOUT = 120.0

SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE blobs(blob TEXT PRIMARY KEY, title TEXT NOT NULL, tags TEXT NOT NULL, description TEXT);
CREATE TABLE chunks(
    id INTEGER PRIMARY KEY, blob TEXT NOT NULL, ord INTEGER NOT NULL, breadcrumb TEXT NOT NULL,
    level INTEGER NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, text TEXT NOT NULL,
    hash TEXT NOT NULL);
CREATE INDEX chunks_blob ON chunks(blob);
CREATE VIRTUAL TABLE fts USING fts5(head, body, tokenize='unicode61 remove_diacritics 0');
CREATE TABLE vectors(model TEXT NOT NULL, hash TEXT NOT NULL, vec BLOB NOT NULL,
    PRIMARY KEY(model, hash)) WITHOUT ROWID;
CREATE TABLE pages(corpus TEXT NOT NULL, path TEXT NOT NULL, blob TEXT NOT NULL,
    PRIMARY KEY(corpus, path)) WITHOUT ROWID;
CREATE TABLE states(corpus TEXT PRIMARY KEY, commit_id TEXT NOT NULL, tree TEXT NOT NULL, model TEXT,
    indexed_at REAL NOT NULL);
"""
# BM25 column weights for (head, body): a word in a heading or title says more than one in the text.
FTS_WEIGHTS = (2.0, 1.0)


class State(NamedTuple):
    corpus: str
    commit: str
    tree: str  # the corpus subtree id ("" for an empty corpus)
    model: str | None  # None: indexed without vectors (lexical mode)
    indexed_at: float


class ChunkRow(NamedTuple):
    id: int
    blob: str
    ord: int
    breadcrumb: tuple[str, ...]
    level: int
    start_line: int
    end_line: int
    text: str


class BlobInfo(NamedTuple):
    title: str  # "" when the page has neither front-matter title nor H1
    tags: tuple[str, ...]
    description: str | None


def embed_text(breadcrumb: tuple[str, ...], text: str, title: str) -> str:
    """What the embedder reads for a chunk: where it sits, then what it says."""
    context = " > ".join(breadcrumb) or title
    return f"{context}\n{text}" if context else text


def text_hash(text: str) -> str:
    import hashlib  # loading OpenSSL costs an agent hook ~2.5 ms, and the hooks only read (docs/agent-hooks.md)

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Store:
    def __init__(self, index_dir: Path, conn: sqlite3.Connection) -> None:
        self.index_dir = index_dir
        self.conn = conn
        self._inode = _inode(index_dir / DB_NAME)

    # ---- opening -------------------------------------------------------------------------------

    @classmethod
    def open(cls, index_dir: Path, rebuild: str | None = None) -> Store:
        """Open (creating if needed) the index. A damaged one, or one of another schema, is moved aside and
        rebuilt from git, as is any when `rebuild` says why; one left by a writer that died is checked
        first. An index dir this process cannot write is opened read-only: it answers while it is current."""
        path = index_dir / DB_NAME
        if path.is_file() and not os.access(index_dir, os.W_OK):
            return cls(index_dir, _connect(path, read_only=True))
        try:
            index_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create index dir {index_dir} ({e.strerror}); set [storage] index_dir") from None
        mark = _marked(index_dir)
        rebuild = rebuild or (mark and f"it is damaged ({mark})")
        try:
            if rebuild:
                with writer_lock(index_dir):
                    _move_aside(path, rebuild)
            elif _writer_died(index_dir):
                try:
                    with writer_lock(index_dir, timeout=0):
                        if _writer_died(index_dir):
                            _check_after_crash(path)
                except IndexBusy:
                    pass  # the pid file is a live writer's: nothing died
            return cls._open_checked(index_dir, path)
        except IndexDamaged as e:
            with writer_lock(index_dir):
                _move_aside(path, f"it is damaged ({e.reason})")
                return cls._open_checked(index_dir, path)

    @classmethod
    def open_existing(cls, index_dir: Path) -> Store | None:
        """The index as it is, for a reader that must neither create, repair nor wait on it (the agent hooks):
        None when there is no usable one."""
        path = index_dir / DB_NAME
        if not path.is_file():
            return None
        # Read-only: a read-write connection that is the last to close checkpoints the WAL, a write a hook
        # must not do (nor wait for).
        conn = sqlite3.connect(
            f"{path.as_uri()}?mode=ro", uri=True, isolation_level=None, timeout=1.0, factory=_Connection
        )
        conn.index_dir = index_dir
        try:
            if _schema_version(conn) == SCHEMA_VERSION:
                return cls(index_dir, conn)
        except (sqlite3.DatabaseError, StoreError):
            pass
        conn.close()
        return None

    @classmethod
    def _open_checked(cls, index_dir: Path, path: Path) -> Store:
        conn = _connect(path)
        version = _schema_version(conn)
        if version == SCHEMA_VERSION:
            if _tokens_version(conn) != TOKENS_VERSION:
                _retokenize_if_writable(index_dir, conn)
            return cls(index_dir, conn)
        with writer_lock(index_dir):
            version = _schema_version(conn)  # another process may have created it meanwhile
            if version not in (None, SCHEMA_VERSION):
                conn.close()
                _move_aside(path, f"its schema {version} is not {SCHEMA_VERSION}")
                conn = _connect(path)
                version = None
            if version is None:
                with _transaction(conn):
                    _create(conn)
        return cls(index_dir, conn)

    def check(self, full: bool = False) -> str | None:
        """None when the database is sound, else SQLite's first complaint (`integrity_problem`). It reads
        the whole file, so it runs where damage matters, never per query. `full` also checks the FTS index
        and that every row reads back (`row_problem`); rows that do not are marked (`DAMAGED_MARK`), so the
        next open rebuilds them even where the next run would not check rows (`repo sync`)."""
        problem = _marked(self.index_dir) or integrity_problem(self.conn, full)
        if problem is None and full and (problem := row_problem(self.conn, self.index_dir)):
            _mark(self.index_dir, problem)
        return problem

    @classmethod
    def open_file(cls, path: Path, readonly: bool = False) -> Store:
        """A database file outside the live index (a snapshot being packed, an archive being checked) as it
        is: no schema check, no rebuild, no WAL."""
        if readonly:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            conn.execute("PRAGMA trusted_schema=OFF")  # SQLite's advice for files from elsewhere
            return cls(path.parent, conn)
        return cls(path.parent, sqlite3.connect(path, isolation_level=None))

    def close(self) -> None:
        self.conn.close()

    def replaced(self) -> bool:
        """Whether the database file was replaced since this store opened it (`gitwiki pull`, an artifact
        install or a rebuild in another process): this connection still reads the old, unlinked file."""
        return _inode(self.index_dir / DB_NAME) != self._inode

    def data_version(self) -> int:
        """Changes whenever another connection commits to this database (SQLite's own counter)."""
        return self.conn.execute("PRAGMA data_version").fetchone()[0]

    def schema_version(self) -> int | None:
        return _schema_version(self.conn)

    def schema_objects(self) -> list[tuple[str, str, str, str | None]]:
        """Every table, index, trigger and view the database defines, as (type, name, table, sql), sorted."""
        return sorted(self.conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"), key=lambda r: r[:2])

    def page_paths(self) -> list[tuple[str, str]]:
        """(corpus, path) of every page of every corpus state."""
        return [(r[0], r[1]) for r in self.conn.execute("SELECT corpus, path FROM pages")]

    def lock(self, timeout: float = LOCK_TIMEOUT) -> AbstractContextManager[None]:
        return writer_lock(self.index_dir, timeout)

    def read(self) -> AbstractContextManager[None]:
        """A consistent snapshot for several reads (one read transaction)."""
        return _transaction(self.conn, "BEGIN DEFERRED")

    def write(self) -> AbstractContextManager[None]:
        return _transaction(self.conn, "BEGIN IMMEDIATE")

    # ---- blobs and chunks ------------------------------------------------------------------------

    def _select_in(
        self,
        sql: str,
        keys: Iterable[str | int],
        before: tuple[str | int, ...] = (),
        after: tuple[str | int, ...] = (),
    ) -> Iterator[tuple[Any, ...]]:
        """Rows of `sql`, whose `{marks}` is an IN list over `keys`, in batches (SQLite caps bound parameters)."""
        for batch in _batches(list(keys)):
            yield from self.conn.execute(sql.format(marks=_marks(batch)), [*before, *batch, *after])

    def known_blobs(self, blobs: Iterable[str]) -> set[str]:
        return {r[0] for r in self._select_in("SELECT blob FROM blobs WHERE blob IN ({marks})", blobs)}

    def add_blob(self, blob: str, page: ParsedPage) -> None:
        """Insert one page version's chunks (call inside `write()`)."""
        self.conn.execute(
            "INSERT OR REPLACE INTO blobs VALUES (?,?,?,?)", (blob, page.title, json.dumps(page.tags), page.description)
        )
        for chunk in page.chunks:
            cur = self.conn.execute(
                "INSERT INTO chunks(blob, ord, breadcrumb, level, start_line, end_line, text, hash) VALUES "
                "(?,?,?,?,?,?,?,?)",
                (
                    blob,
                    chunk.ord,
                    json.dumps(chunk.breadcrumb),
                    chunk.level,
                    chunk.start_line,
                    chunk.end_line,
                    chunk.text,
                    text_hash(embed_text(chunk.breadcrumb, chunk.text, page.title)),
                ),
            )
            self.conn.execute(
                "INSERT INTO fts(rowid, head, body) VALUES (?,?,?)",
                (cur.lastrowid, _fts_head(page.title, chunk.breadcrumb, page.tags), fts_text(chunk.text)),
            )

    def blob_info(self, blobs: Iterable[str]) -> dict[str, BlobInfo]:
        rows = self._select_in("SELECT blob, title, tags, description FROM blobs WHERE blob IN ({marks})", blobs)
        return {
            blob: BlobInfo(title, string_list(tags, self.index_dir), description)
            for blob, title, tags, description in rows
        }

    def chunks_of(self, blobs: Iterable[str]) -> list[ChunkRow]:
        rows = self._select_in(f"SELECT {_CHUNK_COLS} FROM chunks WHERE blob IN ({{marks}})", blobs)
        return sorted((_chunk_row(r, self.index_dir) for r in rows), key=lambda row: row.id)

    def last_sections(self, blobs: Iterable[str], level: int) -> dict[str, tuple[int, tuple[str, ...]]]:
        """Per blob: how many sections it has at heading `level`, and the breadcrumb of the last one."""
        # SQLite takes the bare column `breadcrumb` from the row that holds max(ord).
        q = (
            "SELECT blob, count(*), breadcrumb, max(ord) FROM chunks WHERE level = ? AND blob IN ({marks}) "
            "GROUP BY blob"
        )
        rows = self._select_in(q, blobs, before=(level,))
        return {blob: (count, string_list(crumb, self.index_dir)) for blob, count, crumb, _ in rows}

    def chunks_by_id(self, ids: Iterable[int]) -> dict[int, ChunkRow]:
        return {
            r[0]: _chunk_row(r, self.index_dir)
            for r in self._select_in(f"SELECT {_CHUNK_COLS} FROM chunks WHERE id IN ({{marks}})", ids)
        }

    # ---- vectors ---------------------------------------------------------------------------------

    def missing_vectors(self, model: str, blobs: Iterable[str]) -> list[tuple[str, str]]:
        """(hash, text to embed) for chunks of `blobs` that have no vector for `model`, deduplicated."""
        need: dict[str, str] = {}
        titles = {b: info.title for b, info in self.blob_info(blobs).items()}
        q = (
            "SELECT c.blob, c.hash, c.breadcrumb, c.text FROM chunks c WHERE c.blob IN ({marks}) "
            "AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.model = ? AND v.hash = c.hash)"
        )
        for blob, h, crumb, text in self._select_in(q, titles, after=(model,)):
            if h not in need:
                need[h] = embed_text(string_list(crumb, self.index_dir), text, titles[blob])
        return list(need.items())

    def put_vectors(self, model: str, hashes: list[str], matrix: np.ndarray) -> None:
        self.conn.executemany(
            "INSERT OR REPLACE INTO vectors VALUES (?,?,?)",
            [(model, h, row.astype("<f4").tobytes()) for h, row in zip(hashes, matrix, strict=False)],
        )

    def vectors(self, model: str, blobs: Iterable[str]) -> tuple[list[tuple[int, str]], bytes]:
        """((chunk id, blob) per row, concatenated float32 vectors) for the chunks of `blobs` that have one."""
        rows: list[tuple[int, str]] = []
        parts: list[bytes] = []
        q = (
            "SELECT c.id, c.blob, v.vec FROM chunks c JOIN vectors v ON v.model = ? AND v.hash = c.hash"
            " WHERE c.blob IN ({marks})"
        )
        for cid, blob, vec in self._select_in(q, blobs, before=(model,)):
            rows.append((cid, blob))
            parts.append(vec)
        return rows, b"".join(parts)

    # ---- lexical ---------------------------------------------------------------------------------

    def lexical(self, match: str, limit: int) -> list[tuple[int, str, float]]:
        """(chunk id, blob, BM25 score, higher is better) for the best `limit` matches in the whole store."""
        q = (
            f"SELECT m.id, c.blob, m.s FROM (SELECT rowid AS id, -bm25(fts, {FTS_WEIGHTS[0]}, {FTS_WEIGHTS[1]}) AS s "
            "FROM fts WHERE fts MATCH ? ORDER BY s DESC LIMIT ?) m JOIN chunks c ON c.id = m.id ORDER BY m.s DESC"
        )
        try:
            # fetchall, not iteration: _Cursor.__next__ is a Python call per row (400 rows per agent hook query)
            return self.conn.execute(q, (match, limit)).fetchall()
        except sqlite3.OperationalError as e:
            raise StoreError(f"full-text query failed ({e}); rephrase the query") from None

    def term_chunks(self, terms: Iterable[str]) -> dict[str, int]:
        """How many chunks hold each term (every indexed page version counts), from FTS5's vocabulary."""
        self.conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_vocab USING fts5vocab(main, fts, 'row')")
        return dict(self._select_in("SELECT term, doc FROM temp.fts_vocab WHERE term IN ({marks})", terms))

    def chunk_total(self) -> int:
        return self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]

    def mean_chunk_terms(self, blobs: Iterable[str]) -> float:
        """The mean count of indexed terms (title, headings, tags and text) of the chunks of `blobs`, 0 without
        chunks: the corpus statistic score fusion weighs its rankers by (ranking.length_weight)."""
        # Each FTS row is its terms joined by single spaces, so the spaces count them without reading them out.
        count = total = 0
        q = (
            "SELECT count(*), coalesce(sum(length(f.head) - length(replace(f.head, ' ', '')) + (f.head != '') + "
            "length(f.body) - length(replace(f.body, ' ', '')) + (f.body != '')), 0) "
            "FROM chunks c JOIN fts f ON f.rowid = c.id WHERE c.blob IN ({marks})"
        )
        for rows, terms in self._select_in(q, blobs):
            count += rows
            total += terms
        return total / count if count else 0.0

    def indexed_terms(self, ids: Iterable[int], head: bool = True) -> dict[int, set[str]]:
        """The terms the full-text index holds for each chunk (title, headings, tags unless not `head`, and
        text), as tokenized."""
        columns = "head, body" if head else "'', body"
        rows = self._select_in(f"SELECT rowid, {columns} FROM fts WHERE rowid IN ({{marks}})", ids)
        return {rowid: {*heading.split(), *body.split()} for rowid, heading, body in rows}

    # ---- corpus states ---------------------------------------------------------------------------

    def state(self, corpus: str) -> State | None:
        row = self.conn.execute(
            "SELECT corpus, commit_id, tree, model, indexed_at FROM states WHERE corpus = ?", (corpus,)
        ).fetchone()
        return State(*row) if row else None

    def states(self) -> list[State]:
        return [State(*r) for r in self.conn.execute("SELECT corpus, commit_id, tree, model, indexed_at FROM states")]

    def pages(self, corpus: str) -> dict[str, str]:
        return dict(self.conn.execute("SELECT path, blob FROM pages WHERE corpus = ?", (corpus,)).fetchall())

    def set_state(self, corpus: str, commit: str, tree: str, model: str | None, pages: dict[str, str]) -> None:
        """Switch a corpus to a new state (call inside `write()`)."""
        self.conn.execute("DELETE FROM pages WHERE corpus = ?", (corpus,))
        self.conn.executemany("INSERT INTO pages VALUES (?,?,?)", [(corpus, p, b) for p, b in pages.items()])
        self.conn.execute(
            "INSERT OR REPLACE INTO states VALUES (?,?,?,?,?)", (corpus, commit, tree, model, time.time())
        )

    def set_commit(self, corpus: str, commit: str) -> None:
        self.conn.execute(
            "UPDATE states SET commit_id = ?, indexed_at = ? WHERE corpus = ?", (commit, time.time(), corpus)
        )

    def drop_states(self, keep: set[str]) -> None:
        """Forget every corpus state not named in `keep` (their pages then count as unreferenced for gc)."""
        gone = [(s.corpus,) for s in self.states() if s.corpus not in keep]
        self.conn.executemany("DELETE FROM pages WHERE corpus = ?", gone)
        self.conn.executemany("DELETE FROM states WHERE corpus = ?", gone)

    def page_count(self, corpus: str) -> int:
        return self.conn.execute("SELECT count(*) FROM pages WHERE corpus = ?", (corpus,)).fetchone()[0]

    def gc(self, keep: Iterable[str] = ()) -> int:
        """Drop chunks of blobs no corpus state references (their vectors stay cached). Returns blobs dropped."""
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS keep(blob TEXT PRIMARY KEY)")
        self.conn.execute("DELETE FROM keep")
        self.conn.executemany("INSERT OR IGNORE INTO keep VALUES (?)", [(b,) for b in keep])
        dead = [
            r[0]
            for r in self.conn.execute(
                "SELECT blob FROM blobs WHERE blob NOT IN (SELECT blob FROM pages) AND blob NOT IN (SELECT "
                "blob FROM keep)"
            )
        ]
        for batch in _batches(dead):
            marks = _marks(batch)
            self.conn.execute(f"DELETE FROM fts WHERE rowid IN (SELECT id FROM chunks WHERE blob IN ({marks}))", batch)
            self.conn.execute(f"DELETE FROM chunks WHERE blob IN ({marks})", batch)
            self.conn.execute(f"DELETE FROM blobs WHERE blob IN ({marks})", batch)
        return len(dead)

    def drop(self, blobs: Iterable[str]) -> int:
        """Drop the chunks of `blobs` unless a corpus state references them: a page version that a write
        replaced in the worktree. Returns blobs dropped."""
        dead = list(
            set(blobs) - {r[0] for r in self._select_in("SELECT blob FROM pages WHERE blob IN ({marks})", blobs)}
        )
        for batch in _batches(dead):
            marks = _marks(batch)
            self.conn.execute(f"DELETE FROM fts WHERE rowid IN (SELECT id FROM chunks WHERE blob IN ({marks}))", batch)
            self.conn.execute(f"DELETE FROM chunks WHERE blob IN ({marks})", batch)
            self.conn.execute(f"DELETE FROM blobs WHERE blob IN ({marks})", batch)
        return len(dead)

    def counts(self) -> dict[str, int]:
        return {
            table: self.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("blobs", "chunks", "vectors", "pages")
        }

    def corpus_counts(self, corpus: str) -> tuple[int, int]:
        """(pages, chunks) in the corpus's indexed state."""
        pages = self.page_count(corpus)
        chunks = self.conn.execute(
            "SELECT count(*) FROM pages p JOIN chunks c ON c.blob = p.blob WHERE p.corpus = ?", (corpus,)
        ).fetchone()[0]
        return pages, chunks

    def vector_bytes(self, model: str | None) -> tuple[int, int | None, int | None]:
        """(count, shortest, longest) of the vectors stored for `model`, lengths in bytes."""
        row = self.conn.execute(
            "SELECT count(*), min(length(vec)), max(length(vec)) FROM vectors WHERE model = ?", (model,)
        ).fetchone()
        return row[0], row[1], row[2]

    def strip_for_export(self, model: str | None) -> None:
        """Reduce a snapshot to what another machine can use: the chunks of indexed states (drafts parsed from
        a worktree are in no state) and `model`'s vectors of those chunks; then one self-contained file."""
        self.gc()
        self.conn.execute("DELETE FROM vectors WHERE model IS NOT ? OR hash NOT IN (SELECT hash FROM chunks)", (model,))
        self.conn.execute("PRAGMA journal_mode=DELETE")  # no -wal beside it
        self.conn.execute("VACUUM")

    def chunk_count(self, blobs: Iterable[str]) -> int:
        return sum(r[0] for r in self._select_in("SELECT count(*) FROM chunks WHERE blob IN ({marks})", blobs))

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.index_dir.glob(DB_NAME + "*") if p.is_file())


_CHUNK_COLS = "id, blob, ord, breadcrumb, level, start_line, end_line, text"


def vector_matrix(raw: bytes, count: int) -> np.ndarray:
    """`Store.vectors` bytes as a writable float32 matrix, one row per chunk.

    An owned copy: matmul over a read-only view of the bytes measured ~20x slower.
    """
    import numpy as np

    if not count:
        return np.zeros((0, 0), np.float32)
    return np.frombuffer(raw, dtype="<f4").reshape(count, -1).astype(np.float32)


def _chunk_row(r: tuple[Any, ...], index_dir: Path) -> ChunkRow:
    return ChunkRow(r[0], r[1], r[2], string_list(r[3], index_dir), r[4], r[5], r[6], r[7])


def string_list(raw: object, index_dir: Path) -> tuple[str, ...]:
    """A stored breadcrumb or tag list, which this gitwiki writes as a JSON list of strings. Anything else
    (a poisoned artifact, a damaged row) marks the index damaged (`DAMAGED_MARK`) and raises IndexDamaged,
    instead of a traceback in every query that reads the row."""
    value = _decoded_list(raw)
    if value is None:
        reason = f"a stored breadcrumb or tag list is not a JSON list of strings: {str(raw)[:60]!r}"
        _mark(index_dir, reason)
        raise IndexDamaged(index_dir, reason)
    return value


def _mark(index_dir: Path, reason: str) -> None:
    try:
        atomic_write(index_dir / DAMAGED_MARK, reason + "\n", sync=False)
    except OSError:
        pass  # a read-only index dir: the damaged-index error still names `gitwiki index --rebuild`


def _decoded_list(raw: object) -> tuple[str, ...] | None:
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and _encodable(v) for v in value):
        return None
    return tuple(value)


def _marked(index_dir: Path) -> str | None:
    """Why a query marked the index damaged (`DAMAGED_MARK`), or None."""
    try:
        reason = (index_dir / DAMAGED_MARK).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return reason or "a row could not be read"


def _encodable(text: str) -> bool:
    """JSON can spell a lone surrogate (\\ud800), which no page text holds and no output can print."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# What each column holds as this gitwiki writes it (SQLite's typeof): a value of another type came from
# elsewhere (a doctored artifact) or from damage.
_COLUMN_TYPES = {
    "meta": {"key": "text", "value": "text"},
    "blobs": {"blob": "text", "title": "text", "tags": "text", "description": "text null"},
    "chunks": {
        "id": "integer",
        "blob": "text",
        "ord": "integer",
        "breadcrumb": "text",
        "level": "integer",
        "start_line": "integer",
        "end_line": "integer",
        "text": "text",
        "hash": "text",
    },
    "vectors": {"model": "text", "hash": "text", "vec": "blob"},
    "pages": {"corpus": "text", "path": "text", "blob": "text"},
    "states": {
        "corpus": "text",
        "commit_id": "text",
        "tree": "text",
        "model": "text null",
        "indexed_at": "real integer",
    },
}


def row_problem(conn: sqlite3.Connection, index_dir: Path) -> str | None:
    """The first stored value this gitwiki could not read back (None: every row reads): a column of the
    wrong type, a breadcrumb or tag list that is not a JSON list of strings, a schema version that is not
    a number. `quick_check` passes all of these: they are well-formed SQLite, just not our rows."""
    for table, columns in _COLUMN_TYPES.items():
        wrong = " OR ".join(
            f"typeof({column}) NOT IN ({', '.join(repr(t) for t in kinds.split())})"
            for column, kinds in columns.items()
        )
        row = conn.execute(f"SELECT {', '.join(columns)} FROM {table} WHERE {wrong} LIMIT 1").fetchone()
        if row is not None:
            found = {c: type(v).__name__ for c, v in zip(columns, row, strict=True)}
            return f"a row of table {table} holds values of the wrong type ({found})"
    try:
        rows = conn.execute("SELECT DISTINCT breadcrumb FROM chunks UNION SELECT DISTINCT tags FROM blobs").fetchall()
        bad = next((raw for (raw,) in rows if _decoded_list(raw) is None), None)
        if bad is not None:
            return f"a stored breadcrumb or tag list is not a JSON list of strings: {str(bad)[:60]!r}"
        for key, value in conn.execute("SELECT key, value FROM meta WHERE key = 'schema_version'"):
            if not value.isdigit():
                return f"meta {key} is {value[:20]!r}, not a number"
    except IndexDamaged as e:  # text that is not UTF-8, on a connection of the live index
        return e.reason
    except UnicodeDecodeError as e:
        return f"text that is not UTF-8 ({e.reason})"
    except sqlite3.OperationalError as e:  # what a plain connection (an archive being checked) raises for it
        if "decode" not in str(e):
            raise
        return str(e)
    return None


def _batches(items: list[T], size: int = 500) -> Iterator[list[T]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _marks(batch: Sized) -> str:
    return ",".join("?" * len(batch))


class IndexDamaged(StoreError):
    """SQLite found the database file damaged (or not a database at all)."""

    def __init__(self, index_dir: Path, reason: str):
        self.reason = reason
        super().__init__(
            f"the index at {index_dir} is damaged ({reason}); run `gitwiki index --rebuild` to move it aside "
            "and rebuild it from git"
        )


class IndexBusy(StoreError):
    """Another process holds the writer lock."""


class IndexLocked(StoreError):
    """SQLite waited out its timeout on another connection's lock."""


# SQLite's primary result codes (the low byte of an extended code) that mean the file is damaged.
_DAMAGED = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
_FULL = 13  # SQLITE_FULL
_IOERR = 10  # SQLITE_IOERR: what a write refused with EFBIG (`ulimit -f`) or EIO comes back as
_READONLY = 8  # SQLITE_READONLY
_BUSY = 5  # SQLITE_BUSY


def _translated(e: sqlite3.DatabaseError | UnicodeDecodeError, index_dir: Path) -> Exception:
    """SQLite's error as the one the user can act on; other errors (misuse: a bug) stay as they are."""
    if isinstance(e, UnicodeDecodeError):  # damaged text: in a row, or in the schema SQLite quotes in its error
        return IndexDamaged(index_dir, f"text that is not UTF-8 ({e.reason})")
    code = (getattr(e, "sqlite_errorcode", 0) or 0) & 0xFF
    if code in _DAMAGED or (type(e) is sqlite3.DatabaseError and "malformed" in str(e)):
        return IndexDamaged(index_dir, str(e))
    # The schema version matched (or the file is new), so missing tables, or a table that is there but not
    # listed, mean a damaged schema.
    if "Could not decode to UTF-8" in str(e) or str(e).startswith(("no such table", "no such column")):
        return IndexDamaged(index_dir, str(e))
    if str(e).startswith("table") and str(e).endswith("already exists"):
        return IndexDamaged(index_dir, f"damaged schema ({e})")
    if code == _FULL:
        return StoreError(f"the disk holding the index at {index_dir} is full ({e}); free space and retry")
    if code == _IOERR:
        return StoreError(f"the index at {index_dir} could not be written ({e}): {_io_cause(index_dir)}")
    if code == _BUSY:
        return IndexLocked(
            f"the index at {index_dir} stayed locked by another process ({e}); retry when it has finished"
        )
    if code == _READONLY:
        return StoreError(
            f"the index at {index_dir} is read-only ({e}); it answers while it is current, "
            "but bringing it up to date needs write access (or set [storage] index_dir)"
        )
    return e


def write_failure(e: OSError | sqlite3.Error, where: Path) -> Exception:
    """A file write that failed for lack of room (a full disk, a file size limit), from Python or from
    SQLite, as the error the user can act on; other errors stay as they are."""
    if isinstance(e, OSError):
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            return StoreError(f"could not write {where} ({e.strerror}): its disk is full; free space and retry")
        if e.errno == errno.EFBIG:
            return StoreError(f"could not write {where} ({e.strerror}): {_io_cause(where.parent)}")
        return e
    if (getattr(e, "sqlite_errorcode", 0) or 0) & 0xFF in (_FULL, _IOERR):
        return StoreError(f"could not write {where} ({e}): {_io_cause(where.parent)}")
    return e


def _io_cause(index_dir: Path) -> str:
    """What most likely refused SQLite's write, and the next step. SQLite reports EFBIG and EIO alike, so look
    at the two causes a user can fix; the transaction was rolled back, so the last committed index stays."""
    import resource
    import shutil

    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit != resource.RLIM_INFINITY:
        return f"a file size limit of {limit} bytes is set (ulimit -f); raise it and retry, the index is as before"
    try:
        free = shutil.disk_usage(index_dir).free
    except OSError:
        free = None
    if free is not None and free < 1 << 20:
        return f"only {free} bytes are free on its disk; free space and retry, the index is as before"
    return "the disk may be failing; check it (dmesg) and retry, or set [storage] index_dir elsewhere"


def _guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    """`method` of `_Cursor`, with SQLite's errors raised as the ones the user can act on."""

    def call(self: _Cursor, *args: Any) -> Any:
        try:
            return method(self, *args)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
            raise self._fail(e) from e

    return call


class _Cursor(sqlite3.Cursor):
    """Every statement and every row fetched raises a damaged file, a full disk or a read-only index as
    StoreError with the next step, on whatever read or write path it is met. (The Python-level `__next__`
    costs ~0.25 µs a row, measured over 200,000 rows: ~5 ms for a cold dense query over 20,000 chunks.)"""

    def _fail(self, e: sqlite3.DatabaseError | UnicodeDecodeError):
        conn = self.connection
        return _translated(e, conn.index_dir if isinstance(conn, _Connection) else Path("."))

    execute = _guarded(sqlite3.Cursor.execute)
    executemany = _guarded(sqlite3.Cursor.executemany)
    fetchone = _guarded(sqlite3.Cursor.fetchone)
    fetchall = _guarded(sqlite3.Cursor.fetchall)
    __next__ = _guarded(sqlite3.Cursor.__next__)


class _Connection(sqlite3.Connection):
    index_dir = Path(".")

    def execute(self, *args):
        return self.cursor(_Cursor).execute(*args)

    def executemany(self, *args):
        return self.cursor(_Cursor).executemany(*args)


def _connect(path: Path, read_only: bool = False) -> sqlite3.Connection:
    if read_only:
        # A read-only dir cannot hold WAL's -shm file, so SQLite could not even read; nobody can write
        # there either, which is what `immutable` promises.
        uri = f"file:{path}?mode=ro&immutable=1"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False, factory=_Connection)
    else:
        conn = sqlite3.connect(path, isolation_level=None, timeout=30, check_same_thread=False, factory=_Connection)
    conn.index_dir = path.parent
    if not read_only:
        try:
            _set_wal(conn)
        except StoreError as e:
            if isinstance(e, IndexDamaged):
                raise
            # a full disk or a read-only file: not damage; reads still work, writes say why
        conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def _set_wal(conn: sqlite3.Connection, patience: float = 30.0) -> None:
    """The journal-mode statement can answer SQLITE_BUSY well inside the connection's 30 s timeout (in CI
    one of two concurrent `memory store` processes failed with 'database is locked' within seconds; WAL
    recovery and the last connection's close-time checkpoint take the file without the busy handler). So
    retry it here for as long as the timeout would have waited."""
    deadline = time.monotonic() + patience
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except IndexLocked:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def integrity_problem(conn: sqlite3.Connection, full: bool = False) -> str | None:
    """SQLite's first `quick_check` complaint (None: sound); a file too damaged to check is damaged too.
    `full` also checks the FTS5 index against its table. At 5,000 pages (33 MB) quick_check took 90 ms
    and the FTS check 330 ms more, so `gitwiki index` runs the first, `status --check` and `artifact pack` both."""
    rows: list[str] = []
    try:
        rows = [r[0] for r in conn.execute("PRAGMA quick_check(5)")]
        # FTS5 keeps its index in shadow tables whose contents quick_check does not interpret.
        if full and rows == ["ok"] and conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'fts'").fetchone():
            began = not conn.in_transaction
            try:
                conn.execute("INSERT INTO fts(fts, rank) VALUES ('integrity-check', 0)")  # changes nothing
            finally:
                if began and conn.in_transaction:
                    conn.rollback()
    except IndexDamaged as e:
        return e.reason
    except StoreError:
        pass  # a read-only index cannot run the FTS check (it is a write statement); quick_check passed
    except sqlite3.DatabaseError as e:
        if (getattr(e, "sqlite_errorcode", 0) or 0) & 0xFF != _READONLY:
            return str(e)
    if rows == ["ok"]:
        return None
    found = [r for r in rows if not r.startswith("***")] or rows  # "*** in database main ***" is a header
    return found[0] + (f" (and {len(found) - 1} more)" if len(found) > 1 else "")


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except OSError:
        return None


def _schema_version(conn: sqlite3.Connection) -> int | None:
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is not None and not (isinstance(row[0], str) and row[0].isdigit()):
        raise IndexDamaged(getattr(conn, "index_dir", Path(".")), f"its schema version is {str(row[0])[:20]!r}")
    return int(row[0]) if row else None


def _tokens_version(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'tokens_version'").fetchone()
    return row[0] if row else None  # None: written before the tokenizer had a version


def _fts_head(title: str, breadcrumb: Iterable[str], tags: Iterable[str]) -> str:
    return fts_text(" ".join((title, *breadcrumb, *tags)))


def _retokenize(conn: sqlite3.Connection) -> None:
    """Rebuild the full-text rows from the chunks with this tokenizer. Cheaper than a rebuild from git, and the
    cached vectors stay: SciFact's 5,183 chunks re-tokenized in 12.5 s at load average 5; embedding them took 458 s."""
    index_dir = getattr(conn, "index_dir", Path("."))
    conn.execute("DELETE FROM fts")
    rows = conn.execute(
        "SELECT c.id, b.title, c.breadcrumb, b.tags, c.text FROM chunks c JOIN blobs b ON b.blob = c.blob"
    ).fetchall()
    conn.executemany(
        "INSERT INTO fts(rowid, head, body) VALUES (?,?,?)",
        (
            (cid, _fts_head(title, string_list(crumb, index_dir), string_list(tags, index_dir)), fts_text(text))
            for cid, title, crumb, tags, text in rows
        ),
    )
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('tokens_version', ?)", (TOKENS_VERSION,))


def _retokenize_if_writable(index_dir: Path, conn: sqlite3.Connection) -> None:
    try:
        with writer_lock(index_dir), _transaction(conn):
            if _tokens_version(conn) != TOKENS_VERSION:  # another process may have done it meanwhile
                _retokenize(conn)
    except StoreError as e:
        # A read-only or busy index still answers: its rows differ from this tokenizer's in a few words
        # (version 2: bracketed mnemonics), and the next open that can write rebuilds them.
        print(f"gitwiki: warning: full-text rows of the index at {index_dir} not re-tokenized: {e}", file=sys.stderr)


def _create(conn: sqlite3.Connection) -> None:
    for statement in SCHEMA.strip().split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
    conn.execute("INSERT INTO meta VALUES ('tokens_version', ?)", (TOKENS_VERSION,))


def expected_schema_objects() -> list[tuple[str, str, str, str | None]]:
    """`schema_objects` of a database this gitwiki creates: what an index from elsewhere must define, exactly."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        _create(conn)
        return Store(Path(), conn).schema_objects()
    finally:
        conn.close()


def snapshot(index_dir: Path, target: Path) -> None:
    """A consistent copy of the index at `target`: VACUUM INTO under the writer lock, so a live WAL
    database is never copied raw. A damaged index is refused (IndexDamaged): never ship damage to every
    job that pulls it."""
    with writer_lock(index_dir):
        conn = sqlite3.connect(index_dir / DB_NAME)
        try:
            problem = integrity_problem(conn, full=True) or row_problem(conn, index_dir)
            if problem:
                raise IndexDamaged(index_dir, problem)
            conn.execute("VACUUM INTO ?", (str(target),))
        except sqlite3.DatabaseError as e:
            raise _translated(e, index_dir) from e
        finally:
            conn.close()


def install(index_dir: Path, database: Path) -> None:
    """Make the database file `database` (on the same filesystem) the index, atomically, under the writer lock."""
    with writer_lock(index_dir):
        target = index_dir / DB_NAME
        # A leftover WAL would be replayed onto the new database: drop it with the old one.
        for suffix in ("-wal", "-shm"):
            Path(str(target) + suffix).unlink(missing_ok=True)
        os.replace(database, target)
        (index_dir / DAMAGED_MARK).unlink(missing_ok=True)  # it was about the file just replaced


def _move_aside(path: Path, why: str) -> None:
    """Rename the database (and its WAL files) to `index.sqlite.damaged*` (`.previous*` when a rebuild was
    asked for: nothing says that one is damaged), replacing an older one, and say so once: what is in it can
    be looked at; everything it held can be rebuilt from git."""
    (path.parent / DAMAGED_MARK).unlink(missing_ok=True)  # the mark is about this file
    if not path.exists():
        return
    asked = why == REBUILD_ASKED
    aside = Path(str(path) + (PREVIOUS_SUFFIX if asked else DAMAGED_SUFFIX))
    for suffix in ("", "-wal", "-shm"):
        source = Path(str(path) + suffix)
        target = Path(str(aside) + suffix)
        if source.exists():
            os.replace(source, target)
        else:
            target.unlink(missing_ok=True)
    if asked:
        print(f"gitwiki: {why}: the index at {path} is kept as {aside.name} and built again from git", file=sys.stderr)
    else:
        print(
            f"gitwiki: warning: index at {path} moved aside to {aside.name}: {why}; rebuilding it from git",
            file=sys.stderr,
        )


def _writer_died(index_dir: Path) -> bool:
    return (index_dir / HOLDER_NAME).exists()


def _check_after_crash(path: Path) -> None:
    """A writer died holding the lock (its pid file is still there): SQLite's journal makes that safe, but a
    dying disk or a half-copied file would show now, so check once before trusting the file again."""
    if path.is_file():
        conn = _connect(path)
        try:
            problem = integrity_problem(conn)
        finally:
            conn.close()
        if problem:
            raise IndexDamaged(path.parent, problem)
    (path.parent / HOLDER_NAME).unlink(missing_ok=True)


@contextmanager
def _transaction(conn: sqlite3.Connection, begin: str = "BEGIN IMMEDIATE") -> Iterator[None]:
    conn.execute(begin)
    try:
        yield
    except BaseException:
        # SQLite rolls back by itself on some errors (a full disk); an explicit ROLLBACK then fails, and its
        # error would hide the one that says what happened.
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except (sqlite3.Error, StoreError):
                pass
        raise
    conn.execute("COMMIT")


_locks: dict[str, filelock.FileLock] = {}


@contextmanager
def writer_lock(index_dir: Path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """The index's writer lock; re-entrant within a thread (one FileLock object per path), exclusive across
    threads and processes. The holder's pid is written beside it, so a writer that has to wait can say for
    whom, and a pid file left behind tells the next writer that the last one died holding the lock."""
    import filelock  # 10–15 ms to import; a query against a current index never writes

    path = str(index_dir / LOCK_NAME)
    holder = index_dir / HOLDER_NAME
    lock = _locks.setdefault(path, filelock.FileLock(path))
    try:
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            if timeout <= 0:
                raise
            print(f"gitwiki: waiting for {_holder(holder)} to finish writing the index at {index_dir}", file=sys.stderr)
            lock.acquire(timeout=timeout)
    except filelock.Timeout:
        raise IndexBusy(
            f"the index at {index_dir} is busy ({_holder(holder)} is writing it); try again when it finishes"
        ) from None
    except OSError as e:  # after Timeout, which is one
        raise StoreError(
            f"cannot write the index at {index_dir} ({e.strerror}); "
            "give gitwiki write access there or set [storage] index_dir"
        ) from None
    outermost = lock.lock_counter == 1
    if outermost and not holder.exists():
        try:
            # no fsync: the pid only names the holder in messages (an fsync here was ~8 ms of every page write)
            atomic_write(holder, f"{os.getpid()}\n", sync=False)
        except OSError:
            pass  # the pid is for messages; a read-only or full dir must not stop the writer here
    try:
        yield
    finally:
        if outermost:
            holder.unlink(missing_ok=True)
        lock.release()


def _holder(holder: Path) -> str:
    try:
        pid = holder.read_text().strip()
    except OSError:
        pid = ""
    return f"gitwiki (pid {pid})" if pid.isdigit() else "another gitwiki"
