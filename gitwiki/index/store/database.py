"""The index database: its schema, the connection it is read through (`Database`, the base every part of
`Store` builds on) and its transactions."""

from __future__ import annotations

import functools
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sized
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar

from gitwiki.errors import StoreError
from gitwiki.index.store.connection import IndexDamaged, transaction
from gitwiki.index.store.embedded import EmbeddedMemo, memo_for
from gitwiki.index.store.lock import LOCK_TIMEOUT, writer_lock
from gitwiki.index.tokens import TOKENS_VERSION

T = TypeVar("T")

SCHEMA_VERSION = 1
DB_NAME = "index.sqlite"
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
CREATE INDEX vectors_keys ON vectors(model, hash);
CREATE TABLE pages(corpus TEXT NOT NULL, path TEXT NOT NULL, blob TEXT NOT NULL,
    PRIMARY KEY(corpus, path)) WITHOUT ROWID;
CREATE TABLE states(corpus TEXT PRIMARY KEY, commit_id TEXT NOT NULL, tree TEXT NOT NULL, model TEXT,
    indexed_at REAL NOT NULL);
"""


# The vectors' keys alone. Whether a chunk has a vector is looked up here (INDEXED BY: the planner takes the table's
# primary key), not in the table, whose rows hold the vectors themselves: finding the missing vectors of memory's
# 10,000 chunks read 80 ms of the table, 5 ms of this. Indexes made before it, and artifacts (packed without it, for
# the gitwiki versions before it), lack it: a writer adds it (`add_vector_keys`); until then they are read as before.
VECTOR_KEYS = "vectors_keys"
OPTIONAL_OBJECTS = (("index", VECTOR_KEYS),)


class Database:
    """A connection to the index dir's database, and what every part of the store reads it with."""

    def __init__(self, index_dir: Path, conn: sqlite3.Connection) -> None:
        self.index_dir = index_dir
        self.conn = conn
        self._file = str(index_dir / DB_NAME)  # a str: `replaced` is asked before every query of a server
        self._inode = _inode(self._file)

    def close(self) -> None:
        self.conn.close()
        self.__dict__.pop("embedded", None)  # a closed connection no longer keeps its file's memo

    @functools.cached_property
    def embedded(self) -> EmbeddedMemo:
        """What this process knows of the file's vectors (`gitwiki.index.store.embedded`), for every thread's
        connection to it."""
        path = next((row[2] for row in self.conn.execute("PRAGMA database_list") if row[1] == "main"), "")
        if path and Path(path) == self.index_dir / DB_NAME:
            return memo_for(path, self._inode)  # the inode as it was connected to
        return memo_for(path, _inode(path) if path else None)

    @functools.cached_property
    def vector_keys(self) -> str:
        """`INDEXED BY vectors_keys` when this database has that index (an index made before it may not), else ""."""
        return f" INDEXED BY {VECTOR_KEYS}" if has_vector_keys(self.conn) else ""

    def replaced(self) -> bool:
        """Whether the database file was replaced since this store opened it (`gitwiki pull`, an artifact
        install or a rebuild in another process): this connection still reads the old, unlinked file."""
        return _inode(self._file) != self._inode

    def data_version(self) -> int:
        """Changes whenever another connection commits to this database (SQLite's own counter)."""
        return self.conn.execute("PRAGMA data_version").fetchone()[0]

    def generation(self) -> tuple[int, int]:
        """Moves with every change to the database: another connection's commit (`data_version`) or a row this
        connection changed (`total_changes`, which data_version does not count)."""
        return self.data_version(), self.conn.total_changes

    def schema_version(self) -> int | None:
        return schema_version_of(self.conn)

    def schema_objects(self) -> list[tuple[str, str, str, str | None]]:
        """Every table, index, trigger and view the database defines, as (type, name, table, sql), sorted."""
        return sorted(self.conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"), key=lambda r: r[:2])

    def lock(self, timeout: float = LOCK_TIMEOUT) -> AbstractContextManager[None]:
        return writer_lock(self.index_dir, timeout)

    def read(self) -> AbstractContextManager[None]:
        """A consistent snapshot for several reads (one read transaction)."""
        return transaction(self.conn, "BEGIN DEFERRED")

    def write(self) -> AbstractContextManager[None]:
        return transaction(self.conn, "BEGIN IMMEDIATE")

    def _select_in(
        self,
        sql: str,
        keys: Iterable[str | int],
        before: tuple[str | int, ...] = (),
        after: tuple[str | int, ...] = (),
    ) -> Iterator[tuple[Any, ...]]:
        """Rows of `sql`, whose `{marks}` is an IN list over `keys`, in batches (SQLite caps bound parameters); each
        batch fetched whole (`fetchall`: the cursor's guarded `__next__` is a Python call per row)."""
        for batch in batches(list(keys)):
            yield from self.conn.execute(sql.format(marks=question_marks(batch)), [*before, *batch, *after]).fetchall()

    def counts(self) -> dict[str, int]:
        return {
            table: self.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("blobs", "chunks", "vectors", "pages")
        }

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.index_dir.glob(DB_NAME + "*") if p.is_file())


def batches(items: list[T], size: int = 500) -> Iterator[list[T]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def question_marks(batch: Sized) -> str:
    return ",".join("?" * len(batch))


def _inode(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def schema_version_of(conn: sqlite3.Connection) -> int | None:
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is not None and not (isinstance(row[0], str) and row[0].isdigit()):
        raise IndexDamaged(getattr(conn, "index_dir", Path(".")), f"its schema version is {str(row[0])[:20]!r}")
    return int(row[0]) if row else None


def tokens_version(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'tokens_version'").fetchone()
    return row[0] if row else None  # None: written before the tokenizer had a version


def create(conn: sqlite3.Connection) -> None:
    for statement in SCHEMA.strip().split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
    conn.execute("INSERT INTO meta VALUES ('tokens_version', ?)", (TOKENS_VERSION,))


def has_vector_keys(conn: sqlite3.Connection) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (VECTOR_KEYS,))
    return found.fetchone() is not None


def add_vector_keys(index_dir: Path, conn: sqlite3.Connection) -> None:
    """Give an index made before `vectors_keys` that index, when the writer lock is free now (a busy or read-only
    index is read without it, and the next open that can write adds it)."""
    try:
        with writer_lock(index_dir, timeout=0), transaction(conn):
            conn.execute(f"CREATE INDEX IF NOT EXISTS {VECTOR_KEYS} ON vectors(model, hash)")
    except (StoreError, sqlite3.Error):
        pass


def expected_schema_objects() -> list[tuple[str, str, str, str | None]]:
    """`schema_objects` of a database this gitwiki creates: what an index from elsewhere must define, exactly."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        create(conn)
        return Database(Path(), conn).schema_objects()
    finally:
        conn.close()
