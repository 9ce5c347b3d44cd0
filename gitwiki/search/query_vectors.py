"""Query vectors kept, and embedded ahead: embedding the query is half of a warm hybrid search.

MiniLM takes 4–6 ms to embed a query here, half of a warm hybrid `ground` over the 1,000 tldr pages
(docs/research/sessions.md). A long-lived process (the owner of a checkout, serving every session) keeps the
vectors of the last `QUERIES` queries per model: a retry, a hook's query asked again by the agent, two sessions
asking alike. A kept vector is the embedder's own answer for that text, the same array.

A query asked for the first time is embedded on a worker thread from the moment a search has it (`ahead`), while
the search builds its view and ranks by BM25 (onnxruntime and SQLite let go of the GIL): the search then waits for
the longer of the two, not their sum. On 2 cores, the 30 tldr questions asked once each in-process, alternating
with the embedding in line: p50 9.3–10.7 against 11.7–12.0 ms quiet, 16.8–20.9 against 18.3–25.4 ms beside two and
three busy loops (docs/research/sessions-first-ask.md). Memory's search does the same (`memory.query_vector`), on the
same thread.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # concurrent.futures when a query is first embedded ahead: 4.6 ms a lexical CLI call saves
    from concurrent.futures import Future, ThreadPoolExecutor

    import numpy as np

    from gitwiki.index.embed import Embedder

QUERIES = 64  # 1.5 KB each with MiniLM
# Vectors on their way that no search has asked for yet (a search that failed before its dense ranking): the
# oldest are let go, and finish on the worker unseen.
PENDING = 8

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def worker() -> ThreadPoolExecutor:
    """The one thread that embeds queries ahead, for page and memory searches alike."""
    global _pool
    with _lock:
        if _pool is None:
            from concurrent.futures import ThreadPoolExecutor

            _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gitwiki-query-vector")
        return _pool


class QueryVectors:
    def __init__(self, size: int = QUERIES) -> None:
        self._size = size
        self._lock = threading.Lock()
        # (model, query) → (the embedder that embedded it, the vector)
        self._vectors: OrderedDict[tuple[str, str], tuple[Embedder, np.ndarray]] = OrderedDict()
        # (model, query) → (the embedder embedding it, its vector to come): started by `ahead`
        self._pending: OrderedDict[tuple[str, str], tuple[Embedder, Future[np.ndarray]]] = OrderedDict()

    def vector(self, embedder: Embedder, query: str) -> np.ndarray:
        """`embedder.embed_query(query)`, kept for the next time: the one `ahead` started, when it did."""
        vector = self.kept(embedder, query)
        if vector is None:
            with self._lock:
                pending = self._pending.pop((embedder.model_id, query), None)
            if pending is not None and pending[0] is embedder:
                vector = self.keep(embedder, query, pending[1].result())  # raises what the model raised
            else:
                vector = self.keep(embedder, query, embedder.embed_query(query))
        return vector

    def ahead(self, embedder: Embedder, query: str) -> None:
        """Start embedding `query` on the worker thread, unless its vector is kept or on its way: `vector` waits for
        it then."""
        key = (embedder.model_id, query)
        with self._lock:
            got, pending = self._vectors.get(key), self._pending.get(key)
            if (got is not None and got[0] is embedder) or (pending is not None and pending[0] is embedder):
                return
            self._pending[key] = (embedder, worker().submit(embedder.embed_query, query))
            while len(self._pending) > PENDING:
                self._pending.popitem(last=False)
        time.sleep(0)  # let go of the GIL: the worker starts now, not when the search next waits on I/O

    def settle(self) -> None:
        """Wait for the vectors on their way, whatever their outcome: before the model embeds page text on this
        thread, so that it never runs on two at once."""
        with self._lock:
            futures = [future for _, future in self._pending.values()]
        if futures:
            from concurrent.futures import wait

            wait(futures)

    def kept(self, embedder: Embedder, query: str) -> np.ndarray | None:
        """The vector `embedder` gave `query` lately, if it is still kept."""
        key = (embedder.model_id, query)
        with self._lock:
            got = self._vectors.get(key)
            if got is not None and got[0] is embedder:  # another instance of the model (reloaded): its own
                self._vectors.move_to_end(key)
                return got[1]
        return None

    def keep(self, embedder: Embedder, query: str, vector: np.ndarray) -> np.ndarray:
        """Keep `vector`, `embedder`'s for `query` (embedded here or on another thread), and return it."""
        vector.flags.writeable = False  # shared by every search of the query
        with self._lock:
            self._vectors[(embedder.model_id, query)] = (embedder, vector)
            self._vectors.move_to_end((embedder.model_id, query))
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)
        return vector
