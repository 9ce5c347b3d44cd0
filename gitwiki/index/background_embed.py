"""Embedding new page versions on a thread of a long-lived process, after the write that made them answered.

A page write (a memory store, add_markdown) embedded the page's new sections before it answered, which was the
larger part of a memory store (docs/research/memory-speed.md). In `gitwiki serve` the write still parses the page
and writes its full-text rows before it answers, so the entry is found lexically at once, and hands the page
version to this thread, which embeds the sections that have no vector yet, through a connection of its own. A
search that needs those vectors waits for the thread first (`settle`) rather than embedding the same text again.

Vectors are a content-addressed cache, one row per (model, text hash) that nothing rewrites, so the thread
writes them in a transaction of their own without the index's writer lock (SQLite's own lock orders it with
the other writers): a search that waits for it while holding that lock cannot deadlock. A crash before they
are written loses nothing: the next search or index update finds them missing and embeds them, as it does
for a page edited by hand.

The thread waits for a pause in the writes before it embeds (no write under way, and `QUIET` without a new
one; `MOST` at most), then embeds everything queued in one call: on two cores, the model running beside the next
store made a memory store at 10,000 entries cost twice the CPU of a lexical one (docs/research/memory-store-scale.md),
and stores come in runs (an agent noting what it learned at the end of a task). A search does not wait for the
pause (`settle`), but for what is queued: after a run of stores, the first search embeds the run's entries.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from gitwiki.index.indexer import ensure_vectors
from gitwiki.index.store import Store

if TYPE_CHECKING:
    from pathlib import Path

    from gitwiki.index.embed import Embedder

log = logging.getLogger("gitwiki.index.embed")

QUIET = 0.25  # seconds without a new submission before the thread embeds what is queued
MOST = 10.0  # seconds a submission waits at most for that pause (a search does not wait for it)


class BackgroundEmbedder:
    """One thread embedding submitted page versions in order, in a pause of the submissions; started on the first."""

    def __init__(self, quiet: float = QUIET, most: float = MOST) -> None:
        self._jobs: list[tuple[Path, Embedder, frozenset[str]]] = []
        self._busy = False
        self._closed = False
        self._waiting = 0  # `settle` calls waiting: no pause then
        self._writing = 0  # writes under way (`writing`): the pause lasts while one is
        self._quiet, self._most = quiet, most
        self._first = self._last = 0.0  # when the oldest queued job and the newest were submitted
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def submit(self, store: Store, embedder: Embedder, blobs: Iterable[str]) -> bool:
        """Queue the sections of page versions `blobs` (parsed into `store`) for embedding; False once closed
        (the caller embeds them itself)."""
        with self._changed:
            if self._closed:
                return False
            self._last = time.monotonic()
            if not self._jobs:
                self._first = self._last
            self._jobs.append((store.index_dir, embedder, frozenset(blobs)))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="gitwiki-embed", daemon=True)
                self._thread.start()
            self._changed.notify_all()
        return True

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """A write is under way: what is queued waits for it to end (and for the pause after it)."""
        with self._changed:
            self._writing += 1
        try:
            yield
        finally:
            with self._changed:
                self._writing -= 1
                self._last = time.monotonic()
                self._changed.notify_all()

    def settle(self) -> None:
        """Return once everything submitted so far is embedded (or given up on: see `_run`)."""
        if threading.current_thread() is self._thread:
            return
        with self._changed:
            self._waiting += 1
            self._changed.notify_all()
            try:
                self._changed.wait_for(lambda: not self._jobs and not self._busy)
            finally:
                self._waiting -= 1

    def close(self) -> None:
        """Embed what is queued, then stop the thread (the server's exit: the vectors are written, not lost)."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _pause(self) -> None:
        """Wait (holding the condition) until the submissions pause, or someone waits for them."""
        while not self._closed and not self._waiting:
            now = time.monotonic()
            latest = self._first + self._most
            due = latest if self._writing else min(self._last + self._quiet, latest)
            if now >= due:
                return
            self._changed.wait(due - now)

    def _run(self) -> None:
        store: Store | None = None
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._jobs or self._closed)
                if not self._jobs:
                    break
                self._pause()
                jobs, self._jobs = self._jobs, []
                self._busy = True
            try:
                # One call per index and model: the texts of every queued version go to the model together.
                grouped: dict[tuple[Path, int], tuple[Embedder, set[str]]] = {}
                for index_dir, embedder, blobs in jobs:
                    grouped.setdefault((index_dir, id(embedder)), (embedder, set()))[1].update(blobs)
                for (index_dir, _), (embedder, versions) in grouped.items():
                    store = self._embed(store, index_dir, embedder, versions)
            finally:
                with self._changed:
                    self._busy = False
                    self._changed.notify_all()
        if store is not None:
            store.close()

    def _embed(self, store: Store | None, index_dir: Path, embedder: Embedder, blobs: set[str]) -> Store | None:
        """Embed what `blobs` lack; returns the connection to keep (None after a failure to connect)."""
        try:
            # Connect again when the database file was swapped (`gitwiki pull`) or is another one.
            if store is not None and (store.index_dir != index_dir or store.replaced()):
                store.close()
                store = None
            store = store or Store.another(index_dir)
            ensure_vectors(store, embedder, blobs)
        except Exception as e:
            # Any failure: the thread must outlive it, or `settle` would wait forever. Nothing is lost: the
            # next search finds the vectors missing and embeds them itself.
            log.warning("embedding %d page version(s) in the background failed: %s", len(blobs), e)
        return store
