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
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from gitwiki.index.indexer import ensure_vectors
from gitwiki.index.store import Store

if TYPE_CHECKING:
    from pathlib import Path

    from gitwiki.index.embed import Embedder

log = logging.getLogger("gitwiki.index.embed")


class BackgroundEmbedder:
    """One thread embedding submitted page versions in order; started on the first submission."""

    def __init__(self) -> None:
        self._jobs: list[tuple[Path, Embedder, frozenset[str]]] = []
        self._busy = False
        self._closed = False
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def submit(self, store: Store, embedder: Embedder, blobs: Iterable[str]) -> bool:
        """Queue the sections of page versions `blobs` (parsed into `store`) for embedding; False once closed
        (the caller embeds them itself)."""
        with self._changed:
            if self._closed:
                return False
            self._jobs.append((store.index_dir, embedder, frozenset(blobs)))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="gitwiki-embed", daemon=True)
                self._thread.start()
            self._changed.notify_all()
        return True

    def settle(self) -> None:
        """Return once everything submitted so far is embedded (or given up on: see `_run`)."""
        if threading.current_thread() is self._thread:
            return
        with self._changed:
            self._changed.wait_for(lambda: not self._jobs and not self._busy)

    def close(self) -> None:
        """Embed what is queued, then stop the thread (the server's exit: the vectors are written, not lost)."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        store: Store | None = None
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._jobs or self._closed)
                if not self._jobs:
                    break
                index_dir, embedder, blobs = self._jobs.pop(0)
                self._busy = True
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
            finally:
                with self._changed:
                    self._busy = False
                    self._changed.notify_all()
        if store is not None:
            store.close()
