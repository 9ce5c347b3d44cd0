"""Knowing that nothing changed on disk without asking git: a long-lived process watches the corpus folders.

At 20,000 pages the worktree status costs 40–50 ms per query (git has to stat every file); a watch
answers "nothing happened" for a few microseconds. `Watcher.sync()` returns a generation number that
grows whenever something under a watched folder changed; a caller keeps what it derived from the disk
(the worktree overlay) with the generation it saw, and redoes the status only when the number moved.

The race: an editor's write returns before the watcher thread has read the event, so a query right after
it could still see the old generation. A settle time would cost every query, and a stat of the folders'
mtimes misses in-place writes (they change only the file). `sync()` uses a fence instead: it writes a
file of its own in a watched folder under the index dir and waits until the watcher reports that write.
One inotify instance queues events in the order they happen, so when the fence arrives every event of
every write that returned before the query has arrived too. Cost: one small file write and the watcher's
hand-off, a fraction of a millisecond.

Where watching cannot start (no inotify, watch limit reached, folder missing, read-only index dir) or
breaks later, `start` / `sync` return None and the caller falls back to a status per query; a fence that
is late (a stalled machine) costs that one query a status.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from watchfiles._rust_notify import RustNotify

log = logging.getLogger("gitwiki.pages.watch")

FENCE_DIR = "watch"
# A fence normally arrives within a millisecond; past this the machine is stalled, and a status is the safe
# answer for this query.
FENCE_TIMEOUT = 1.0
_ids = itertools.count()


class Watch(Protocol):
    """What a query asks of a watch of the corpus folders (`start`)."""

    def sync(self) -> int | None:
        """The current generation, counting every change that happened before this call; None: ask git."""

    def close(self) -> None: ...


def start(folders: list[Path], index_dir: Path, ignored: tuple[Path, ...] = ()) -> Watch | None:
    """A watch of `folders` (None where none can start: the caller asks git for each query): on Linux an inotify
    instance of this process's own (`pages.inotify`: no fence), elsewhere watchfiles' with a fence per query."""
    if sys.platform.startswith("linux"):
        from gitwiki.pages.inotify import Inotify

        own = Inotify.start(folders, (*ignored, index_dir))
        if own is not None:
            return own
    return Watcher.start(folders, index_dir, ignored)


class Watcher:
    def __init__(self, notify: RustNotify, fence_dir: Path, ignored: tuple[str, ...]) -> None:
        self._notify = notify
        self._fence_dir = fence_dir
        self._fence_folder = os.path.join(fence_dir, "")  # a fence's folder as the watcher reports its paths
        self._fence: str | None = None  # the last fence written
        self._ignored = ignored  # path prefixes whose events say nothing about pages (.git, the fence dir)
        self._generation = 0
        self._lock = threading.Lock()
        self._broken = False

    @classmethod
    def start(cls, folders: list[Path], index_dir: Path, ignored: tuple[Path, ...] = ()) -> Watcher | None:
        """Watch `folders` recursively; None when that is not possible here (the caller then asks git)."""
        fence_dir = (index_dir / FENCE_DIR).resolve()
        try:
            watcher = _rust_notify()
            fence_dir.mkdir(parents=True, exist_ok=True)
            paths = [str(f.resolve()) for f in folders]
            notify = watcher([*paths, str(fence_dir)], False, False, 50, True, True)
        except (ImportError, OSError, RuntimeError) as e:  # RuntimeError: watchfiles' internal errors
            log.info("not watching %s (%s); each query asks git for the worktree status", folders, e)
            return None
        prefixes = tuple(f"{p.resolve()}{os.sep}" for p in (*ignored, fence_dir))
        return cls(notify, fence_dir, prefixes)

    def sync(self) -> int | None:
        """The current generation, counting every change that happened before this call. None when that is not
        known now (the fence is late: a stalled machine) or any more (the watch broke): ask git this time."""
        with self._lock:
            if self._broken:
                return None
            # A new name per fence: a late one must not pass for the next.
            fence = f"{self._fence_folder}{os.getpid()}-{next(_ids)}"
            try:
                # The last fence removed first: its event then comes before this one's, not after it, where it
                # would be all the next fence's first look found (a 1 ms step more).
                if self._fence is not None:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(self._fence)
                # os calls, not pathlib's: a third of the fence's cost was its Path and file objects
                os.close(os.open(fence, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666))
                self._fence = fence
                return self._await(fence)
            except (OSError, RuntimeError) as e:
                log.warning("file watch failed (%s); each query asks git for the worktree status from now on", e)
                self._broken = True
                self._close()
                return None

    def _await(self, fence: str) -> int | None:
        pace = _Pace(time.monotonic() + FENCE_TIMEOUT)
        while True:
            # No timeout: watchfiles' `watch` clears what it has collected when it gives up, and an event that came
            # between its last look and that clear was lost: a fence that never came (one query in 40, in each of
            # four runs of six test workers on two cores), or a page's change missed. Without one it returns only
            # what has arrived, taken under its lock; the pace (`_Pace.is_set`, asked before each look) spaces its
            # looks and stops it at the deadline.
            got = self._notify.watch(0, 0, 0, pace)
            if not isinstance(got, set):  # "stop" (the deadline) or "signal": what it had collected is gone,
                self._generation += 1  # so the next query does not trust what it may have missed
                log.info("file watch fence took over %.1f s (%s); asking git this time", FENCE_TIMEOUT, got)
                return None
            if any(not path.startswith(self._ignored) for _, path in got):
                self._generation += 1
            if any(path == fence for _, path in got):
                return self._generation
            pace.again()  # events that came before the fence: it is on its way

    def close(self) -> None:
        with self._lock:
            self._broken = True
            self._close()

    def _close(self) -> None:
        self._notify.close()
        if self._fence is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._fence)


class _Pace:
    """The `stop_event` of a `watch` call, asked before each of its looks: looks at once for the first millisecond
    (the fence has usually arrived, or does within it), then 1 ms apart, so the watcher's own thread gets the CPU on
    a busy machine (looking without a pause there made fences take half a second); set at the deadline."""

    SPIN = 0.001

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.since = time.monotonic()  # of the looks at once

    def again(self) -> None:
        """Look at once again (events that came before the fence: it is on its way)."""
        self.since = time.monotonic()

    def is_set(self) -> bool:
        now = time.monotonic()
        if now - self.since > self.SPIN:
            time.sleep(0.001)
        return now > self.deadline


def _rust_notify() -> type[RustNotify]:
    """watchfiles' Rust watcher, without running the package's `__init__` (`gitwiki.native`); the plain import
    where the package is not laid out as expected."""
    from gitwiki.native import extension

    module = extension("watchfiles._rust_notify")
    if module is None:
        from watchfiles._rust_notify import RustNotify as plain

        return plain
    found: type[RustNotify] = module.RustNotify
    return found
