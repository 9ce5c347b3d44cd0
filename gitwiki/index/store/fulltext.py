"""The lexical side of the index: an FTS5 table over pre-tokenized chunk text (BM25), rowid = chunk id."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gitwiki.errors import StoreError
from gitwiki.index.statistics import TermStats, frequencies
from gitwiki.index.store.connection import IndexDamaged, transaction
from gitwiki.index.store.damage import string_list
from gitwiki.index.store.database import Database, tokens_version
from gitwiki.index.store.lock import writer_lock
from gitwiki.index.tokens import TOKENS_VERSION, fts_text

# BM25 column weights for (head, body): a word in a heading or title says more than one in the text.
FTS_WEIGHTS = (2.0, 1.0)


class FullText(Database):
    def lexical(self, match: str, limit: int) -> list[tuple[int, str, float]]:
        """(chunk id, blob, BM25 score, higher is better) for the best `limit` matches in the whole store."""
        q = (
            f"SELECT m.id, c.blob, m.s FROM (SELECT rowid AS id, -bm25(fts, {FTS_WEIGHTS[0]}, {FTS_WEIGHTS[1]}) AS s "
            "FROM fts WHERE fts MATCH ? ORDER BY s DESC LIMIT ?) m JOIN chunks c ON c.id = m.id ORDER BY m.s DESC"
        )
        return self._matching(q, match, limit)

    def lexical_ranked(self, match: str, limit: int) -> list[tuple[int, float]]:
        """`lexical` without each chunk's blob, in the same order: (chunk id, BM25 score), best first. The join with
        `chunks` was a third of the statement (0.2 ms a warm query over 1,000 pages)."""
        q = (
            f"SELECT rowid, -bm25(fts, {FTS_WEIGHTS[0]}, {FTS_WEIGHTS[1]}) AS s FROM fts WHERE fts MATCH ? "
            "ORDER BY s DESC LIMIT ?"
        )
        return self._matching(q, match, limit)

    def _matching(self, q: str, match: str, limit: int) -> list[Any]:
        try:
            # fetchall, not iteration: _Cursor.__next__ is a Python call per row (400 rows per agent hook query)
            return self.conn.execute(q, (match, limit)).fetchall()
        except sqlite3.OperationalError as e:
            raise StoreError(f"full-text query failed ({e}); rephrase the query") from None

    def term_chunks(self, terms: Iterable[str]) -> dict[str, int]:
        """How many chunks hold each term (every indexed page version counts), from FTS5's vocabulary."""
        self.conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_vocab USING fts5vocab(main, fts, 'row')")
        return dict(self._select_in("SELECT term, doc FROM temp.fts_vocab WHERE term IN ({marks})", terms))

    def term_stats(self, terms: Iterable[str]) -> TermStats:
        """BM25's statistics of this index for `terms`: its full-text rows and their tokens, as FTS5's own `bm25()`
        reads them (the table's averages record), and the rows holding each term (`term_chunks`)."""
        row = self.conn.execute("SELECT block FROM fts_data WHERE id = 1").fetchone()
        try:
            counts = _varints(row[0]) if row and row[0] else [0]
        except ValueError as e:
            raise IndexDamaged(self.index_dir, str(e)) from None
        return TermStats(counts[0], sum(counts[1:]), self.term_chunks(terms))

    def term_counts(self, ids: Iterable[int], terms: Iterable[str]) -> dict[int, tuple[dict[str, float], int]]:
        """Each full-text row's weighted frequency of each of `terms` (FTS_WEIGHTS per column, as `lexical` scores)
        and its tokens in all columns: what `statistics.bm25` scores a row with."""
        wanted = list(terms)
        return {rowid: frequencies(columns, wanted, FTS_WEIGHTS) for rowid, columns in self.indexed_text(ids).items()}

    def indexed_text(self, ids: Iterable[int]) -> dict[int, tuple[str, ...]]:
        """Each full-text row's columns (head, body) as indexed: pre-tokenized text."""
        rows = self._select_in("SELECT rowid, * FROM fts WHERE rowid IN ({marks})", ids)
        return {rowid: tuple(text or "" for text in columns) for rowid, *columns in rows}

    def blob_rows(self, blobs: Iterable[str]) -> list[tuple[int, str, str, str, int]]:
        """(chunk id, blob, head, body, tokens) of every full-text row of `blobs`: the columns as indexed and
        the row's length as FTS5's `bm25()` reads it (its docsize record), to score them outside SQLite
        (`search.lexicon`)."""
        rows = self._select_in(
            "SELECT c.id, c.blob, f.head, f.body, d.sz FROM chunks c JOIN fts f ON f.rowid = c.id "
            "JOIN fts_docsize d ON d.id = c.id WHERE c.blob IN ({marks})",
            blobs,
        )
        try:
            return [(cid, blob, head or "", body or "", sum(_varints(sz or b""))) for cid, blob, head, body, sz in rows]
        except ValueError as e:
            raise IndexDamaged(self.index_dir, str(e)) from None

    def blob_spans(self, blobs: Iterable[str]) -> dict[str, tuple[int, int, int]]:
        """blob → (lowest chunk id, highest, how many) of its chunks: whether rows read before are still these
        (a page version dropped and indexed again has new chunk ids)."""
        rows = self._select_in(
            "SELECT blob, min(id), max(id), count(*) FROM chunks WHERE blob IN ({marks}) GROUP BY blob", blobs
        )
        return {blob: (low, high, n) for blob, low, high, n in rows}

    def chunk_total(self) -> int:
        return self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]

    def indexed_terms(self, ids: Iterable[int], head: bool = True) -> dict[int, set[str]]:
        """The terms the full-text index holds for each chunk (title, headings, tags unless not `head`, and
        text), as tokenized."""
        columns = "head, body" if head else "'', body"
        rows = self._select_in(f"SELECT rowid, {columns} FROM fts WHERE rowid IN ({{marks}})", ids)
        return {rowid: {*heading.split(), *body.split()} for rowid, heading, body in rows}


def _varints(data: bytes) -> list[int]:
    """SQLite's varints (big-endian, 7 bits a byte, the ninth byte whole): FTS5's averages record is the row count,
    then each column's tokens."""
    out, i = [], 0
    while i < len(data):
        value = 0
        for k in range(9):
            if i + k >= len(data):
                raise ValueError("the full-text averages record is cut short")
            byte = data[i + k]
            if k == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
        i += k + 1
    return out


def fts_head(title: str, breadcrumb: Iterable[str], tags: Iterable[str], description: str | None = None) -> str:
    """The head column: title, headings and tags, and on a page's first chunk (`lead_description`) its front-matter
    description, which says what the page is for in the words a question uses (docs/research/signals.md)."""
    return fts_text(" ".join((title, *breadcrumb, *tags, description or "")))


def lead_description(ord_: int, description: str | None) -> str | None:
    """The description a chunk's head carries: the page's, on its first chunk only (on every chunk it lifted the
    pages with many chunks: wiki-dev lost a question from the top 5)."""
    return description if ord_ == 0 else None


def _retokenize(conn: sqlite3.Connection) -> None:
    """Rebuild the full-text rows from the chunks with this tokenizer. Cheaper than a rebuild from git, and the
    cached vectors stay: re-tokenizing SciFact took 3 % of the time embedding it did (docs/research/tokenization.md)."""
    index_dir = getattr(conn, "index_dir", Path("."))
    conn.execute("DELETE FROM fts")
    rows = conn.execute(
        "SELECT c.id, b.title, c.breadcrumb, b.tags, c.text, c.ord, b.description FROM chunks c "
        "JOIN blobs b ON b.blob = c.blob"
    ).fetchall()
    conn.executemany(
        "INSERT INTO fts(rowid, head, body) VALUES (?,?,?)",
        (
            (
                cid,
                fts_head(
                    title,
                    string_list(crumb, index_dir),
                    string_list(tags, index_dir),
                    lead_description(ord_, description),
                ),
                fts_text(text),
            )
            for cid, title, crumb, tags, text, ord_, description in rows
        ),
    )
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('tokens_version', ?)", (TOKENS_VERSION,))


def retokenize_if_writable(index_dir: Path, conn: sqlite3.Connection) -> None:
    try:
        with writer_lock(index_dir), transaction(conn):
            if tokens_version(conn) != TOKENS_VERSION:  # another process may have done it meanwhile
                _retokenize(conn)
    except StoreError as e:
        # A read-only or busy index still answers: its rows differ from this tokenizer's in a few words
        # (version 2: bracketed mnemonics), and the next open that can write rebuilds them.
        print(f"gitwiki: warning: full-text rows of the index at {index_dir} not re-tokenized: {e}", file=sys.stderr)
