"""The index's writer lock: whole index runs, not only single transactions, are serialized across threads and
processes, and a pid file beside the lock names the holder."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from gitwiki.errors import StoreError
from gitwiki.fs import atomic_write
from gitwiki.index.store.connection import IndexBusy

if TYPE_CHECKING:
    import filelock

LOCK_NAME = "lock"
HOLDER_NAME = "lock.pid"  # who holds the writer lock; left behind only by a writer that died holding it
LOCK_TIMEOUT = 120.0

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
