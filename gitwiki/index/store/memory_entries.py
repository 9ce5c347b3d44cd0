"""The parsed memory topic pages: each entry's fields and search terms, per page version (git blob id), in a
SQLite file of its own beside the index (`memory-entries.sqlite`).

A fresh process (a CLI `memory search`) would otherwise parse every topic page and stem every entry again:
1.2 s at 996 entries, seconds at 10,000. Keyed by (blob, topic name), so an unchanged page costs one indexed
read and a changed one is parsed once, by whichever process meets it first. A cache only: it holds nothing
the pages do not, lives in its own file (the index's schema, which artifacts check object by object, is
untouched), is never published, and one that is damaged, of another version or not writable is set aside
or read without writing; the pages are read as before then.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

FILE_NAME = "memory-entries.sqlite"
VERSIONS_KEPT = 3  # versions of one topic kept: a worktree and the server reading another one do not thrash
BUSY_MS = 200  # a cache write that waits longer for another writer is skipped
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pages(blob TEXT NOT NULL, topic TEXT NOT NULL, name TEXT NOT NULL,
    preamble TEXT NOT NULL, head TEXT NOT NULL, entries INTEGER NOT NULL, seen INTEGER NOT NULL,
    PRIMARY KEY(blob, topic)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS pages_topic ON pages(topic, seen);
CREATE TABLE IF NOT EXISTS entries(blob TEXT NOT NULL, topic TEXT NOT NULL, ord INTEGER NOT NULL,
    created TEXT NOT NULL, modified TEXT NOT NULL, text TEXT NOT NULL, tags TEXT NOT NULL, source TEXT NOT NULL,
    confidence REAL NOT NULL, links TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
    after TEXT NOT NULL, shown TEXT NOT NULL, terms TEXT NOT NULL, PRIMARY KEY(blob, topic, ord)) WITHOUT ROWID;
"""
ENTRY_COLUMNS = (
    "created",
    "modified",
    "text",
    "tags",
    "source",
    "confidence",
    "links",
    "start_line",
    "end_line",
    "after",
    "shown",
    "terms",
)


class CachedPage(NamedTuple):
    name: str  # the page's own title (its H1), as parsed
    preamble: str
    head: str
    entries: list[tuple[Any, ...]]  # one row per entry, ENTRY_COLUMNS in order


class MemoryEntries:
    """The cache of one index dir. `open` gives None where it cannot be opened at all."""

    def __init__(self, conn: sqlite3.Connection, version: str) -> None:
        self.conn = conn
        self.version = version
        self.writable = True

    @classmethod
    def open(cls, index_dir: Path, version: str) -> MemoryEntries | None:
        """The cache in `index_dir` for rows made by `version` (the parser's and the tokenizer's): rows of
        another version are dropped. None when the dir or the file cannot be used."""
        path = index_dir / FILE_NAME
        for attempt in range(2):
            try:
                if not index_dir.is_dir():
                    index_dir.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(path, timeout=BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
            except (sqlite3.DatabaseError, OSError):
                return None
            cache = cls(conn, version)
            try:
                cache._prepare()
                return cache
            except sqlite3.DatabaseError as e:
                conn.close()
                if attempt or not _damaged(e):
                    return _read_only(path, version)
                _set_aside(path)
            except OSError:
                return None
        return None

    def _prepare(self) -> None:
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")  # a cache: a lost last write is parsed again
        found = self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone()
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone() if found else None
        if row is not None and row[0] == self.version:
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            for table in ("meta", "pages", "entries"):
                self.conn.execute(f"DROP TABLE IF EXISTS {table}")
            for statement in SCHEMA.strip().split(";"):
                if statement.strip():
                    self.conn.execute(statement)
            self.conn.execute("INSERT INTO meta VALUES ('version', ?)", (self.version,))
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.conn.close()

    def pages(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], CachedPage]:
        """The cached pages among (blob, topic) `keys`, with their entries."""
        if not keys:
            return {}
        wanted = set(keys)
        out: dict[tuple[str, str], CachedPage] = {}
        try:
            blobs = sorted({b for b, _ in keys})
            heads = [
                r
                for batch in _batches(blobs)
                for r in self.conn.execute(
                    f"SELECT blob, topic, name, preamble, head, entries FROM pages WHERE blob IN ({_marks(batch)})",
                    batch,
                )
            ]
            rows: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
            for batch in _batches(blobs):
                q = (
                    f"SELECT blob, topic, {', '.join(ENTRY_COLUMNS)} FROM entries WHERE blob IN ({_marks(batch)}) "
                    "ORDER BY blob, topic, ord"
                )
                for r in self.conn.execute(q, batch).fetchall():
                    rows.setdefault((r[0], r[1]), []).append(r[2:])
        except sqlite3.DatabaseError:
            return {}
        for blob, topic, name, preamble, head, count in heads:
            entries = rows.get((blob, topic), [])
            if (blob, topic) in wanted and len(entries) == count:  # a page half-written by a crash is parsed again
                out[blob, topic] = CachedPage(name, preamble, head, entries)
        return out

    def known(self, keys: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
        """The (blob, topic) pages among `keys` the cache holds."""
        wanted = set(keys)
        blobs = sorted({b for b, _ in wanted})
        try:
            found = {
                (b, t)
                for batch in _batches(blobs)
                for b, t in self.conn.execute(f"SELECT blob, topic FROM pages WHERE blob IN ({_marks(batch)})", batch)
            }
        except sqlite3.DatabaseError:
            return set()
        return found & wanted

    def lines(self, blob: str, topic: str) -> list[tuple[int, int]]:
        """(first line, last line) of each entry of a cached page, in page order."""
        q = "SELECT start_line, end_line FROM entries WHERE blob = ? AND topic = ? ORDER BY ord"
        return self.conn.execute(q, (blob, topic)).fetchall()

    def matching(
        self, pages: Sequence[tuple[str, str]], terms: Collection[str] | None, starts: dict[tuple[str, str], list[int]]
    ) -> dict[tuple[str, str], list[tuple[int, tuple[Any, ...]]]]:
        """Per cached (blob, topic) page, (position, row) of its entries holding any of `terms` (every entry when
        None) or starting at one of the lines `starts` names for the page, in page order: a search's candidates
        without reading the other entries."""
        out: dict[tuple[str, str], list[tuple[int, tuple[Any, ...]]]] = {}
        wanted = set(pages)
        columns = f"SELECT blob, topic, ord, {', '.join(ENTRY_COLUMNS)} FROM entries"
        for batch in _batches(sorted({b for b, _ in wanted}), 200):
            params: list[Any] = list(batch)
            if terms is None:
                test = ""
            else:
                tests = ["instr(terms, ?) > 0"] * len(terms)
                params += [f" {t} " for t in terms]
                for (blob, topic), lines in starts.items():
                    if blob in batch and lines:
                        tests.append(f"(blob = ? AND topic = ? AND start_line IN ({_marks(lines)}))")
                        params += [blob, topic, *lines]
                if not tests:
                    continue
                test = f" AND ({' OR '.join(tests)})"
            q = f"{columns} WHERE blob IN ({_marks(batch)}){test} ORDER BY blob, topic, ord"
            for r in self.conn.execute(q, params).fetchall():
                if (r[0], r[1]) in wanted:
                    out.setdefault((r[0], r[1]), []).append((r[2], r[3:]))
        return out

    def put(self, blob: str, topic: str, page: CachedPage, seen: int, same: tuple[str, int] | None = None) -> bool:
        """Keep a page version's rows; older versions of the topic beyond VERSIONS_KEPT are dropped. Skipped
        (the page is parsed again next time) when another process holds the file longer than BUSY_MS.

        `same` (a version of the topic, n): the page's first n entries are that version's first n, whose rows
        are copied; `page.entries` holds the rows from the n-th on. False (nothing kept) when the cache does
        not hold those n rows: then the caller puts the page whole."""
        if not self.writable:
            return True
        first = 0 if same is None else same[1]
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                self.conn.execute("DELETE FROM entries WHERE blob = ? AND topic = ?", (blob, topic))
                self.conn.execute(
                    "INSERT OR REPLACE INTO pages VALUES (?,?,?,?,?,?,?)",
                    (blob, topic, page.name, page.preamble, page.head, first + len(page.entries), seen),
                )
                if same is not None and first:
                    # A store appends an entry to a page of 1,200: their rows are copied within SQLite.
                    copied = self.conn.execute(
                        f"INSERT INTO entries SELECT ?, topic, ord, {', '.join(ENTRY_COLUMNS)} FROM entries "
                        "WHERE blob = ? AND topic = ? AND ord < ?",
                        (blob, same[0], topic, first),
                    ).rowcount
                    if copied != first:
                        self.conn.execute("ROLLBACK")
                        return False
                self.conn.executemany(
                    f"INSERT INTO entries VALUES (?,?,?,{_marks(ENTRY_COLUMNS)})",
                    [(blob, topic, first + i, *row) for i, row in enumerate(page.entries)],
                )
                old = self.conn.execute(
                    "SELECT blob FROM pages WHERE topic = ? AND blob != ? ORDER BY seen DESC LIMIT -1 OFFSET ?",
                    (topic, blob, VERSIONS_KEPT - 1),
                ).fetchall()
                for (gone,) in old:
                    self.conn.execute("DELETE FROM pages WHERE blob = ? AND topic = ?", (gone, topic))
                    self.conn.execute("DELETE FROM entries WHERE blob = ? AND topic = ?", (gone, topic))
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError:
            pass  # busy, full or read-only: a cache write is not worth an error
        return True


def _read_only(path: Path, version: str) -> MemoryEntries | None:
    """The cache opened for reading where it cannot be written (a read-only index dir), if it is of `version`."""
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
        row = conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
    except sqlite3.DatabaseError:
        return None
    if row is None or row[0] != version:
        conn.close()
        return None
    cache = MemoryEntries(conn, version)
    cache.writable = False
    return cache


def _damaged(e: sqlite3.DatabaseError) -> bool:
    code = (getattr(e, "sqlite_errorcode", 0) or 0) & 0xFF
    return code in (11, 26) or "malformed" in str(e) or "not a database" in str(e)


def _set_aside(path: Path) -> None:
    """A damaged cache is removed with its WAL files: everything in it is parsed again from the pages."""
    for suffix in ("", "-wal", "-shm"):
        try:
            Path(f"{path}{suffix}").unlink()
        except OSError:
            pass


def _batches(items: list[str], size: int = 500) -> Iterable[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _marks(items: Sequence[object]) -> str:
    return ",".join("?" * len(items))
