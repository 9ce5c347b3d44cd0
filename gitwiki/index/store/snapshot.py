"""The index as a file for another machine (artifacts): a consistent, checked copy, stripped to what it can
use, and installed in place of the live one."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from gitwiki.index.store.connection import IndexDamaged, translated
from gitwiki.index.store.damage import DAMAGED_MARK, integrity_problem, row_problem
from gitwiki.index.store.database import DB_NAME, VECTOR_KEYS, add_vector_keys
from gitwiki.index.store.lock import writer_lock
from gitwiki.index.store.pages import Pages


class Snapshots(Pages):
    def strip_for_export(self, model: str | None) -> None:
        """Reduce a snapshot to what another machine can use: the chunks of indexed states (drafts parsed from
        a worktree are in no state) and `model`'s vectors of those chunks; then one self-contained file."""
        self.gc()
        self.conn.execute("DELETE FROM vectors WHERE model IS NOT ? OR hash NOT IN (SELECT hash FROM chunks)", (model,))
        # Shipped without the vectors' keys index: gitwiki versions before it refuse an index that has it, and an
        # install gets it back from its first open that can write (`database.add_vector_keys`).
        self.conn.execute(f"DROP INDEX IF EXISTS {VECTOR_KEYS}")
        self.conn.execute("PRAGMA journal_mode=DELETE")  # no -wal beside it
        self.conn.execute("VACUUM")


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
            raise translated(e, index_dir) from e
        finally:
            conn.close()


def install(index_dir: Path, database: Path) -> None:
    """Make the database file `database` (on the same filesystem) the index, atomically, under the writer lock."""
    with writer_lock(index_dir):
        conn = sqlite3.connect(database, isolation_level=None)
        # Packed without it (`strip_for_export`): given back before the file becomes the index, not by a later open.
        try:
            add_vector_keys(index_dir, conn)
        finally:
            conn.close()
        target = index_dir / DB_NAME
        # A leftover WAL would be replayed onto the new database: drop it with the old one.
        for suffix in ("-wal", "-shm"):
            Path(str(target) + suffix).unlink(missing_ok=True)
        os.replace(database, target)
        (index_dir / DAMAGED_MARK).unlink(missing_ok=True)  # it was about the file just replaced
