"""Paying a long-lived process's first-query costs before the first query comes."""

from __future__ import annotations

import functools
import logging
import sys
import threading
import time
from collections.abc import Callable

from gitwiki.errors import GitwikiError
from gitwiki.index.embed import keep_fast_copy, lent, own_model
from gitwiki.search.model_process import Lent
from gitwiki.wiki import Wiki

log = logging.getLogger("gitwiki.operations.warm")

# How long a new owner leaves its queries to its model's process (`model_process.load_for_owner`) after its warm-up,
# before it loads the model itself: that import and load beside a session's next calls would slow them (one GIL).
LEND_FOR = 0.2


def warm_up(wiki: Wiki, lock: threading.Lock) -> None:
    """Run on a background thread from the start of `gitwiki serve`: install the published index in a clone
    without one, open the index, load the model, read each indexed corpus's view and vector matrix, then watch
    the corpora. `lock` is the one the process's calls hold, as they share the index connection; the model
    loads outside it, so calls that need no model are answered meanwhile."""
    started = time.perf_counter()
    from gitwiki.git.gitcli import drop_orphaned_index_lock

    drop_orphaned_index_lock(wiki.root)  # an owner killed mid-commit: the next one frees the user's git at once
    with lock:
        if wiki.has_no_index_to_start_from():
            from gitwiki.operations.pull import install_published  # http and archives: a clone without an index

            install_published(wiki)
    # A lexical-mode config never loads the model here: a call asking for hybrid loads it then. A model lent by its
    # own process (a new owner's) is waited for here, not under the lock by the searches below.
    embedder = None if wiki.config.search.mode == "lexical" else wiki.embedder()
    borrowed = embedder is not None and lent(wiki.config.embeddings)
    if embedder is not None and not borrowed:
        embedder = wiki.embedder()  # one lent that did not load there: this process's own copy, or none
    loaded = time.perf_counter()
    mode = "lexical" if embedder is None else "hybrid"
    with lock:
        # a first build is the index command's job, not a warm-up's
        indexed = [c.name for c in wiki.config.corpora if wiki.store.state(c.name) is not None]
        for name in indexed:
            _warm(name, functools.partial(wiki.search, "warm up", name, mode=mode))
        # Last: until then a query asks git for the worktree status, as a first query does anyway. Started
        # first, beside the model's load and the owner's imports, it took 15-50 ms, and a new owner's first
        # session was taken and its first call answered only after it (docs/research/sessions-start.md).
        if wiki.watch():
            for name in indexed:  # each worktree overlay taken again, now kept until the watch sees a change
                _warm(name, functools.partial(wiki.view, name, vectors=embedder is not None))
    # What a first call waits for, in the server's log (--log-level INFO): docs/research/mcp-startup.md.
    log.info("warm: model %.2f s, corpora %.2f s", loaded - started, time.perf_counter() - loaded)
    if embedder is not None:
        if borrowed:
            # The model and the vectors of its process, now this one's own: searched again, with the queries that
            # process answered (each a kept vector now, and the runtime's buffers grown as real queries grow them).
            time.sleep(LEND_FOR)
            asked = list(embedder.asked) if isinstance(embedder, Lent) else []
            embedder = own_model(wiki.config.embeddings) or embedder
            for name in indexed:
                for query in asked or ["warm up"]:
                    with lock:  # released between searches: a call waits for one at most
                        _warm(name, functools.partial(wiki.search, query, name, mode=mode))
        keep_fast_copy(embedder)  # the next process's model loads from it, this one's is loaded already
    # BM25 from postings kept in memory from now on: each corpus's are read now, a call at most waiting for one
    # (~45 ms at 1,000 pages), not before the first searches, which FTS5 answers meanwhile
    wiki.resident = True
    with lock:
        wiki.searcher.keep_postings()
    for name in indexed:
        with lock:
            _warm(name, functools.partial(wiki.search, "warm up", name, mode="lexical"))
    release_freed_heap()


def _warm(corpus: str, step: Callable[[], object]) -> None:
    try:
        step()
    except GitwikiError as e:
        log.info("warm-up of corpus %s: %s", corpus, e)


def release_freed_heap() -> bool:
    """Hand the heap pages freed by the start-up back to the system (glibc's `malloc_trim`): the model's build
    and the first searches free a few MiB that would otherwise stay in the process's RSS for its whole life
    (docs/research/sessions-lean.md). False where there is no glibc."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # musl: no glibc, no malloc_trim
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim(0)
    return True
