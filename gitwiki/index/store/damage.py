"""Damage the index can hold and SQLite does not report: `integrity_problem` (SQLite's own checks),
`row_problem` (rows that are well-formed SQLite but not ours), and the mark a query leaves when it meets such
a row, so that the next open rebuilds the index from git."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from gitwiki.errors import StoreError
from gitwiki.fs import atomic_write
from gitwiki.index.store.connection import IndexDamaged

# Written when a query meets a row it cannot read (quick_check cannot see those): the next open, or the
# next `gitwiki index` in a long-lived process, moves the database aside and rebuilds it from git.
DAMAGED_MARK = "index.sqlite.unreadable"


def string_list(raw: object, index_dir: Path) -> tuple[str, ...]:
    """A stored breadcrumb or tag list, which this gitwiki writes as a JSON list of strings. Anything else
    (a poisoned artifact, a damaged row) marks the index damaged (`DAMAGED_MARK`) and raises IndexDamaged,
    instead of a traceback in every query that reads the row."""
    value = _decoded_list(raw)
    if value is None:
        reason = f"a stored breadcrumb or tag list is not a JSON list of strings: {str(raw)[:60]!r}"
        mark_damaged(index_dir, reason)
        raise IndexDamaged(index_dir, reason)
    return value


def mark_damaged(index_dir: Path, reason: str) -> None:
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


def marked(index_dir: Path) -> str | None:
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


def integrity_problem(conn: sqlite3.Connection, full: bool = False) -> str | None:
    """SQLite's first `quick_check` complaint (None: sound); a file too damaged to check is damaged too.
    `full` also checks the FTS5 index against its table, about four times quick_check's cost (90 ms at 5,000
    pages), so `gitwiki index` runs the first, `status --check` and `artifact pack` both."""
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
        if (getattr(e, "sqlite_errorcode", 0) or 0) & 0xFF != sqlite3.SQLITE_READONLY:
            return str(e)
    if rows == ["ok"]:
        return None
    found = [r for r in rows if not r.startswith("***")] or rows  # "*** in database main ***" is a header
    return found[0] + (f" (and {len(found) - 1} more)" if len(found) > 1 else "")
