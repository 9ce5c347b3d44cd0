"""Opening the index: created when missing, checked after a writer died, moved aside and rebuilt from git when
damaged or of another schema, read-only where this process cannot write."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import sys
from pathlib import Path
from typing import Self

from gitwiki.errors import StoreError
from gitwiki.index.store.connection import IndexBusy, IndexConnection, IndexDamaged, connect, transaction
from gitwiki.index.store.damage import DAMAGED_MARK, integrity_problem, mark_damaged, marked, row_problem
from gitwiki.index.store.database import (
    DB_NAME,
    SCHEMA_VERSION,
    Database,
    add_vector_keys,
    create,
    has_vector_keys,
    schema_version_of,
    tokens_version,
)
from gitwiki.index.store.fulltext import retokenize_if_writable
from gitwiki.index.store.lock import HOLDER_NAME, writer_lock
from gitwiki.index.tokens import TOKENS_VERSION

DAMAGED_SUFFIX = ".damaged"  # a damaged database is moved aside to index.sqlite.damaged, not deleted
PREVIOUS_SUFFIX = ".previous"  # a sound one rebuilt on request is kept as index.sqlite.previous
REBUILD_ASKED = "rebuilding it as asked (--rebuild)"  # the `rebuild` reason of `gitwiki index --rebuild`


class Opening(Database):
    @classmethod
    def open(cls, index_dir: Path, rebuild: str | None = None) -> Self:
        """Open (creating if needed) the index. A damaged one, or one of another schema, is moved aside and
        rebuilt from git, as is any when `rebuild` says why; one left by a writer that died is checked
        first. An index dir this process cannot write is opened read-only: it answers while it is current."""
        path = index_dir / DB_NAME
        if path.is_file() and not os.access(index_dir, os.W_OK):
            return cls(index_dir, connect(path, read_only=True))
        try:
            index_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create index dir {index_dir} ({e.strerror}); set [storage] index_dir") from None
        mark = marked(index_dir)
        rebuild = rebuild or (mark and f"it is damaged ({mark})")
        if not rebuild and (problem := not_a_database(path)):  # not ours to move aside unasked: it may hold anything
            remove = "rm -r" if path.is_dir() else "rm"
            raise IndexDamaged(
                index_dir, f"{DB_NAME} there {problem}, not a database file; `{remove} {path}` removes it"
            )
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
    def open_existing(cls, index_dir: Path) -> Self | None:
        """The index as it is, for a reader that must neither create, repair nor wait on it (the agent hooks):
        None when there is no usable one."""
        path = index_dir / DB_NAME
        if not path.is_file():
            return None
        # Read-only: a read-write connection that is the last to close checkpoints the WAL, a write a hook
        # must not do (nor wait for).
        conn = sqlite3.connect(
            f"{path.as_uri()}?mode=ro", uri=True, isolation_level=None, timeout=1.0, factory=IndexConnection
        )
        conn.index_dir = index_dir
        try:
            if schema_version_of(conn) == SCHEMA_VERSION:
                return cls(index_dir, conn)
        except (sqlite3.DatabaseError, StoreError):
            pass
        conn.close()
        return None

    @classmethod
    def _open_checked(cls, index_dir: Path, path: Path) -> Self:
        conn = connect(path)
        version = schema_version_of(conn)
        if version == SCHEMA_VERSION:
            if tokens_version(conn) != TOKENS_VERSION:
                retokenize_if_writable(index_dir, conn)
            if not has_vector_keys(conn):
                add_vector_keys(index_dir, conn)
            return cls(index_dir, conn)
        with writer_lock(index_dir):
            version = schema_version_of(conn)  # another process may have created it meanwhile
            if version not in (None, SCHEMA_VERSION):
                conn.close()
                _move_aside(path, f"its schema {version} is not {SCHEMA_VERSION}")
                conn = connect(path)
                version = None
            if version is None:
                with transaction(conn):
                    create(conn)
        return cls(index_dir, conn)

    def check(self, full: bool = False) -> str | None:
        """None when the database is sound, else SQLite's first complaint (`integrity_problem`). It reads
        the whole file, so it runs where damage matters, never per query. `full` also checks the FTS index
        and that every row reads back (`row_problem`); rows that do not are marked (`DAMAGED_MARK`), so the
        next open rebuilds them even where the next run would not check rows (`repo sync`)."""
        problem = marked(self.index_dir) or integrity_problem(self.conn, full)
        if problem is None and full and (problem := row_problem(self.conn, self.index_dir)):
            mark_damaged(self.index_dir, problem)
        return problem

    @classmethod
    def another(cls, index_dir: Path) -> Self:
        """One more connection to the index a `Store.open` opened, for another thread of the process: a
        connection's transactions are its own, so two threads sharing one would interleave theirs."""
        return cls(index_dir, connect(index_dir / DB_NAME))

    @classmethod
    def open_file(cls, path: Path, readonly: bool = False) -> Self:
        """A database file outside the live index (a snapshot being packed, an archive being checked) as it
        is: no schema check, no rebuild, no WAL."""
        if readonly:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            conn.execute("PRAGMA trusted_schema=OFF")  # SQLite's advice for files from elsewhere
            return cls(path.parent, conn)
        return cls(path.parent, sqlite3.connect(path, isolation_level=None))


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
        if target.is_dir() and not target.is_symlink():  # an older one set aside was a directory too
            shutil.rmtree(target)
        if source.exists():
            if source.is_dir() != target.is_dir():  # rename cannot put a directory over a file or the other way
                target.unlink(missing_ok=True)
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


def not_a_database(path: Path) -> str | None:
    """What is wrong with `path` as the index's database file, if it exists: a directory, a FIFO or a device,
    where SQLite fails to open (a traceback) or blocks on a read for ever."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"cannot be looked at ({e.strerror})"
    if stat.S_ISREG(mode):
        return None
    return "is a directory" if stat.S_ISDIR(mode) else "is not a regular file"


def _writer_died(index_dir: Path) -> bool:
    return (index_dir / HOLDER_NAME).exists()


def _check_after_crash(path: Path) -> None:
    """A writer died holding the lock (its pid file is still there): SQLite's journal makes that safe, but a
    dying disk or a half-copied file would show now, so check once before trusting the file again."""
    if path.is_file():
        conn = connect(path)
        try:
            problem = integrity_problem(conn)
        finally:
            conn.close()
        if problem:
            raise IndexDamaged(path.parent, problem)
    (path.parent / HOLDER_NAME).unlink(missing_ok=True)
