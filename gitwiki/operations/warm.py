"""Paying a long-lived process's first-query costs before the first query comes."""

from __future__ import annotations

import logging
import sys
import threading
import time

from gitwiki.errors import GitwikiError
from gitwiki.index.embed import keep_fast_copy
from gitwiki.wiki import Wiki

log = logging.getLogger("gitwiki.operations.warm")


def warm_up(wiki: Wiki, lock: threading.Lock) -> None:
    """Run on a background thread from the start of `gitwiki serve`: install the published index in a clone
    without one, open the index, watch the corpora, read each indexed corpus's view, full-text pages and vector
    matrix, and load the model. `lock` is the one the process's calls hold, as they share the index connection.
    The reads come first, while onnxruntime builds the model on its own thread without the GIL; the model's
    load and first run (onnxruntime's arena and threads) are outside the lock, so a call that needs no model is
    answered meanwhile and a first hybrid call does only its own work (docs/research/sessions-start.md). A corpus
    with pages to embed first (a stale index, uncommitted pages) gets a hybrid search once the model is there,
    which embeds them here rather than in a first call."""
    started = time.perf_counter()
    # A lexical-mode config never loads the model here: a call asking for hybrid loads it then.
    model = None if wiki.config.search.mode == "lexical" else wiki.wanted_model()
    to_embed: list[str] = []
    with lock:
        if wiki.has_no_index_to_start_from():
            from gitwiki.operations.pull import install_published  # http and archives: a clone without an index

            install_published(wiki)
        wiki.watch()
        for c in wiki.config.corpora:
            if wiki.store.state(c.name) is None:  # a first build is the index command's job, not a warm-up's
                continue
            try:
                wiki.search("warm up", c.name, mode="lexical")
                if model is not None and not wiki.local.corpus(c).load_vectors(model):
                    to_embed.append(c.name)
            except GitwikiError as e:
                log.info("warm-up of corpus %s: %s", c.name, e)
    read = time.perf_counter()
    embedder = None if model is None else wiki.embedder()
    if embedder is not None:
        embedder.embed_query("warm up")
        for name in to_embed:
            with lock:
                try:
                    wiki.search("warm up", name, mode="hybrid")
                except GitwikiError as e:
                    log.info("warm-up of corpus %s: %s", name, e)
    # What a first call waits for, in the server's log (--log-level INFO): docs/research/mcp-startup.md.
    log.info("warm: corpora %.2f s, then the model %.2f s", read - started, time.perf_counter() - read)
    if embedder is not None:
        keep_fast_copy(embedder)  # the next process's model loads from it, this one's is loaded already
    release_freed_heap()


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
