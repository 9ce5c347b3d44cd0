"""Page versions in the index: a blob's title, tags and description, and its chunks, keyed by the git blob id
(so renames and reverts cost nothing); written with their full-text rows, dropped when no corpus state holds
them. A version replacing one that no state holds takes over the rows of its unchanged chunks (`replace_blob`)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gitwiki.index.store.damage import string_list
from gitwiki.index.store.database import Database, batches, question_marks
from gitwiki.index.store.fulltext import fts_head, lead_description
from gitwiki.index.tokens import fts_text

if TYPE_CHECKING:
    from gitwiki.markdown.chunker import Chunk, ParsedPage


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


@functools.lru_cache(maxsize=65536)  # the same headings come back with every version of a page
def _crumb_json(breadcrumb: tuple[str, ...]) -> str:
    return json.dumps(breadcrumb)


def _chunk_hash(page: ParsedPage, chunk: Chunk) -> str:
    if len(chunk.text) > _HASHES_TEXT_MAX:
        return text_hash(embed_text(chunk.breadcrumb, chunk.text, page.title))
    return _remembered_hash(chunk.breadcrumb, chunk.text, page.title)


# A chunk's hash is remembered: a memory store rewrites a topic page whose ~1,200 chunks all come back unchanged
# (hashing them again was ~2 ms of each store). Short texts only, so that the memo stays small.
_HASHES_TEXT_MAX = 4096


@functools.lru_cache(maxsize=32768)
def _remembered_hash(breadcrumb: tuple[str, ...], text: str, title: str) -> str:
    return text_hash(embed_text(breadcrumb, text, title))


def text_hash(text: str) -> str:
    import hashlib  # loading OpenSSL costs an agent hook ~2.5 ms, and the hooks only read (docs/agent-hooks-types.md)

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Pages(Database):
    def known_blobs(self, blobs: Iterable[str]) -> set[str]:
        return {r[0] for r in self._select_in("SELECT blob FROM blobs WHERE blob IN ({marks})", blobs)}

    def add_blob(self, blob: str, page: ParsedPage) -> None:
        """Insert one page version's chunks (call inside `write()`)."""
        self._put_blob(blob, page)
        for chunk in page.chunks:
            self._insert_chunk(blob, page, chunk, _crumb_json(chunk.breadcrumb), _chunk_hash(page, chunk))

    def replace_blob(self, old: str, blob: str, page: ParsedPage) -> int:
        """Insert `blob`'s chunks as `add_blob` does and drop `old`, a version it replaces, as `drop` does; a chunk
        of `old` that `blob` holds unchanged (text, breadcrumb, level, hash and full-text head: every indexed value)
        keeps its row, full-text row and id, and only its blob, place and lines move. A store into a topic page
        rewrites it whole: re-inserting every chunk cost ~1,200 full-text deletes and inserts at 10,000 entries.
        When a corpus state holds `old`, it keeps its rows and `blob` is inserted whole. Returns the rows kept
        (call inside `write()`)."""
        known = self.known_blobs([old, blob])
        if blob not in known and old in known and not self._held([old]):
            kept = self.blob_info([old])[old] == BlobInfo(page.title, tuple(page.tags), page.description)
        else:
            kept = False
        if not kept:
            if blob not in known:
                self.add_blob(blob, page)
            if old != blob:
                self.drop([old])
            return 0
        lead = page.description is not None  # the head of the first chunk carries it (`lead_description`)
        free: dict[tuple[str, str, int, bool, str], list[int]] = {}
        rows = self.conn.execute(  # fetched at once: a row fetched by iteration costs a Python call (1,200 here)
            "SELECT id, breadcrumb, level, ord, text, hash FROM chunks WHERE blob = ? ORDER BY ord DESC", (old,)
        ).fetchall()
        for cid, crumb, level, ord_, text, h in rows:  # last first: each key's list pops in page order
            free.setdefault((text, crumb, level, lead and ord_ == 0, h), []).append(cid)
        self._put_blob(blob, page)
        moved: list[tuple[str, int, int, int, int]] = []
        added: dict[str, str] = {}  # hash → text to embed, of the chunks `old` did not hold
        for chunk in page.chunks:
            crumb, h = _crumb_json(chunk.breadcrumb), _chunk_hash(page, chunk)
            ids = free.get((chunk.text, crumb, chunk.level, lead and chunk.ord == 0, h))
            if ids:
                moved.append((blob, chunk.ord, chunk.start_line, chunk.end_line, ids.pop()))
            else:
                self._insert_chunk(blob, page, chunk, crumb, h)
                added[h] = embed_text(chunk.breadcrumb, chunk.text, page.title)
        self.conn.executemany("UPDATE chunks SET blob = ?, ord = ?, start_line = ?, end_line = ? WHERE id = ?", moved)
        # Its vectors are those of `old` and of `added`: once `old` has all of its own, `Vectors.missing_vectors`
        # looks at `added` alone. (Before `old` is dropped, and forgotten with it.)
        self.embedded.record_added(blob, old, added)
        self._delete([old])  # what is left of it
        return len(moved)

    def _put_blob(self, blob: str, page: ParsedPage) -> None:
        self.embedded.forget([blob])  # what was known of its rows no longer holds
        self.conn.execute(
            "INSERT OR REPLACE INTO blobs VALUES (?,?,?,?)", (blob, page.title, json.dumps(page.tags), page.description)
        )

    def _insert_chunk(self, blob: str, page: ParsedPage, chunk: Chunk, crumb: str, h: str) -> None:
        cur = self.conn.execute(
            "INSERT INTO chunks(blob, ord, breadcrumb, level, start_line, end_line, text, hash) VALUES "
            "(?,?,?,?,?,?,?,?)",
            (blob, chunk.ord, crumb, chunk.level, chunk.start_line, chunk.end_line, chunk.text, h),
        )
        self.conn.execute(
            "INSERT INTO fts(rowid, head, body) VALUES (?,?,?)",
            (
                cur.lastrowid,
                fts_head(page.title, chunk.breadcrumb, page.tags, lead_description(chunk.ord, page.description)),
                fts_text(chunk.text),
            ),
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

    def chunk_lines(self, ids: Iterable[int]) -> dict[int, int]:
        """chunk id → its first line, for the chunks `ids`: where a chunk is, without its text."""
        return dict(self._select_in("SELECT id, start_line FROM chunks WHERE id IN ({marks})", ids))

    def chunk_blobs(self, ids: Iterable[int]) -> dict[int, str]:
        """chunk id → the page version (blob) it belongs to, for the chunks `ids` the table holds."""
        return dict(self._select_in("SELECT id, blob FROM chunks WHERE id IN ({marks})", ids))

    def chunks_by_id(self, ids: Iterable[int]) -> dict[int, ChunkRow]:
        return {
            r[0]: _chunk_row(r, self.index_dir)
            for r in self._select_in(f"SELECT {_CHUNK_COLS} FROM chunks WHERE id IN ({{marks}})", ids)
        }

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
        return self._delete(dead)

    def drop(self, blobs: Iterable[str]) -> int:
        """Drop the chunks of `blobs` unless a corpus state references them: a page version that a write
        replaced in the worktree. Returns blobs dropped."""
        dead = list(set(blobs) - self._held(blobs))
        return self._delete(dead)

    def _held(self, blobs: Iterable[str]) -> set[str]:
        """Those of `blobs` that a corpus state references."""
        return {r[0] for r in self._select_in("SELECT blob FROM pages WHERE blob IN ({marks})", blobs)}

    def _delete(self, dead: list[str]) -> int:
        """Delete the rows of the blobs `dead` (blob, chunks and their full-text rows), in batches. Returns how many."""
        self.embedded.forget(dead)
        for batch in batches(dead):
            marks = question_marks(batch)
            self.conn.execute(f"DELETE FROM fts WHERE rowid IN (SELECT id FROM chunks WHERE blob IN ({marks}))", batch)
            self.conn.execute(f"DELETE FROM chunks WHERE blob IN ({marks})", batch)
            self.conn.execute(f"DELETE FROM blobs WHERE blob IN ({marks})", batch)
        return len(dead)

    def chunk_count(self, blobs: Iterable[str]) -> int:
        return sum(r[0] for r in self._select_in("SELECT count(*) FROM chunks WHERE blob IN ({marks})", blobs))


_CHUNK_COLS = "id, blob, ord, breadcrumb, level, start_line, end_line, text"


def _chunk_row(r: tuple[Any, ...], index_dir: Path) -> ChunkRow:
    return ChunkRow(r[0], r[1], r[2], string_list(r[3], index_dir), r[4], r[5], r[6], r[7])
