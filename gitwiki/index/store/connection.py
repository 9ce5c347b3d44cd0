"""The index's SQLite connection: every statement and every row fetched raises SQLite's errors as the ones the
user can act on (damage, a full disk, a lock held too long, a read-only index), and its transactions."""

from __future__ import annotations

import errno
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gitwiki.errors import StoreError


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


def translated(e: sqlite3.DatabaseError | UnicodeDecodeError, index_dir: Path) -> Exception:
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
    costs ~0.25 µs a row: ~5 ms for a cold dense query over 20,000 chunks.)"""

    def _fail(self, e: sqlite3.DatabaseError | UnicodeDecodeError) -> Exception:
        conn = self.connection
        return translated(e, conn.index_dir if isinstance(conn, IndexConnection) else Path("."))

    execute = _guarded(sqlite3.Cursor.execute)
    executemany = _guarded(sqlite3.Cursor.executemany)
    fetchone = _guarded(sqlite3.Cursor.fetchone)
    fetchall = _guarded(sqlite3.Cursor.fetchall)
    __next__ = _guarded(sqlite3.Cursor.__next__)


class IndexConnection(sqlite3.Connection):
    index_dir = Path(".")

    def execute(self, *args: Any) -> sqlite3.Cursor:
        return self.cursor(_Cursor).execute(*args)

    def executemany(self, *args: Any) -> sqlite3.Cursor:
        return self.cursor(_Cursor).executemany(*args)


def connect(path: Path, read_only: bool = False) -> sqlite3.Connection:
    try:
        if read_only:
            # A read-only dir cannot hold WAL's -shm file, so SQLite could not even read; nobody can write
            # there either, which is what `immutable` promises.
            uri = f"file:{path}?mode=ro&immutable=1"
            conn = sqlite3.connect(
                uri, uri=True, isolation_level=None, check_same_thread=False, factory=IndexConnection
            )
        else:
            conn = sqlite3.connect(
                path, isolation_level=None, timeout=30, check_same_thread=False, factory=IndexConnection
            )
    except sqlite3.Error as e:  # e.g. a directory in its place, or a folder without permission
        raise StoreError(
            f"cannot open the index at {path} ({e}): remove it (the index is built again from git) or run "
            "`gitwiki index --rebuild`, which moves it aside"
        ) from None
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


@contextmanager
def transaction(conn: sqlite3.Connection, begin: str = "BEGIN IMMEDIATE") -> Iterator[None]:
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
