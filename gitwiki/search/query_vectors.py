"""Query vectors kept: embedding the query is half of a warm hybrid search, and the same query comes again.

MiniLM takes 4–6 ms to embed a query here, half of a warm hybrid `ground` over the 1,000 tldr pages
(docs/research/sessions.md). A long-lived process (the owner of a checkout, serving every session) keeps the
vectors of the last `QUERIES` queries per model: a retry, a hook's query asked again by the agent, two sessions
asking alike. A kept vector is the embedder's own answer for that text, the same array.

Embedding on a worker thread while the view is built and BM25 runs (onnxruntime and SQLite release the GIL) was
slower here, not faster: 11.6–11.9 ms p50 against 10.7–11.0 at load 3 on 2 cores, where no core is free for it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from gitwiki.index.embed import Embedder

QUERIES = 64  # 1.5 KB each with MiniLM


class QueryVectors:
    def __init__(self, size: int = QUERIES) -> None:
        self._size = size
        self._lock = threading.Lock()
        # (model, query) → (the embedder that embedded it, the vector)
        self._vectors: OrderedDict[tuple[str, str], tuple[Embedder, np.ndarray]] = OrderedDict()

    def vector(self, embedder: Embedder, query: str) -> np.ndarray:
        """`embedder.embed_query(query)`, kept for the next time."""
        vector = self.kept(embedder, query)
        if vector is None:
            vector = self.keep(embedder, query, embedder.embed_query(query))
        return vector

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
