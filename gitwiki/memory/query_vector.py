"""A memory search's query embedded in a worker thread from the moment its words are known, while the search
reads its pages and ranks them by BM25 (onnxruntime and SQLite let go of the GIL): a hybrid search then waits for
the longer of the two, not their sum. The last few queries' vectors are kept: an agent asks the same words again.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from gitwiki.index.embed import Embedder

KEPT = 64  # query vectors kept, by (model, text)
_kept: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _worker() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gitwiki-query-vector")
        return _pool


def remembered(model: str, text: str) -> np.ndarray | None:
    with _lock:
        vector = _kept.get((model, text))
        if vector is not None:
            _kept.move_to_end((model, text))
        return vector


def remember(model: str, text: str, vector: np.ndarray) -> None:
    with _lock:
        _kept[(model, text)] = vector
        _kept.move_to_end((model, text))
        while len(_kept) > KEPT:
            _kept.popitem(last=False)


class QueryVector:
    """An embedder whose query vector for `text` is on its way (`embed_query` waits for it); documents are
    embedded once it has arrived, so that one model is never run from two threads at once."""

    def __init__(self, embedder: Embedder, text: str) -> None:
        self.embedder = embedder
        self.model_id = embedder.model_id
        self.dim = embedder.dim
        self.text = text
        self._vector = remembered(self.model_id, text)
        self._future: Future[np.ndarray] | None = None
        if self._vector is None:
            self._future = _worker().submit(embedder.embed_query, text)
            time.sleep(0)  # let go of the GIL: the worker starts now, not when the search next waits on I/O

    def wait(self) -> np.ndarray:
        if self._vector is None:
            assert self._future is not None  # set whenever no vector was remembered
            self._vector = self._future.result()
            remember(self.model_id, self.text, self._vector)
        return self._vector

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if self._future is not None:
            self._future.exception()  # finished, whatever its outcome: `wait` reports a failure
        return self.embedder.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.wait() if text == self.text else self.embedder.embed_query(text)
