"""A memory search's query embedded in a worker thread from the moment its words are known, while the search
reads its pages and ranks them by BM25 (onnxruntime and SQLite let go of the GIL): a hybrid search then waits for
the longer of the two, not their sum. The vectors are kept with the page search's (`search.query_vectors`): an
agent asks the same words again.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import TYPE_CHECKING

from gitwiki.search.helper_thread import helper_thread

if TYPE_CHECKING:
    import numpy as np

    from gitwiki.index.embed import Embedder
    from gitwiki.search.query_vectors import QueryVectors


class QueryVector:
    """An embedder whose query vector for `text` is on its way (`embed_query` waits for it); documents are
    embedded once it has arrived, so that one model is never run from two threads at once."""

    def __init__(self, embedder: Embedder, text: str, kept: QueryVectors) -> None:
        self.embedder = embedder
        self.model_id = embedder.model_id
        self.dim = embedder.dim
        self.text = text
        self._kept = kept
        self._vector = kept.kept(embedder, text)
        self._future: Future[np.ndarray] | None = None
        if self._vector is None:
            self._future = helper_thread("gitwiki-query-vector").submit(embedder.embed_query, text)
            time.sleep(0)  # let go of the GIL: the worker starts now, not when the search next waits on I/O

    def wait(self) -> np.ndarray:
        if self._vector is None:
            assert self._future is not None  # set whenever no vector was remembered
            self._vector = self._kept.keep(self.embedder, self.text, self._future.result())
        return self._vector

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if self._future is not None:
            self._future.exception()  # finished, whatever its outcome: `wait` reports a failure
        return self.embedder.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.wait() if text == self.text else self.embedder.embed_query(text)
